r"""Profile = engine on fresh cases: new cases drawn from a seed, each installed engine's answers against its profile.

    .venv/bin/python examples/engines/fresh_check.py --fresh 100 --seed 20261126 [--answered 100]
                                                     [--engines ctranslate2,...] [--groups ...] [--json out.json]
                                                     [--jobs 2] [--family gpt2|llama]

Draws the cases with ``refdecode conformance fresh`` (``refdecode.reference.conformance.fresh``: prompts, batches,
settings and near-ties never in the committed suite), sends each to every installed engine's adapter
(``examples/engines/<engine>/run``; an engine is installed when its ``env/`` or ``node_modules/`` exists, or named
with ``--engines``) and compares the engine's ``sequences``, token for token, with refdecode's profile of the engine
(``decode_as``; the same as ``refdecode conformance serve --as <engine>``). Prints per engine: answered, profile =
engine, and of those the cases where the engine departs from transformers 4.38.2; then every mismatch with its case
(id, note, the row and position where the two part). Exit status 1 if any answered case is a mismatch. Runs in
refdecode's venv; the adapters in theirs.

Each engine is drawn for over the options it takes (:data:`DRAWS`): the groups its API has (no beams: the
``plain_greedy`` and ``sample`` groups) and a fit that sets aside, before the expected answers are computed, an
option it has no way to take (vLLM: the shipped model, whose heads its CPU attention takes, and no n-gram ban;
Flax: one eos id; ...). The fit is said in every case's note and in the page. Without a fit the engine is asked the
common draw. With ``--answered N`` an engine that has answered fewer than N of the ``--fresh`` cases is asked
another ``--fresh`` of the same seed (stream 1, 2, ...: ``fresh_cases(..., stream=k)``) until it has, at most
``--max-streams`` in all; a draw is written once per run and shared by the engines that draw alike.

``--family llama`` draws every engine's cases on the Llama-family checkpoints instead (``refdecode conformance fresh
--family llama``: models/tiny-shakespeare-llama, models/llama-tiny, tests/golden/models/llama-gqa-tied): each engine's
own draw (its groups and fit) with ``Draw.family`` "llama", named ``<draw>-llama`` (its own folder of cases); a fit
that sets the model itself (vLLM's) is left as it is. ``--family gpt2`` moves them to the GPT-2 checkpoints. Without
``--family``, each engine's own draw: the GPT-2 checkpoints for the engines, the Llama family for the teaching peers
whose draw says so.

Where the engine reads memory it never wrote (onnxruntime-genai's first-step beam slots, FINDINGS G5) the profile
says so: no rows (``Undefined``), or rows the engine gives unless it crashes. An error or a crash there is counted
as ``failed_as_modelled``, not as a mismatch; rows the engine gives where the profile says ``Undefined`` are listed
as ``undefined_answered`` (what uninitialised memory held decided them), neither compared nor counted answered.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable

import numpy as np

from refdecode.reference.conformance.cases_decode import decode, model_for, smallest
from refdecode.reference.conformance.cases_engines import SHIPPED, SHIPPED_LLAMA
from refdecode.reference.conformance.check import Implementation, NoAnswer
from refdecode.reference.conformance.fresh import FRESH_GROUPS, NEAR_TIE, write_fresh
from refdecode.reference.conformance.kinds import to_json
from refdecode.reference.conformance.progress import Progress
from refdecode.reference.conformance.registry import REGISTRY, Case
from refdecode.reference.conformance.suite import load_suite
from refdecode.reference.engines import PROFILES, NextTokenLogits, decode_as
from refdecode.reference.engines.beam import NotSimulated, Undefined

HERE = Path(__file__).resolve().parent
GQA_TIED = HERE.parents[1] / "tests" / "golden" / "models" / "llama-gqa-tied"
#: profiles answered by another engine's adapter in another mode: profile -> (engine folder, environment)
VARIANTS = {"ctranslate2-per-prompt": ("ctranslate2", "CT2_PER_PROMPT=1"),
            "mlx-lm-per-prompt": ("mlx-lm", "MLX_PER_PROMPT=1"),
            "llms-from-scratch-kv": ("llms-from-scratch", "SCRATCH_KV=1"),
            "llms-from-scratch-qwen3": ("llms-from-scratch", "SCRATCH_LLAMA=qwen3")}


@dataclasses.dataclass(frozen=True)
class Draw:
    """How an engine's fresh cases are drawn: the groups (in turn), and a fit of each drawn input to what the engine
    takes (``says``: how, in the note and the page); ``name`` keys the draw's folder, shared by engines alike."""
    name: str = "common"
    groups: tuple[str, ...] = FRESH_GROUPS
    fit: Callable[[dict], dict] | None = None
    says: str = "the common draw"
    family: str = "gpt2"   # the models drawn on (``fresh --family``): gpt2, or llama for the Llama-family checkpoints


def _config(inp: dict, **changes: Any) -> dict:
    return {**inp, "config": dict(inp["config"], **changes)}


def _beams(inp: dict) -> bool:
    return int(inp["config"].get("num_beams") or 1) > 1


def for_vllm(inp: dict) -> dict:
    """On the shipped model (the tiny models' heads of 8 and 16 are not among the head sizes vLLM's CPU attention
    takes; their prompt and eos ids, below their vocabularies of at most 128, are ids of its vocabulary too), no
    n-gram ban (vLLM has none), and for beams no repetition penalty and no minimum length (BeamSearchParams has
    neither)."""
    inp = _config({**inp, "model": {"kind": "gpt2", "path": str(SHIPPED)}}, no_repeat_ngram_size=0)
    return _config(inp, repetition_penalty=1.0, min_length=0, min_new_tokens=0) if _beams(inp) else inp


def for_keras(inp: dict) -> dict:
    """No repetition penalty, n-gram ban or minimum length; beams with length_penalty 1 and early_stopping False
    (keras-hub's samplers have none of these options)."""
    inp = _config(inp, repetition_penalty=1.0, no_repeat_ngram_size=0, min_new_tokens=0, min_length=0)
    return _config(inp, length_penalty=1.0, early_stopping=False) if _beams(inp) else inp


def for_flax(inp: dict) -> dict:
    """One eos id, the first drawn (Flax generate takes one)."""
    return _config(inp, eos_token_id=[inp["config"]["eos_token_id"][0]])


def for_tf(inp: dict) -> dict:
    """No min_length with two or more eos ids (TF's generate raises there, FINDINGS TF4)."""
    return _config(inp, min_length=0) if len(inp["config"]["eos_token_id"]) > 1 else inp


def for_openvino(inp: dict) -> dict:
    """No min_length (GenAI has min_new_tokens only)."""
    return _config(inp, min_length=0)


def for_llama2py(inp: dict) -> dict:
    """On llama-gqa-tied, ids mod 128 (llama2-py's pure-Python forward pass takes about 0.01 s a token there, against
    1.4 s on the shipped Llama and 0.35 s on llama-tiny, whose 50,257-word classifier dominates), the first prompt
    unpadded and one returned row (llama2-py runs one prompt), no repetition penalty, n-gram ban or minimum length,
    top_k 0 and top_p 1 (it has none of these options)."""
    ids = np.asarray(inp["input_ids"])                                     # (B, T)
    mask = np.ones_like(ids) if inp.get("attention_mask") is None else np.asarray(inp["attention_mask"])
    row = ids[:1, mask[0] == 1] % 128                                      # (1, T0): the first prompt, unpadded
    c = inp["config"]
    eos = list(dict.fromkeys(int(e) % 128 for e in c["eos_token_id"]))
    inp = _config({**inp, "model": {"kind": "llama", "path": str(GQA_TIED)}, "input_ids": row,
                   "attention_mask": np.ones_like(row)}, num_return_sequences=1, repetition_penalty=1.0,
                  no_repeat_ngram_size=0, min_length=0, min_new_tokens=0, eos_token_id=eos,
                  pad_token_id=int(c["pad_token_id"]) % 128)
    if not c.get("do_sample"):
        return inp
    return _config({**inp, "uniforms": np.asarray(inp["uniforms"])[:int(c["max_new_tokens"])]}, top_k=0, top_p=1.0)


def for_scratch(inp: dict) -> dict:
    """One eos id, the first drawn, no repetition penalty and no top-p (ch05 generate of llms-from-scratch takes one
    eos_id and has neither option); sampling on the shipped model at most 4 new tokens (its cases' full-vocabulary
    scores, no top-p to cut them, stay under the suite's 64 MiB line)."""
    inp = _config(inp, eos_token_id=[inp["config"]["eos_token_id"][0]], repetition_penalty=1.0, top_p=1.0)
    if inp["config"].get("do_sample") and Path(inp["model"]["path"]).name in (SHIPPED.name, SHIPPED_LLAMA.name):
        inp = _config(inp, max_new_tokens=min(int(inp["config"]["max_new_tokens"]), 4))
        inp["uniforms"] = inp["uniforms"][:inp["config"]["max_new_tokens"] * len(inp["input_ids"])
                                          * int(inp["config"].get("num_return_sequences") or 1)]
    return inp


def for_litgpt(inp: dict) -> dict:
    """No repetition penalty (litgpt's ``sample`` has no processors: generate/base.py:54-74)."""
    return _config(inp, repetition_penalty=1.0)


def for_llama_models(inp: dict) -> dict:
    """No repetition penalty and top_k 0 (Llama3.generate has neither option: generation.py:154-164); sampling on the
    shipped Llama at most 6 new tokens (its cases' full-vocabulary scores stay under the suite's 64 MiB line); with
    prompts of unequal length more uniforms, one per row and step up to the longest prompt + max_new_tokens (Meta
    decodes in lockstep from the shortest prompt, its S1: a shorter row draws more than max_new_tokens; the first
    max_new_tokens * rows are the drawn ones, all 4.38.2 reads; the rest from a generator seeded with them)."""
    inp = _config(inp, repetition_penalty=1.0)
    if not inp["config"].get("do_sample"):
        return inp
    new = int(inp["config"]["max_new_tokens"])
    if Path(inp["model"]["path"]).name == SHIPPED_LLAMA.name:
        new = min(new, 6)
    mask = np.ones_like(inp["input_ids"]) if inp.get("attention_mask") is None else np.asarray(inp["attention_mask"])
    lengths = mask.sum(axis=1)                                                # (B,)
    rows = int(np.asarray(inp["uniforms"]).size) // int(inp["config"]["max_new_tokens"])     # N = B * R
    u = np.asarray(inp["uniforms"], dtype=np.float64)[:new * rows]
    inp = _config(inp, top_k=0, max_new_tokens=new)
    need = (new + int(lengths.max() - lengths.min())) * rows
    extra = np.random.default_rng(int.from_bytes(u.tobytes()[:8], "little")).random(max(need - u.size, 0))
    return {**inp, "uniforms": np.concatenate([u, extra])}


def _says(fit: Callable[[dict], dict]) -> str:
    return " ".join((fit.__doc__ or fit.__name__).split())


#: the engines without beam search, n-gram ban or minimum length
PLAIN = Draw("plain", ("plain_greedy", "sample"), None,
             "groups plain_greedy, sample (no beam search, n-gram ban or minimum length)")
#: per profile: how its fresh cases are drawn (the others: the common draw)
DRAWS: dict[str, Draw] = {
    "vllm": Draw("vllm", ("greedy", "beam_search"), for_vllm, "groups greedy, beam_search; " + _says(for_vllm)),
    "mlx-lm": PLAIN, "mlx-lm-per-prompt": PLAIN, "llama-cpp": PLAIN,
    "keras-hub": Draw("keras", FRESH_GROUPS, for_keras, _says(for_keras)),
    "transformers-4.38.2-flax": Draw("flax", FRESH_GROUPS, for_flax, _says(for_flax)),
    "transformers-4.38.2-tf": Draw("tf", FRESH_GROUPS, for_tf, _says(for_tf)),
    "openvino-genai": Draw("openvino", FRESH_GROUPS, for_openvino, _says(for_openvino)),
    "llama2-py": Draw("llama2-py-gqa", ("plain_greedy", "sample"), for_llama2py,
                      "groups plain_greedy, sample; " + _says(for_llama2py), family="llama"),
    "llms-from-scratch": Draw("scratch", ("plain_greedy", "sample"), for_scratch,
                              "groups plain_greedy, sample; " + _says(for_scratch)),
    "llms-from-scratch-qwen3": Draw("scratch-llama", ("plain_greedy", "sample"), for_scratch,
                                    "groups plain_greedy, sample on the Llama family; " + _says(for_scratch),
                                    family="llama"),
    "llms-from-scratch-kv": Draw("scratch-kv-llama", ("plain_greedy",), for_scratch,
                                 "group plain_greedy on the Llama family (the KV-cache loop is greedy only); "
                                 + _says(for_scratch), family="llama"),
    "litgpt": Draw("litgpt", ("plain_greedy", "sample"), for_litgpt,
                   "groups plain_greedy, sample on the Llama family; " + _says(for_litgpt), family="llama"),
    "llama-models": Draw("llama-models", ("plain_greedy", "sample"), for_llama_models,
                         "groups plain_greedy, sample on the Llama family; " + _says(for_llama_models),
                         family="llama"),
}


def for_vllm_llama(inp: dict) -> dict:
    """On the shipped Llama (the tiny Llamas' heads of 8 are not among the head sizes vLLM's CPU attention takes;
    their prompt and eos ids are ids of its vocabulary too), no n-gram ban (vLLM has none), and for beams no
    repetition penalty and no minimum length (BeamSearchParams has neither)."""
    inp = for_vllm(inp)
    return {**inp, "model": {"kind": "llama", "path": str(SHIPPED_LLAMA)}}


#: per profile: how its fresh cases are drawn on the Llama family (``fresh --family llama``: the shipped Llama and
#: the tiny Llamas) where it is not DRAWS' own draw moved to the Llama family (llama.cpp, mlx-lm, OpenVINO GenAI,
#: vLLM): ``--family llama`` takes these first (:func:`draw_of`).
#: llama.cpp and mlx-lm: greedy only; a drawn llama_sample case can exceed the suite loader's 64 MiB line (its
#: expected per-step scores over the 50,257-token vocabulary are written inline).
PLAIN_LLAMA = Draw("plain-llama", ("plain_greedy",), None,
                   "group plain_greedy (no beam search, n-gram ban or minimum length; sampling cases of the Llama "
                   "family are left out: a drawn llama_sample line can exceed the loader's 64 MiB)", family="llama")
LLAMA_DRAWS: dict[str, Draw] = {
    "llama-cpp": PLAIN_LLAMA,
    "mlx-lm": PLAIN_LLAMA,
    "openvino-genai": Draw("openvino-llama", FRESH_GROUPS, for_openvino, _says(for_openvino), family="llama"),
    "vllm": Draw("vllm-llama", ("greedy", "beam_search"), for_vllm_llama,
                 "groups greedy, beam_search; " + _says(for_vllm_llama), family="llama"),
}


def _fitted(draw: Draw) -> Callable[[Case], Case] | None:
    """The case with ``draw.fit`` applied, its note saying so and labelling a near-tie of the fitted decode."""
    if draw.fit is None:
        return None

    def fit(case: Case) -> Case:
        inp = draw.fit(case.input)
        margin = smallest(decode(inp)[1])
        head = case.note.split("; near-tie")[0]
        note = (f"{head}; drawn for {draw.name}" + (f"; near-tie: margin {margin:.2g}" if margin <= NEAR_TIE else ""))
        return dataclasses.replace(case, input=inp, note=note)
    return fit


def draw_suite(root: Path, draw: Draw, n: int, seed: int, stream: int) -> list[dict]:
    """Stream ``stream`` of ``draw`` (written to ``root/<name>-<stream>`` once, then read), as loaded cases."""
    folder = root / f"{draw.name}-{stream}"
    if not (folder / "manifest.json").exists():   # written aside, then renamed: engines checked at once (--jobs)
        aside = root / f".{draw.name}-{stream}.{os.getpid()}"   # that draw alike may both write it; one rename wins
        write_fresh(aside, n, seed, draw.groups, stream, _fitted(draw), family=draw.family)
        try:
            aside.rename(folder)
        except OSError:
            shutil.rmtree(aside)
    return load_suite(folder)[1]


def folder_of(name: str) -> Path:
    """An engine's folder (examples/engines/<name>) or a teaching peer's (examples/peers/<name>)."""
    engine = HERE / name
    return engine if engine.is_dir() else HERE.parent / "peers" / name


def command(engine: str) -> str:
    folder, env = VARIANTS.get(engine, (engine, ""))
    run = folder_of(folder) / "run"
    return f"env {env} {run}" if env else str(run)


def installed() -> list[str]:
    folders = {e: folder_of(VARIANTS.get(e, (e, ""))[0]) for e in PROFILES}
    return [e for e, f in folders.items() if (f / "run").exists()
            and any((f / d).exists() for d in ("env", "node_modules"))]


def profile_answer(engine: str, case: dict) -> tuple[list | str, bool]:
    """(the profile's sequences, or why it gives none; whether the engine may fail instead: the profile says
    ``Undefined``, or the engine read memory it never wrote on the way, onnxruntime-genai G5 at the first step)."""
    inp = REGISTRY[case["type"]].inputs.decode(case["input"])
    events: list = []
    try:
        out = decode_as(engine, NextTokenLogits(model_for(inp["model"], inp["config"])), inp["input_ids"],
                        inp["attention_mask"], inp["config"], inp.get("uniforms"), events=events)
    except Undefined as err:
        return f"undefined: {err}", True
    except NotSimulated as err:
        return f"not simulated: {err}", False
    return to_json(out)["sequences"], any(e.get("step") == 0 for e in events)


def parting(got: list, want: list) -> str:
    if len(got) != len(want):
        return f"{len(got)} rows, profile {len(want)}"
    for row, (a, b) in enumerate(zip(got, want)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"row {row} position {at}: engine {a[at:at + 4]}, profile {b[at:at + 4]}"
    return "equal"


def answer_sequences(response: Any, case_id: str) -> list | str | None:
    """The answer's sequences, or why it is no answer (junk, another case's id, no sequences); None: unsupported."""
    if not isinstance(response, dict) or response.get("id") != case_id:
        return f"no answer: not a response to {case_id}"
    if "output" not in response:
        return None if "unsupported" in response else f"no answer: {str(response.get('error', response))[:200]}"
    output = response["output"]
    sequences = output.get("sequences") if isinstance(output, dict) else None
    if not (isinstance(sequences, list) and all(isinstance(r, list) for r in sequences)):
        return "no answer: the output has no list of sequences"
    return sequences


def check_engine(engine: str, cases: list[dict], timeout: float, cmd: str | None = None,
                 enough: int | None = None) -> dict:
    """Each case asked of the engine's adapter (``cmd``: another command, for tests) and of its profile; three
    cases in a row without an answer end the run, as ``refdecode conformance check`` does; ``enough``: stop once
    that many are answered. ``asked``: the cases asked."""
    cmd = cmd or command(engine)
    adapter, misses, result = Implementation(cmd), 0, {"answered": 0, "same": 0, "departing": 0,
                                                                     "departing_same": 0, "unsupported": 0,
                                                                     "no_answer": 0, "mismatches": [],
                                                                     "asked": 0, "failed_as_modelled": 0,
                                                                     "undefined_answered": []}
    try:
        for case in cases:
            if enough is not None and result["answered"] >= enough:
                break
            result["asked"] += 1
            try:
                response = json.loads(adapter.ask(json.dumps({"id": case["id"], "type": case["type"],
                                                              "input": case["input"]}), timeout))
            except (NoAnswer, ValueError) as err:
                adapter.close(kill=True)
                adapter = Implementation(cmd)
                response = {"id": case["id"], "error": f"{err}"}
            got = answer_sequences(response, case["id"])
            if got is None:
                result["unsupported"] += 1
                continue
            want, may_fail = profile_answer(engine, case)
            if isinstance(got, str) and may_fail:   # the failure the profile allows (an error or a crash)
                result["failed_as_modelled"] += 1
                continue
            if isinstance(got, str):
                result["no_answer"] += 1
                result["mismatches"].append({"id": case["id"], "note": case["note"], "why": got})
                misses += 1
                if misses == 3:
                    result["stopped"] = "three cases in a row without an answer"
                    break
                continue
            misses = 0
            if isinstance(want, str) and want.startswith("undefined"):   # rows where the profile predicts none
                result["undefined_answered"].append({"id": case["id"], "note": case["note"], "why": want})
                continue
            departs = got != to_json(case["expected"]["sequences"])
            result["answered"] += 1
            result["departing"] += departs
            if got == want:
                result["same"] += 1
                result["departing_same"] += departs
            else:
                result["mismatches"].append({"id": case["id"], "note": case["note"],
                                             "why": want if isinstance(want, str) else parting(got, want)})
    finally:
        adapter.close()
    return result


def draw_of(engine: str, groups: tuple[str, ...] | None = None, family: str | None = None) -> Draw:
    """The engine's draw (:data:`DRAWS`; ``groups``: the common draw of these groups instead) on ``family``'s
    checkpoints (``"llama"``: the engine's :data:`LLAMA_DRAWS` entry, or the same draw on the Llama family, named
    ``<draw>-llama``; None: the draw's own family)."""
    if groups is None and family == "llama" and engine in LLAMA_DRAWS:
        return LLAMA_DRAWS[engine]
    draw = DRAWS.get(engine, Draw()) if groups is None else Draw(f"groups-{'-'.join(groups)}", groups, None,
                                                                 f"groups {', '.join(groups)}")
    if family is None or family == draw.family:
        return draw
    return dataclasses.replace(draw, name=f"{draw.name}-{family}", family=family,
                               says=f"{draw.says}; the {family} checkpoints")


def check_fresh(engine: str, root: Path, n: int, seed: int, timeout: float, answered: int | None = None,
                max_streams: int = 8, groups: tuple[str, ...] | None = None, family: str | None = None) -> dict:
    """``engine`` on its draw (:func:`draw_of`), stream 0 and, with ``answered``, further streams until it has
    answered that many; the results summed, ids as ``<draw>/<id>``."""
    draw = draw_of(engine, groups, family)
    total: dict[str, Any] = {"answered": 0, "same": 0, "departing": 0, "departing_same": 0, "unsupported": 0,
                             "no_answer": 0, "asked": 0, "failed_as_modelled": 0, "mismatches": [], "streams": 0,
                             "undefined_answered": [], "draw": draw.says}
    for stream in range(max_streams if answered else 1):
        cases = draw_suite(root, draw, n, seed, stream)
        r = check_engine(engine, cases, timeout, enough=None if answered is None else answered - total["answered"])
        total["streams"] += 1
        for key in ("answered", "same", "departing", "departing_same", "unsupported", "no_answer", "asked",
                    "failed_as_modelled"):
            total[key] += r[key]
        for key in ("mismatches", "undefined_answered"):
            total[key] += [dict(m, id=f"{draw.name}-{stream}/{m['id']}") for m in r[key]]
        if "stopped" in r:
            total["stopped"] = r["stopped"]
            break
        if answered is None or total["answered"] >= answered:
            break
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", type=int, default=100, metavar="N", help="number of fresh cases (per stream)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--answered", type=int, default=None, metavar="N",
                    help="ask further streams of --fresh cases until each engine has answered N")
    ap.add_argument("--max-streams", type=int, default=8, help="with --answered: at most this many streams")
    ap.add_argument("--groups", default=None,
                    help="the common draw of these groups for every engine (default: each engine's DRAWS entry)")
    ap.add_argument("--engines", default=None, help="comma-separated (default: the installed ones)")
    ap.add_argument("--family", choices=("gpt2", "llama"), default=None,
                    help="the checkpoints drawn on: the GPT-2 ones or the Llama family's (default: each engine's own "
                         "draw's)")
    ap.add_argument("--suite", type=Path, default=None, help="where to write the cases (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", type=Path, default=None, help="write the per-engine results here")
    ap.add_argument("--jobs", type=int, default=1, help="engines checked at once, each in its own process")
    args = ap.parse_args()
    if args.answered is not None and args.answered < 1:
        ap.error(f"--answered must be >= 1, got {args.answered}")
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.max_streams < 1:
        ap.error(f"--max-streams must be >= 1, got {args.max_streams}")
    root = args.suite or Path(tempfile.mkdtemp(prefix="refdecode-fresh-"))
    groups = tuple(g for g in args.groups.split(",") if g) if args.groups else None
    engines = args.engines.split(",") if args.engines else installed()
    unknown = [e for e in engines if e not in PROFILES]
    if unknown:
        ap.error(f"--engines: no profile named {', '.join(unknown)} (profiles: {', '.join(PROFILES)})")
    print(f"fresh cases, seed {args.seed}, {args.fresh} a stream, in {root}", flush=True)
    check = functools.partial(check_fresh, root=root, n=args.fresh, seed=args.seed, timeout=args.timeout,
                              answered=args.answered, max_streams=args.max_streams, groups=groups,
                              family=args.family)
    # --jobs engines at once, each in its own process (the profile's decodes are NumPy work of this side), as
    # refdecode conformance check --jobs runs implementation processes; the report in the order of --engines
    with ProcessPoolExecutor(args.jobs) as pool, Progress(len(engines), "fresh engines", unit="engine") as bar:
        futures = [pool.submit(check, engine) for engine in engines]
        for future in as_completed(futures):
            future.result()
            bar.advance()
    results = {engine: future.result() for engine, future in zip(engines, futures)}
    for engine, r in results.items():
        print(f"{engine} ({r['draw']}): profile = engine on {r['same']} of {r['answered']} answered "
              f"({r['departing_same']} of the {r['departing']} departing from 4.38.2), {r['unsupported']} "
              f"unsupported, {r['no_answer']} no answer, {r['failed_as_modelled']} failed where the profile allows it; "
              f"{r['asked']} cases asked of {r['streams']} stream(s)")
        for m in r["mismatches"]:
            print(f"  MISMATCH {m['id']} ({m['note']}): {m['why']}")
        for m in r["undefined_answered"]:
            print(f"  rows where the profile predicts none: {m['id']} ({m['note']})")
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "cases": args.fresh, "answered_target": args.answered,
                                         "family": args.family or "each engine's draw's", "engines": results}, indent=1) + "\n")
    return 1 if any(r["mismatches"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
