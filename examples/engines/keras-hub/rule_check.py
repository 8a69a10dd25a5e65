r"""keras-hub 0.32's decoding rules (FINDINGS.md, causes K1 and K2) written out in NumPy on refdecode's GPT-2 forward
pass, checked against the adapter's answers: the evidence that the rules are exact enough for a refdecode engine
profile to reproduce keras-hub token for token.

Run with refdecode's venv (it imports refdecode; the adapter runs in keras-hub's env through ``run``):

    .venv/bin/python examples/engines/keras-hub/rule_check.py SUITE/cases/engines_beam_search.jsonl [...jsonl]

Model paths in the cases are resolved against the suite folder (the parent of ``cases/``). Prints, per case the
adapter answers, whether the rule's tokens equal keras-hub's, and the largest beam-score difference when the
adapter is run with KERAS_HUB_SCORES=1 (set here).

The rule (K1 + K2), all rows of the batch in lockstep, keras-hub's right-padded layout:
  L = T (padded prompt width) + max_new_tokens; row b holds its n_b real tokens, then a fill id (0, or the
  smallest non-eos id); decoding starts at index = min_b n_b.
  greedy (K1): at each index: token = argmax(softmax(logits)) (float32 probabilities; first index on ties);
  where index < n_b the row keeps its prompt token instead. Stop when every row holds an eos at a position
  >= n_b, or at index L. Row b's output: its tokens from n_b up to and including the first eos.
  beam (K2): K beams per row, log_probs = [0, -1e9, ...]; at each index: cand = log(softmax(logits)) (float32,
  log of the probabilities) + log_probs, flattened per row to (K*V); the K largest (torch.topk) become the new
  beams (source beam = idx // V, token = idx % V) with log_probs = those values; where index < n_b the token is
  replaced by the prompt token but the value is kept. No eos handling inside the loop: a beam with an eos goes
  on. Stop when every beam of every row holds an eos at a position >= n_b, or at index L. Final: the K beams of
  each row sorted by log_probs, descending; each cut after its first eos past its prompt. The best
  num_return_sequences are returned; duplicates (beams equal up to their eos) are kept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from refdecode.model.modeling import GPT2

HERE = Path(__file__).resolve().parent


def _last_logits(model, rows: np.ndarray) -> np.ndarray:
    return model(rows.astype(np.int64), logits_to_keep=1).logits[:, -1, :].astype(np.float32)


def _probs(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def keras_decode(model, input_ids, attention_mask, config) -> list[list[tuple[list[int], float]]]:
    K = int(config.get("num_beams") or 1)
    eos = list(config.get("eos_token_id") or [])
    T = len(input_ids[0])
    L = T + int(config["max_new_tokens"])
    fill = 0
    while fill in eos:
        fill += 1
    rows = [[t for t, m in zip(r, mk) if m] for r, mk in zip(input_ids, attention_mask)]
    B = len(rows)
    prompt = np.full((B * K, L), fill, dtype=np.int64)
    pmask = np.zeros((B * K, L), dtype=bool)
    for b, r in enumerate(rows):
        prompt[b * K:(b + 1) * K, :len(r)] = r
        pmask[b * K:(b + 1) * K, :len(r)] = True
    logp = np.tile(np.array([0.0] + [-1e9] * (K - 1), np.float32), B)
    index = min(len(r) for r in rows)
    while index < L:
        if eos and all((np.isin(prompt[i, :index], eos) & ~pmask[i, :index]).any() for i in range(B * K)):
            break
        probs = _probs(_last_logits(model, prompt[:, :index]))
        V = probs.shape[-1]
        if K == 1:
            tok = np.argmax(probs, axis=-1)
            prompt[:, index] = np.where(pmask[:, index], prompt[:, index], tok)
        else:
            with np.errstate(divide="ignore"):
                cand = (np.log(probs) + logp[:, None]).astype(np.float32).reshape(B, K * V)
            new_prompt, new_logp = prompt.copy(), logp.copy()
            for b in range(B):
                top = np.argsort(-cand[b], kind="stable")[:K]
                for k, idx in enumerate(top):
                    src, tok = b * K + idx // V, idx % V
                    new_prompt[b * K + k] = prompt[src]
                    new_logp[b * K + k] = cand[b, idx]
                    if not pmask[b * K + k, index]:
                        new_prompt[b * K + k, index] = tok
            prompt, logp = new_prompt, new_logp
        index += 1
    out = []
    for b, r in enumerate(rows):
        order = np.argsort(-logp[b * K:(b + 1) * K], kind="stable")
        beams = []
        for k in order:
            new = prompt[b * K + k, len(r):].tolist()
            hits = [i for i, t in enumerate(new) if t in eos]
            beams.append((new[:hits[0] + 1] if hits else new, float(logp[b * K + k])))
        out.append(beams)
    return out


def main(paths: list[str]) -> int:
    os.environ["KERAS_HUB_SCORES"] = "1"
    adapter = subprocess.Popen([str(HERE / "run")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    models: dict[str, GPT2] = {}
    same = total = 0
    for path in paths:
        suite = Path(path).resolve().parent.parent
        for line in open(path):
            case = json.loads(line)
            inp = case["input"]
            if inp.get("model", {}).get("kind") != "gpt2":
                continue
            model_path = Path(inp["model"]["path"])
            model_path = model_path if model_path.is_absolute() else suite / model_path
            inp["model"]["path"] = str(model_path)
            adapter.stdin.write(json.dumps({"id": case["id"], "type": case["type"], "input": inp}) + "\n")
            adapter.stdin.flush()
            answer = json.loads(adapter.stdout.readline())
            if "output" not in answer:
                continue
            cfg = inp["config"]
            models.setdefault(str(model_path), GPT2.from_pretrained(model_path))
            beams = keras_decode(models[str(model_path)], inp["input_ids"], inp["attention_mask"], cfg)
            nrs = int(cfg.get("num_return_sequences") or 1) if (cfg.get("num_beams") or 1) > 1 else 1
            pad = cfg["pad_token_id"]
            rows = [(list(inp["input_ids"][b]), new, s) for b, bb in enumerate(beams) for new, s in bb[:nrs]]
            width = max(len(new) for _, new, _ in rows)
            seqs = [p + new + [pad] * (width - len(new)) for p, new, _ in rows]
            ok = seqs == answer["output"]["sequences"]
            total += 1
            same += ok
            theirs = answer["output"].get("sequences_scores")
            diff = None if theirs is None else max(abs(s - t) for (_, _, s), t in zip(rows, theirs))
            print(f"{case['id']}: tokens {'same' if ok else 'DIFFER'}" + ("" if diff is None else f", max |score diff| {diff:.2e}"))
    adapter.stdin.close()
    adapter.wait()
    print(f"the K1/K2 rules reproduce keras-hub on {same}/{total} answered cases")
    return 0 if same == total else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
