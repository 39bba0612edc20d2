#!/usr/bin/env bash
# Scaling of repro score over sandbox containers: samples/s for 1, 2
# and all cores on a samples file with n = N samples per task.
#
# Usage: bench/humaneval-scaling.sh
#   REPRO_HOME  must hold the evaluator image and humanevalplus-v0.1.10
#   TASKS       the tasks scored (default 0-19: a subset, to keep it short
#               on a shared machine; 0-163 for all)
#   N           samples per task (default 10): per task N/2 canonical
#               solutions and N/2 wrong answers
#   LEVELS      the --parallel values (default "1 2 $(nproc)")
#
# Ground truth is computed (and cached) by a first, untimed run. Each timed
# run includes the self-check; samples/s is samples over the scoring stage's
# wall time, and the whole run's wall time is printed beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks=${TASKS:-0-19}
n=${N:-10}
levels=${LEVELS:-$(printf "%s\n" 1 2 "$(nproc)" | sort -nu | tr "\n" " ")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
home=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
blob=$home/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101
if [ ! -f "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
/usr/bin/python3 bench/humaneval_samples.py "$blob" "$work/samples.jsonl" "$tasks" "$n"
samples=$(wc -l <"$work/samples.jsonl")
echo "== $samples samples (n=$n per task, tasks $tasks); warm-up for ground truth, not timed"
"$work/repro" score --samples "$work/samples.jsonl" --tasks "$tasks" --json >/dev/null 2>>"$work/progress.jsonl"
printf '%-10s %10s %12s %10s\n' parallel samples/s scoring_s wall_s
for p in $levels; do
  "$work/repro" score --samples "$work/samples.jsonl" --tasks "$tasks" --parallel "$p" --json >"$work/run.json" 2>>"$work/progress.jsonl"
  /usr/bin/python3 - "$work/run.json" "$p" "$samples" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
scoring = r["scoring"]["wall_ns"] / 1e9
print("%-10s %10.1f %12.1f %10.1f" % (sys.argv[2], int(sys.argv[3]) / scoring, scoring, r["wall_seconds"]))
PY
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
