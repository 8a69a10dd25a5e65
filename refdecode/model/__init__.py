"""Stage 2: token ids -> next-token logits float32 (B, T, V), through a KV cache.

- ``config.py``: :class:`~refdecode.model.config.GPT2Config` (config.json);
- ``checkpoint.py``: model.safetensors in Hugging Face's layout -> float32 arrays (checked; safetensors holds data only, no code runs on load);
- ``gpt2.py``: the readable forward pass, pure functions (picoGPT-style);
- ``kv_cache.py``: :class:`~refdecode.model.kv_cache.KVCache`, keys/values per layer (grow, reorder, crop);
- ``modeling.py``: :class:`~refdecode.model.modeling.GPT2`, the object a decode loop calls;
- ``outputs.py``: hidden states / attentions recorded for ``generate``'s output;
- ``fast/``: the same arithmetic with fewer passes over memory (``GPT2.from_pretrained(..., forward="fast")``);
- ``stand_ins.py``: stand-in models (a bigram table, a call counter, the toy tree) for tests, docs and tutorials.

The model imports nothing of decoding or of the processors; ``modeling.py`` reads only
:mod:`refdecode.generation_config` (``model.generation_config``, as transformers has it).
"""
