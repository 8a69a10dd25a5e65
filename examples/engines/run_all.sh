#!/usr/bin/env bash
# Everything of docs/engines.md from a fresh clone, in one command:
#   examples/engines/run_all.sh
# 1) refdecode's venv, 2) every engine's setup.sh, 3) the suite (engines + gpt2_greedy + gpt2_sample +
# gpt2_beam_search + gpt2_group_beam_search; engines_124m after making the 124M-shaped checkpoint), 4) every adapter through `check`
# (summary lines kept) and through record_responses.py (answers kept: examples/engines/<engine>/responses.jsonl),
# 5) each bench script + refdecode's own, 6) report.py (diagnosis, reproduction, docs/engines.md, report.json).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
START=$(date +%s)
WORK="${RUN_ALL_WORK:-$ROOT/examples/engines/.run}"   # git-ignored
mkdir -p "$WORK"
: > "$WORK/times.txt"
ENGINES=(transformers-4.38.2 transformers-5 ctranslate2 onnxruntime-genai transformers-js llama-cpp keras-hub transformers-4.38.2-flax)

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

# 4) check + record (one engine at a time: the machine is shared)
: > "$WORK/check-summaries.txt"
for e in "${ENGINES[@]}"; do
  t0=$(date +%s)
  .venv/bin/refdecode conformance check "$WORK/suite" --cmd "examples/engines/$e/run" --only "$ONLY" \
    --timeout 300 > "$WORK/check-$e.txt" 2>&1 || true
  echo "$e: $(tail -n 1 "$WORK/check-$e.txt")" | tee -a "$WORK/check-summaries.txt"
  $PY examples/engines/common/record_responses.py "$WORK/suite" --cmd "examples/engines/$e/run" \
    --only engines_greedy,engines_beam_search,engines_124m_greedy,engines_124m_beam_search,gpt2_greedy,gpt2_sample,gpt2_beam_search \
    --rename gpt2_beam_search=engines_beam_search -o "$WORK/responses-$e.jsonl"
  $PY examples/engines/common/slim_responses.py "$WORK/responses-$e.jsonl" "examples/engines/$e/responses.jsonl"
  echo "run $e: $(( $(date +%s) - t0 )) s" | tee -a "$WORK/times.txt"
done

# 4b) fresh cases (new every run, the seed in the page): every engine's answers against its profile
FRESH_SEED=${FRESH_SEED:-$(date -u +%Y%m%d)}
$PY examples/engines/fresh_check.py --fresh 100 --seed "$FRESH_SEED" --suite "$WORK/fresh" \
  --engines "$(IFS=,; echo "${ENGINES[*]}"),ctranslate2-per-prompt" --json "$WORK/fresh.json" > "$WORK/fresh.txt" 2>&1 \
  && fresh_status=0 || fresh_status=$?   # 1: mismatches (listed on the page); anything else: the check failed
echo "fresh cases (seed $FRESH_SEED): exit $fresh_status, $(grep -c MISMATCH "$WORK/fresh.txt") mismatches" | tee -a "$WORK/times.txt"

# 5) speed (alternating engines, one at a time)
: > "$WORK/bench.jsonl"
for e in "${ENGINES[@]}"; do
  if [ -f "examples/engines/$e/bench.py" ]; then
    "examples/engines/$e/env/bin/python" "examples/engines/$e/bench.py" | tail -n 1 >> "$WORK/bench.jsonl" || true
  elif [ -f "examples/engines/$e/bench.mjs" ]; then
    (cd "examples/engines/$e" && node bench.mjs) | tail -n 1 >> "$WORK/bench.jsonl" || true
  fi
done

# 6) the report
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $PY examples/engines/report.py --bench "$WORK/bench.jsonl" --check-dir "$WORK" --refdecode-bench --fresh "$WORK/fresh.json" --run-seconds $(( $(date +%s) - START )) \
  --provenance "Recorded by examples/engines/run_all.sh on $(date -u +%Y-%m-%d); check summaries: $(tr '\n' ';' < "$WORK/check-summaries.txt") times: $(tr '\n' ';' < "$WORK/times.txt")"
echo "run_all.sh: $(( $(date +%s) - START )) s"
