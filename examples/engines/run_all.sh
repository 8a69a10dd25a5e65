#!/usr/bin/env bash
# Everything of docs/engines.md from a fresh clone, in one command:
#   examples/engines/run_all.sh
# 1) refdecode's venv, 2) every engine's setup.sh, 3) the suite (engines + gpt2_greedy + gpt2_sample +
# gpt2_beam_search + gpt2_group_beam_search; engines_124m after making the 124M-shaped checkpoint), 4) every adapter through `check`
# (summary lines kept; two engines at a time) and through record_responses.py (answers kept: examples/engines/<engine>/responses.jsonl),
# 5) each bench script, and benchmarks/beam_gap.py (beam-4 against greedy, refdecode and onnxruntime-genai), 6) report.py
# (diagnosis, reproduction, refdecode's speed with both forward passes, docs/engines.md, report.json), 7) the whole
# run's time into the page.
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
ONLY=engines,engines_124m,gpt2_greedy,gpt2_sample,gpt2_beam_search,gpt2_group_beam_search
rm -rf "$WORK/suite"; .venv/bin/refdecode conformance export "$WORK/suite" --only "$ONLY"

# 4) check + record, two engines at a time (one per core; each adapter on one thread), the slow ones split
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1
check_and_record() {
  local e=$1 t0; t0=$(date +%s)
  .venv/bin/refdecode conformance check "$WORK/suite" --cmd "examples/engines/$e/run" --only "$ONLY" \
    --timeout 300 > "$WORK/check-$e.txt" 2>&1 || true
  $PY examples/engines/common/record_responses.py "$WORK/suite" --cmd "examples/engines/$e/run" \
    --only engines_greedy,engines_beam_search,engines_124m_greedy,engines_124m_beam_search,gpt2_greedy,gpt2_sample,gpt2_beam_search \
    --rename gpt2_beam_search=engines_beam_search -o "$WORK/responses-$e.jsonl"
  $PY examples/engines/common/slim_responses.py "$WORK/responses-$e.jsonl" "examples/engines/$e/responses.jsonl"
  echo "run $e: $(( $(date +%s) - t0 )) s" > "$WORK/time-$e.txt"
}
HALF_A=(transformers-4.38.2 ctranslate2 transformers-js keras-hub openvino-genai transformers-4.38.2-flax)
HALF_B=(transformers-5 onnxruntime-genai llama-cpp mlx-lm transformers-4.38.2-tf vllm)
[ "$(printf '%s\n' "${HALF_A[@]}" "${HALF_B[@]}" | sort)" = "$(printf '%s\n' "${ENGINES[@]}" | sort)" ] \
  || { echo "run_all.sh: HALF_A + HALF_B must be ENGINES, each once"; exit 2; }
( for e in "${HALF_A[@]}"; do check_and_record "$e"; done ) &
( for e in "${HALF_B[@]}"; do check_and_record "$e"; done ) &
wait
: > "$WORK/check-summaries.txt"
for e in "${ENGINES[@]}"; do
  echo "$e: $(tail -n 1 "$WORK/check-$e.txt")" | tee -a "$WORK/check-summaries.txt"
  tee -a "$WORK/times.txt" < "$WORK/time-$e.txt"
done

# 4b) fresh cases (new every run, the seed in the page): each engine's answers against its profile, drawn over the
# options the engine takes (fresh_check.py's DRAWS) until it has answered 100; the two halves side by side again
FRESH_SEED=${FRESH_SEED:-$(date -u +%Y%m%d)}
t0=$(date +%s)
fresh_half() {   # $1: a name for the files, the rest: profiles
  local name=$1; shift
  $PY examples/engines/fresh_check.py --fresh 100 --answered 100 --seed "$FRESH_SEED" --suite "$WORK/fresh-$name" \
    --engines "$(IFS=,; echo "$*")" --json "$WORK/fresh-$name.json" > "$WORK/fresh-$name.txt" 2>&1 \
    && echo 0 > "$WORK/fresh-$name.status" || echo $? > "$WORK/fresh-$name.status"
}
fresh_half a "${HALF_A[@]}" ctranslate2-per-prompt &
fresh_half b "${HALF_B[@]}" mlx-lm-per-prompt &
wait
for name in a b; do   # status 1: mismatches (listed on the page); anything else: the check failed
  echo "fresh cases $name (seed $FRESH_SEED): exit $(cat "$WORK/fresh-$name.status"), $(grep -c MISMATCH "$WORK/fresh-$name.txt") mismatches" | tee -a "$WORK/times.txt"
done
echo "fresh: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
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

# 5b) where beam-4's time goes, refdecode against onnxruntime-genai (one thread; the page's paragraph on beam-4)
t0=$(date +%s)
rm -f "$WORK/beam_gap.json"
$PY benchmarks/beam_gap.py --rounds 3 --json "$WORK/beam_gap.json" > "$WORK/beam_gap.txt" 2>&1 || true
echo "beam_gap: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
GAP=(); [ -f "$WORK/beam_gap.json" ] && GAP=(--beam-gap "$WORK/beam_gap.json")

# 6) the report
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $PY examples/engines/report.py --bench "$WORK/bench.jsonl" --check-dir "$WORK" --refdecode-bench ${GAP[@]+"${GAP[@]}"} --fresh "$WORK/fresh-a.json" --fresh "$WORK/fresh-b.json" --run-seconds $(( $(date +%s) - START )) \
  --provenance "Recorded by examples/engines/run_all.sh on $(date -u +%Y-%m-%d); check summaries: $(tr '\n' ';' < "$WORK/check-summaries.txt") times: $(tr '\n' ';' < "$WORK/times.txt")"

# 7) the whole run's time, measured here at the end, into the page (report.json's run_time)
echo "$(( $(date +%s) - START ))" > "$WORK/run_seconds.txt"
$PY examples/engines/report.py --from-json --run-time-file "$WORK/run_seconds.txt"
echo "run_all.sh: $(cat "$WORK/run_seconds.txt") s (in docs/engines.md, \"Full run time\")"
