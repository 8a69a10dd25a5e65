#!/usr/bin/env bash
# CI for one foreign engine on a small subset, so its adapter cannot rot silently:
#   examples/engines/ci_engine.sh ENGINE SUITE ONLY
# runs the engine's adapter (examples/engines/ENGINE/run) and refdecode under the engine's profile
# (`refdecode conformance serve --as ENGINE`, docs/engines.md) through the same cases, and passes when both fail
# exactly the same cases: the engine still differs from transformers 4.38.2 where, and only where, its named rules
# say it does. Exit 0 if the two agree, 1 if not. Run from the repository root, after ENGINE's setup.sh.
set -uo pipefail
engine=$1 suite=$2 only=$3
refdecode=${REFDECODE:-.venv/bin/refdecode}
tmp=$(mktemp -d)
"$refdecode" conformance check "$suite" --cmd "examples/engines/$engine/run" --only "$only" --timeout 300 > "$tmp/engine.txt"
"$refdecode" conformance check "$suite" --cmd "$refdecode conformance serve --as $engine" --only "$only" > "$tmp/profile.txt"
tail -1 "$tmp/engine.txt" | sed "s/^/$engine itself:        /"
tail -1 "$tmp/profile.txt" | sed "s/^/refdecode --as $engine: /"
grep -o '^FAIL [^ ]*' "$tmp/engine.txt" | sort > "$tmp/engine.ids"
grep -o '^FAIL [^ ]*' "$tmp/profile.txt" | sort > "$tmp/profile.ids"
if ! diff "$tmp/engine.ids" "$tmp/profile.ids" > "$tmp/diff.txt"; then
  echo "the engine and its profile fail different cases (< engine, > profile):" >&2
  cat "$tmp/diff.txt" >&2
  exit 1
fi
[ -s "$tmp/engine.txt" ] || { echo "the engine's check printed nothing" >&2; exit 1; }
echo "$engine and refdecode's $engine profile fail the same $(wc -l < "$tmp/engine.ids") cases"
