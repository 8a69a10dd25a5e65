r"""What the engines' penalty_check.py scripts share: the prompts, the settings, the comparison and the report.

Each script runs its engine greedily, one prompt at a time, on the shipped ``models/tiny-shakespeare-llama`` (the
model every engine's cache already holds), with each setting below, and compares the engine's new tokens token for
token with ``refdecode.reference.engines.penalties.greedy_replay`` of the engine's rule on refdecode's own logits.
It also replays OpenAI's rule (refdecode's processors), so the report shows whether the check tells the rules
apart on these prompts. Runs in the engine's environment with the checkout on ``sys.path`` (NumPy only).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from refdecode import from_pretrained  # noqa: E402
from refdecode.reference.conformance.cases_engines import PROMPTS  # noqa: E402
from refdecode.reference.engines.penalties import RULES, greedy_replay  # noqa: E402

MODEL = ROOT / "models" / "tiny-shakespeare-llama"
NEW_TOKENS = 16
PROMPT_IDS = [PROMPTS[k] for k in ("ROMEO:\n", "JULIET:\nO Romeo, Romeo,", "HAMLET:\nTo be, or not to be")]
#: logit bias on two tokens: "\n" (198) up, "," (11) down
BIAS = {198: 2.0, 11: -3.0}
SETTINGS = [
    dict(frequency_penalty=0.5), dict(frequency_penalty=1.5), dict(frequency_penalty=-0.5),
    dict(presence_penalty=0.5), dict(presence_penalty=1.0),
    dict(frequency_penalty=0.5, presence_penalty=1.0),
    dict(logit_bias=BIAS), dict(frequency_penalty=0.5, presence_penalty=1.0, logit_bias=BIAS),
    # a window of 4 (mlx-lm's context sizes, llama.cpp's penalty_last_n): the prompt drops out of it
    dict(frequency_penalty=-0.5, window=4), dict(frequency_penalty=0.5, presence_penalty=1.0, window=4),
]


def cpu() -> str:
    """The CPU's model name and whether it has AVX-512."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return platform.processor()
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")), "?")
    return f"{name}, {'AVX-512' if 'avx512' in text else 'AVX2, no AVX-512' if 'avx2' in text else 'no AVX2'}"


def check(engine: str, version: str, run: Callable[[list[int], int, dict], list[int]], rule: str,
          out: Path, bias: bool = True, window: bool = True) -> int:
    """Run every (prompt, setting) on the engine and on the replays; print and write the figures; 0 if all agree.
    ``bias`` / ``window``: whether the engine has a logit bias / a window (else those settings are skipped)."""
    model = from_pretrained(MODEL)
    rows, t0 = [], time.perf_counter()
    for setting in SETTINGS:
        if ("logit_bias" in setting and not bias) or ("window" in setting and not window):
            continue
        for prompt in PROMPT_IDS:
            got = run(prompt, NEW_TOKENS, setting)
            want, margins = greedy_replay(model, prompt, NEW_TOKENS, RULES[rule], **setting)
            openai, _ = greedy_replay(model, prompt, NEW_TOKENS, RULES["openai"],
                                      **{k: v for k, v in setting.items() if k != "window"})
            rows.append(dict(prompt=prompt, setting={k: (v if k != "logit_bias" else {str(t): b for t, b in v.items()})
                                                     for k, v in setting.items()},
                             engine=got, replay=want, agree=got == want, openai_rule_agrees=got == openai,
                             min_margin=round(min(margins), 4)))
            flag = "ok " if got == want else "DIFF"
            print(f"{flag} {setting} prompt {prompt[:3]}...: engine {got}" + ("" if got == want else f" replay {want}"))
    n, agree = len(rows), sum(r["agree"] for r in rows)
    openai = sum(r["openai_rule_agrees"] for r in rows)
    print(f"{engine}: {agree} of {n} settings agree with the table's rule ({rule}); "
          f"OpenAI's rule would agree in {openai} of {n}")
    out.write_text(json.dumps(dict(
        engine=engine, version=version, rule=rule, model="models/tiny-shakespeare-llama", new_tokens=NEW_TOKENS,
        date=time.strftime("%Y-%m-%d", time.gmtime()), cpu=cpu(), seconds=round(time.perf_counter() - t0, 1),
        settings=n, agree=agree, openai_rule_agrees=openai, rows=rows), indent=1) + "\n")
    return 0 if agree == n else 1
