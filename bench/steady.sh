#!/usr/bin/env bash
# Verdicts that do not depend on the machine's load: the canonical
# solutions and the example samples are each scored twice, the second time
# under heavy CPU load (LOAD busy loops, started for that run and stopped
# after it), and `repro runs diff` counts the tasks whose verdict flipped
# between the two runs (expected: 0).
#
# Usage: bench/steady.sh
#   REPRO_HOME  must hold the evaluator image and humanevalplus-v0.1.10
#   TASKS       the tasks of the canonical set (default: all 164)
#   LOAD        busy loops during the second runs (default: 4 per core)
#
# Ground truth is computed (and cached) by a first, untimed run.
set -euo pipefail
cd "$(dirname "$0")/.."
load=${LOAD:-$(($(nproc) * 4))}
work=$(mktemp -d)
loaders=()
stop_load() {
  for p in "${loaders[@]}"; do kill "$p" 2>/dev/null || true; done
  loaders=()
}
trap 'stop_load; rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
export REPRO_HOME=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
canon=(--canonical)
if [ -n "${TASKS:-}" ]; then canon+=(--tasks "$TASKS"); fi
examples=(--samples examples/humaneval-samples.jsonl --tasks "0,2,12,32,53,55")
score() { "$work/repro" score "$@" --json 2>>"$work/progress.jsonl" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["run_id"], r["scoring"]["wall_ns"]/1e9)'; }
echo "== warm-up for ground truth, not timed"
score "${canon[@]}" >/dev/null
printf '%-10s %-10s %10s %10s %8s\n' set loops quiet_s loaded_s flipped
for set in canonical examples; do
  if [ "$set" = canonical ]; then args=("${canon[@]}"); else args=("${examples[@]}"); fi
  read -r a wa < <(score "${args[@]}")
  for _ in $(seq "$load"); do
    (while :; do :; done) &
    loaders+=($!)
  done
  read -r b wb < <(score "${args[@]}")
  stop_load
  flips=$("$work/repro" runs diff "$a" "$b" --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["flipped"]))')
  printf '%-10s %-10s %10.1f %10.1f %8s\n' "$set" "0/$load" "$wa" "$wb" "$flips"
done
echo "machine: $(nproc) cores, load now $(cut -d' ' -f1-3 /proc/loadavg) (busy loops stopped)"
