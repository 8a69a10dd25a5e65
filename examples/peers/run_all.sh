#!/usr/bin/env bash
# The page "Checking the code you learn from" (docs/checking-the-code-you-learn-from.md and its Chinese twin) from a
# fresh clone, in one command:
#   examples/peers/run_all.sh
# 1) refdecode's venv, 2) every teaching peer's setup.sh, 3) the suite's decode cases, 4) each peer's answers to them
# (record_responses.py: examples/peers/<peer>/responses.jsonl; the peer answers `unsupported` to what it does not
# take), 5) 100 answered fresh cases against the peer's profile (fresh_check.py: examples/peers/<peer>/fresh.json),
# 6) report.py. Each step's measured time goes to examples/peers/times.txt, and from there into the page.
# A peer is examples/peers/<peer>/ with a setup.sh and a run; PEER_TYPES overrides the case types asked.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
START=$(date +%s)
WORK="${RUN_ALL_WORK:-$ROOT/examples/peers/.run}"   # git-ignored
TIMES="$HERE/times.txt"
mkdir -p "$WORK"
PEERS=()
for p in llms-from-scratch litgpt llama-models llama2-py; do [ -x "$HERE/$p/setup.sh" ] && PEERS+=("$p"); done
for d in "$HERE"/*/; do
  p=$(basename "$d")
  [[ " ${PEERS[*]-} " == *" $p "* ]] || { [ -x "$d/setup.sh" ] && PEERS+=("$p"); }
done
TYPES=${PEER_TYPES:-engines_greedy,engines_beam_search,engines_llama_greedy,engines_llama_beam_search,gpt2_greedy,gpt2_sample,gpt2_beam_search,llama_sample}
FRESH_SEED=${FRESH_SEED:-$(date +%Y%m%d)}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
if grep -q avx512f /proc/cpuinfo; then simd="AVX-512"; elif grep -q avx2 /proc/cpuinfo; then simd="AVX2, no AVX-512"; else simd="no AVX2"; fi
echo "cpu: $cpu ($simd), $(nproc) cores, run on $(date -u +%Y-%m-%d)" > "$TIMES"
step() {   # step LABEL COMMAND...: run it, append "LABEL: N s" to the times file
  local label=$1 t0; shift; t0=$(date +%s)
  "$@"
  echo "$label: $(( $(date +%s) - t0 )) s" | tee -a "$TIMES"
}

# 1) refdecode
[ -x .venv/bin/python ] || { python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]"; }
PY=.venv/bin/python

# 2) the peers
for p in ${PEERS[@]+"${PEERS[@]}"}; do step "setup $p" bash -c "'$HERE/$p/setup.sh' > '$WORK/setup-$p.log' 2>&1"; done

# 3) the suite
step "export the suite" bash -c "rm -rf '$WORK/suite' && .venv/bin/refdecode conformance export '$WORK/suite' --only '$TYPES' > /dev/null"

# 4) each peer's answers, 5) its fresh cases against its profile
for p in ${PEERS[@]+"${PEERS[@]}"}; do
  step "record $p" $PY examples/engines/common/record_responses.py "$WORK/suite" \
    --cmd "examples/peers/$p/run 2>>'$WORK/adapter-$p.log'" --only "$TYPES" -o "examples/peers/$p/responses.jsonl"
  step "fresh $p" bash -c "$PY examples/engines/fresh_check.py --fresh 100 --answered 100 --seed '$FRESH_SEED' \
    --engines '$p' --suite '$WORK/fresh-$p' --json 'examples/peers/$p/fresh.json' > '$WORK/fresh-$p.txt' || true"
  tail -n 3 "$WORK/fresh-$p.txt"
done

# 6) the page, with the whole run's time
echo "the whole run: $(( $(date +%s) - START )) s" >> "$TIMES"
$PY examples/peers/report.py
