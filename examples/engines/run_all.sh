#!/usr/bin/env bash
# Everything of docs/engines.md (and its Chinese twin docs/engines.zh.md) from a fresh clone, in one command:
#   examples/engines/run_all.sh
# 1) refdecode's venv, 2) every engine's setup.sh, 3) the suite (engines + gpt2_greedy + gpt2_sample +
# gpt2_beam_search + gpt2_group_beam_search; engines_124m after making the 124M-shaped checkpoint; engines_llama: the shipped
# Llama), 4) every adapter through `check`
# (summary lines kept; two engines at a time) and through record_responses.py (answers kept: examples/engines/<engine>/responses.jsonl),
# 5) each bench script, and benchmarks/beam_gap.py (beam-4 against greedy, refdecode and onnxruntime-genai), 6) report.py
# (diagnosis, reproduction, refdecode's speed with both forward passes, docs/engines.md and docs/engines.zh.md, report.json), 7) the whole
# run's time into the page, 8) the teaching peers through examples/peers/run_all.sh (their page and its times).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
START=$(date +%s)
WORK="${RUN_ALL_WORK:-$ROOT/examples/engines/.run}"   # git-ignored
mkdir -p "$WORK"
: > "$WORK/times.txt"
ENGINES=(transformers-4.38.2 transformers-5 ctranslate2 onnxruntime-genai transformers-js llama-cpp keras-hub mlx-lm openvino-genai
         transformers-4.38.2-tf vllm
         transformers-4.38.2-flax)

# 1) refdecode
[ -x .venv/bin/python ] || { python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]"; }
PY=.venv/bin/python

# 2) engines
for e in "${ENGINES[@]}"; do
  t0=$(date +%s); "examples/engines/$e/setup.sh" > "$WORK/setup-$e.log" 2>&1
  echo "setup $e: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
done

# 3) the suite
[ -f models/gpt2-124m-shaped/model.safetensors ] || $PY tools/engines/make_gpt2_124m_shaped.py   # NumPy, seconds
LLAMA_124M=benchmarks/_checkpoints/llama-124m-random   # the speed table's Llama columns (git-ignored)
[ -f "$LLAMA_124M/model.safetensors" ] || $PY benchmarks/make_llama_checkpoint.py                 # NumPy, seconds
ONLY=engines,engines_124m,engines_llama,gpt2_greedy,gpt2_sample,gpt2_beam_search,gpt2_group_beam_search
rm -rf "$WORK/suite"; .venv/bin/refdecode conformance export "$WORK/suite" --only "$ONLY"

# 4) check + record, one engine at a time, each through check's pool of two adapter processes (--jobs 2: one per
# core; each adapter on one thread); the verdicts in the suite's order, as one process gives them. On a terminal,
# check and record_responses.py draw their progress (cases done of total, rate, time left) on stderr; the adapters'
# own stderr goes to adapter-<engine>.log
JOBS=${RUN_ALL_JOBS:-2}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1
check_and_record() {
  local e=$1 t0; t0=$(date +%s)
  echo "engine $e ($(( ${#DONE[@]} + 1 )) of ${#ENGINES[@]})" >&2
  .venv/bin/refdecode conformance check "$WORK/suite" --cmd "examples/engines/$e/run 2>>'$WORK/adapter-$e.log'" \
    --only "$ONLY" --timeout 300 --jobs "$JOBS" > "$WORK/check-$e.txt" || true
  $PY examples/engines/common/record_responses.py "$WORK/suite" --cmd "examples/engines/$e/run 2>>'$WORK/adapter-$e.log'" \
    --only engines_greedy,engines_beam_search,engines_124m_greedy,engines_124m_beam_search,gpt2_greedy,gpt2_sample,gpt2_beam_search \
    --rename gpt2_beam_search=engines_beam_search --jobs "$JOBS" -o "$WORK/responses-$e.jsonl"
  $PY examples/engines/common/slim_responses.py "$WORK/responses-$e.jsonl" "examples/engines/$e/responses.jsonl"
  # the Llama checkpoint's answers, kept apart (examples/engines/<engine>/responses-llama.jsonl); its check lines too
  grep -E "^(PASS|FAIL|NEAR-TIE|UNSUPPORTED|ERROR) engines_llama_" "$WORK/check-$e.txt" > "$WORK/check-llama-$e.txt" || true
  $PY examples/engines/common/record_responses.py "$WORK/suite" --cmd "examples/engines/$e/run 2>>'$WORK/adapter-$e.log'" \
    --only engines_llama_greedy,engines_llama_beam_search --jobs "$JOBS" -o "$WORK/responses-llama-$e.jsonl"
  $PY examples/engines/common/slim_responses.py "$WORK/responses-llama-$e.jsonl" "examples/engines/$e/responses-llama.jsonl"
  echo "run $e: $(( $(date +%s) - t0 )) s" > "$WORK/time-$e.txt"
  DONE+=("$e")
}
DONE=()
: > "$WORK/check-summaries.txt"
for e in "${ENGINES[@]}"; do check_and_record "$e"; done
for e in "${ENGINES[@]}"; do
  echo "$e: $(tail -n 1 "$WORK/check-$e.txt")" | tee -a "$WORK/check-summaries.txt"
  tee -a "$WORK/times.txt" < "$WORK/time-$e.txt"
done

# 4b) fresh cases (new every run, the seed in the page): each engine's answers against its profile, drawn over the
# options the engine takes (fresh_check.py's DRAWS) until it has answered 100; JOBS engines at once, each in its own
# process (a progress bar of engines on a terminal)
FRESH_SEED=${FRESH_SEED:-$(date -u +%Y%m%d)}
t0=$(date +%s)
FRESH_ENGINES="$(IFS=,; echo "${ENGINES[*]}"),ctranslate2-per-prompt,mlx-lm-per-prompt"
$PY examples/engines/fresh_check.py --fresh 100 --answered 100 --seed "$FRESH_SEED" --suite "$WORK/fresh" \
  --engines "$FRESH_ENGINES" --jobs "$JOBS" --json "$WORK/fresh.json" > "$WORK/fresh.txt" \
  && echo 0 > "$WORK/fresh.status" || echo $? > "$WORK/fresh.status"
# status 1: mismatches (listed on the page); anything else: the check failed
echo "fresh cases (seed $FRESH_SEED): exit $(cat "$WORK/fresh.status"), $(grep -c MISMATCH "$WORK/fresh.txt") mismatches" | tee -a "$WORK/times.txt"
echo "fresh: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
# the same on the Llama family (fresh_check.py --family llama: the shipped Llama and the tiny Llamas)
$PY examples/engines/fresh_check.py --family llama --fresh 100 --answered 100 --seed "$FRESH_SEED" --suite "$WORK/fresh-llama" \
  --engines "$(IFS=,; echo "${ENGINES[*]}")" --jobs "$JOBS" --json "$WORK/fresh-llama.json" > "$WORK/fresh-llama.txt" || true
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS TF_NUM_INTRAOP_THREADS TF_NUM_INTEROP_THREADS

# 5) speed (alternating engines, one at a time)
: > "$WORK/bench.jsonl"
for e in "${ENGINES[@]}"; do
  if [ -f "examples/engines/$e/bench.py" ]; then
    "examples/engines/$e/env/bin/python" "examples/engines/$e/bench.py" | tail -n 1 >> "$WORK/bench.jsonl" || true
  elif [ -f "examples/engines/$e/bench.mjs" ]; then
    (cd "examples/engines/$e" && node bench.mjs) | tail -n 1 >> "$WORK/bench.jsonl" || true
  fi
done
# 5a) the same benches on the 124M-class Llama (--model), each engine's figures, stamped with the date, the load and
# the CPU, to examples/engines/<engine>/bench-llama.json (an engine whose bench takes no Llama writes nothing)
for e in "${ENGINES[@]}"; do
  if [ -f "examples/engines/$e/bench.py" ]; then
    "examples/engines/$e/env/bin/python" "examples/engines/$e/bench.py" --model "$LLAMA_124M" | tail -n 1 \
      | $PY examples/engines/common/stamp_bench.py "examples/engines/$e/bench-llama.json" || true
  fi
done

# 5b) where beam-4's time goes, refdecode against onnxruntime-genai (one thread; the page's paragraph on beam-4)
t0=$(date +%s)
rm -f "$WORK/beam_gap.json"
$PY benchmarks/beam_gap.py --rounds 3 --json "$WORK/beam_gap.json" > "$WORK/beam_gap.txt" 2>&1 || true
echo "beam_gap: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
GAP=(); [ -f "$WORK/beam_gap.json" ] && GAP=(--beam-gap "$WORK/beam_gap.json")

# 6) the report
FRESH_LLAMA=(); [ -f "$WORK/fresh-llama.json" ] && FRESH_LLAMA=(--fresh-llama "$WORK/fresh-llama.json")
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $PY examples/engines/report.py --bench "$WORK/bench.jsonl" --check-dir "$WORK" --refdecode-bench ${GAP[@]+"${GAP[@]}"} --fresh "$WORK/fresh.json" \
  --refdecode-bench-llama --llama-model "$LLAMA_124M" ${FRESH_LLAMA[@]+"${FRESH_LLAMA[@]}"} --run-seconds $(( $(date +%s) - START )) \
  --provenance "Recorded by examples/engines/run_all.sh on $(date -u +%Y-%m-%d); check summaries: $(tr '\n' ';' < "$WORK/check-summaries.txt") times: $(tr '\n' ';' < "$WORK/times.txt")"

# 7) the whole run's time, measured here at the end, into the page (report.json's run_time)
echo "$(( $(date +%s) - START ))" > "$WORK/run_seconds.txt"
$PY examples/engines/report.py --from-json --run-time-file "$WORK/run_seconds.txt"
echo "run_all.sh: $(cat "$WORK/run_seconds.txt") s (in docs/engines.md, \"Full run time\")"

# 8) the teaching peers (llms-from-scratch, litgpt, llama-models, llama2-py): their setup, their answers to the suite,
# 100 fresh cases each, and the page "Checking the code you learn from" with each step's time
# (examples/peers/run_all.sh; RUN_ALL_PEERS=0 leaves them out)
if [ "${RUN_ALL_PEERS:-1}" != 0 ]; then examples/peers/run_all.sh; fi
