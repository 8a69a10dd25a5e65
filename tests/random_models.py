"""Random GPT-2s built in memory, for tests of the forward passes and of decoding on realistic shapes."""

from __future__ import annotations

import numpy as np

from refdecode.model.checkpoint import nest
from refdecode.model.config import GPT2Config
from refdecode.model.modeling import GPT2

def random_model(n_embd: int = 128, n_head: int = 2, n_layer: int = 2, n_positions: int = 300, seed: int = 0,
                 column_major: bool = True, **config) -> GPT2:
    """A random GPT-2 built in memory (weights ~ N(0, 0.2)) running the fast forward pass, Conv1D weights
    column-major as load_params_column_major stores them."""
    cfg = GPT2Config(vocab_size=97, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                     **config)
    rng = np.random.default_rng(seed)
    E, I = n_embd, cfg.n_inner or 4 * n_embd
    shapes = {"wte.weight": (97, E), "wpe.weight": (n_positions, E), "ln_f.weight": (E,), "ln_f.bias": (E,)}
    for i in range(n_layer):
        shapes.update({f"h.{i}.ln_1.weight": (E,), f"h.{i}.ln_1.bias": (E,), f"h.{i}.ln_2.weight": (E,),
                       f"h.{i}.ln_2.bias": (E,), f"h.{i}.attn.c_attn.weight": (E, 3 * E), f"h.{i}.attn.c_attn.bias": (3 * E,),
                       f"h.{i}.attn.c_proj.weight": (E, E), f"h.{i}.attn.c_proj.bias": (E,),
                       f"h.{i}.mlp.c_fc.weight": (E, I), f"h.{i}.mlp.c_fc.bias": (I,),
                       f"h.{i}.mlp.c_proj.weight": (I, E), f"h.{i}.mlp.c_proj.bias": (E,)})
    flat = {k: (rng.standard_normal(s, dtype=np.float32) * np.float32(0.2)) + (1.0 if k.endswith("ln_1.weight")
            or k.endswith("ln_2.weight") or k == "ln_f.weight" else 0.0) for k, s in shapes.items()}
    if column_major:
        flat = {k: np.asfortranarray(v) if ".c_" in k and k.endswith("weight") else v for k, v in flat.items()}
    return GPT2(cfg, nest(flat), forward="fast")
