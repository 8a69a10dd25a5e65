"""Golden logits of transformers 4.38.2 ``GPT2LMHeadModel`` on tiny random checkpoints (oracle venv only).

Writes, for each checkpoint spec below:

* ``tests/golden/models/<name>/{config.json, model.safetensors}``: a tiny random GPT-2 (V=128, E=32,
  L=2, H=4), stored in one of the layouts found in the wild (see ``SPECS``);
* ``tests/golden/model_<name>.npz``: the logits transformers computes after loading that very directory
  with ``GPT2LMHeadModel.from_pretrained``, for

  - ``single``: one prompt of 10 tokens, no mask, default positions;
  - ``batch``: 3 left-padded prompts (0, 3 and 7 pads of 8) with their mask and the position ids that
    ``prepare_inputs_for_generation`` derives (passed to transformers explicitly);
  - ``step{0..3}``: four cached decoding steps of that batch, one token per row each, the mask growing
    by a column of ones (logits of the new token only).

  plus ``meta``: a JSON string (format_version, versions, this script, the regenerate command).

Run from the repository root::

    .venv-oracle/bin/python tools/golden/make_model_golden.py
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
FORMAT_VERSION = 1
REGENERATE = ".venv-oracle/bin/python tools/golden/make_model_golden.py"

BASE = dict(vocab_size=128, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=127, eos_token_id=127)
SPECS = {
    # save_pretrained layout: "transformer." prefix, tied lm_head omitted, float32
    "save_pretrained": dict(layout="save_pretrained", dtype=torch.float32, config={}),
    # the hub's openai-community/gpt2 layout: no prefix, no lm_head, h.N.attn.bias / masked_bias buffers
    "hub": dict(layout="hub", dtype=torch.float32, config={"layer_norm_epsilon": 1e-6}),
    # float16 file, exact gelu, layer-wise attention scaling, and an lm_head.weight that differs from wte
    # (transformers 4.38.2 then uses lm_head.weight for both the embedding and the head)
    "f16_gelu": dict(layout="save_pretrained_lm_head", dtype=torch.float16,
                     config={"activation_function": "gelu", "scale_attn_by_inverse_layer_idx": True}),
    # bfloat16 file, relu, n_inner, reorder_and_upcast_attn
    "bf16_relu": dict(layout="hub", dtype=torch.bfloat16,
                      config={"activation_function": "relu", "n_inner": 48, "reorder_and_upcast_attn": True}),
}


def randomize(model: GPT2LMHeadModel, gen: torch.Generator) -> None:
    """Overwrite every weight with random values large enough that attention is far from uniform and
    LayerNorm's epsilon, the activation and the biases all visibly change the logits."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "wte" in name or "wpe" in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=gen) / p.shape[0] ** 0.5 * 4)


def write_checkpoint(name: str, spec: dict, seed: int) -> Path:
    """Create the random model and write it in the spec's layout; return its directory."""
    out = GOLDEN / "models" / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = GPT2Config(**BASE, **spec["config"])
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    gen = torch.Generator().manual_seed(seed)
    randomize(model, gen)
    state = {k: v.detach().to(spec["dtype"]).contiguous() for k, v in model.state_dict().items()
             if k != "lm_head.weight"}  # tied to wte: save_pretrained omits it too
    if spec["layout"] == "save_pretrained_lm_head":
        state["lm_head.weight"] = (0.1 * torch.randn((config.vocab_size, config.n_embd), generator=gen)).to(
            spec["dtype"])
    if spec["layout"] == "hub":
        state = {k.removeprefix("transformer."): v for k, v in state.items()}
        for i in range(config.n_layer):
            P = config.n_positions
            state[f"h.{i}.attn.bias"] = torch.tril(torch.ones(P, P)).view(1, 1, P, P).to(spec["dtype"])
            state[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4).to(spec["dtype"])
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(out)
    (out / "generation_config.json").unlink(missing_ok=True)
    return out


def generation_positions(mask: np.ndarray) -> np.ndarray:
    """position_ids as GPT2LMHeadModel.prepare_inputs_for_generation: cumsum(mask) - 1, pads -> 1."""
    pos = np.cumsum(mask, axis=-1) - 1
    pos[mask == 0] = 1
    return pos


def record(directory: Path, seed: int) -> dict[str, np.ndarray]:
    """Load the checkpoint with transformers and record the logits of the three cases."""
    model = GPT2LMHeadModel.from_pretrained(directory).eval()
    assert model.dtype == torch.float32
    cfg = model.config
    rng = np.random.default_rng(seed)
    V, eos = cfg.vocab_size, cfg.eos_token_id
    out: dict[str, np.ndarray] = {}
    t = torch.from_numpy
    with torch.no_grad():
        # 1) single prompt, no mask, default positions
        ids = rng.integers(0, V, size=(1, 10), dtype=np.int64)
        out["single_input_ids"] = ids
        out["single_logits"] = model(t(ids)).logits.numpy()
        # 2) left-padded batch of 3 (0, 3 and 7 pads), generation-style positions passed explicitly
        T, pads = 8, [0, 3, 7]
        ids = rng.integers(0, V, size=(3, T), dtype=np.int64)
        mask = np.ones((3, T), dtype=np.int64)
        for b, n in enumerate(pads):
            ids[b, :n], mask[b, :n] = eos, 0
        pos = generation_positions(mask)
        res = model(t(ids), attention_mask=t(mask), position_ids=t(pos), use_cache=True)
        out.update(batch_input_ids=ids, batch_attention_mask=mask, batch_position_ids=pos,
                   batch_logits=res.logits.numpy())
        # 3) four cached steps: one token per row, the mask gains a column of ones
        past = res.past_key_values
        for step in range(4):
            new = rng.integers(0, V, size=(3, 1), dtype=np.int64)
            mask = np.concatenate([mask, np.ones((3, 1), dtype=np.int64)], axis=1)
            pos = generation_positions(mask)[:, -1:]
            res = model(t(new), attention_mask=t(mask), position_ids=t(pos), past_key_values=past, use_cache=True)
            past = res.past_key_values
            out.update({f"step{step}_input_ids": new, f"step{step}_attention_mask": mask,
                        f"step{step}_position_ids": pos, f"step{step}_logits": res.logits.numpy()})
    return out


def main() -> None:
    torch.set_num_threads(1)
    meta = {"format_version": FORMAT_VERSION, "transformers": transformers.__version__,
            "torch": torch.__version__, "numpy": np.__version__, "python": sys.version.split()[0],
            "script": "tools/golden/make_model_golden.py", "regenerate": REGENERATE}
    for i, (name, spec) in enumerate(SPECS.items()):
        directory = write_checkpoint(name, spec, seed=1000 + i)
        data = record(directory, seed=2000 + i)
        assert all(v.dtype in (np.float32, np.int64) for v in data.values())
        path = GOLDEN / f"model_{name}.npz"
        np.savez_compressed(path, meta=np.array(json.dumps(dict(meta, model=f"tests/golden/models/{name}"))),
                            **data)
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e3:.0f} kB) and "
              f"{directory.relative_to(ROOT)} ({(directory / 'model.safetensors').stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
