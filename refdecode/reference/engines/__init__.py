r"""Engine profiles: greedy, sampling and beam search as other engines do them, on refdecode's GPT-2.

Each engine's departures from transformers 4.38.2 are named switches (``EngineRules``, rules.py), set per engine in
``PROFILES``; ``decode_as(profile, model, input_ids, attention_mask, config)`` decodes under them (decode.py), so a
difference an engine shows in the conformance suite is reproduced on demand (``refdecode conformance serve --as
ENGINE``). The evidence (each engine's recorded answers, and the engine's source line for each rule) is in
``examples/engines/<engine>/`` and docs/engines.md. NumPy only; float32 scores; nothing here imports an engine.

Modules: ``rules.py`` (the switches and profiles), ``refusals.py`` (what each engine refuses: its profile answers
``unsupported`` there), ``steps.py`` (logits of real tokens, the processors' view),
``greedy.py``, ``sampling.py`` (with the case's uniforms), ``beam.py`` (4.38.2's BeamSearchScorer, switchable),
``beam_loops.py`` (5.x, CTranslate2, keras-hub, OpenVINO GenAI, TF and Flax 4.38.2, vLLM), ``decode.py`` (``decode_as`` and the output layout).
"""

from .decode import decode_as
from .refusals import REFUSALS, refusal
from .rules import PROFILES, EngineRules, rules_for, switches_of
from .steps import NextTokenLogits

__all__ = ["EngineRules", "PROFILES", "REFUSALS", "decode_as", "refusal", "rules_for", "switches_of", "NextTokenLogits"]
