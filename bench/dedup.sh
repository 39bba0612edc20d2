#!/usr/bin/env bash
# Identical programs run once: repro score on n = 20 samples per task
# drawn with the duplicate rate of a real temperature-0.2 sample set (see
# bench/dedup_samples.py for the rate and its source), against the same
# programs made byte-distinct (no execution can be shared), and a second
# run of the same samples with --cache (verdicts of the first reused).
#
# Usage: bench/dedup.sh
#   REPRO_HOME  must hold the evaluator image and humanevalplus-v0.1.10
#   TASKS       the tasks scored (default 0-39)
#   N           samples per task (default 20)
#   RATE        share of samples repeating an earlier one of their task
#               (default 0.282)
#   PARALLEL    containers at once (default: repro's default)
#   ROUNDS      byte-distinct and shared runs alternate this many times
#               (default 3), so that both see the same load; the ratio is
#               of the medians
#
# Ground truth is computed (and cached) by a first, untimed run. Each timed
# run includes the self-check; the table gives the scoring stage's wall
# time, the executions it ran and the verdicts shared or reused.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks=${TASKS:-0-39}
n=${N:-20}
rate=${RATE:-0.282}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
home=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
blob=$home/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101
if [ ! -f "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
par=()
if [ -n "${PARALLEL:-}" ]; then par=(--parallel "$PARALLEL"); fi
/usr/bin/python3 bench/dedup_samples.py "$blob" "$work/shared.jsonl" "$tasks" "$n" "$rate" 1 0
/usr/bin/python3 bench/dedup_samples.py "$blob" "$work/unique.jsonl" "$tasks" "$n" "$rate" 1 1
samples=$(wc -l <"$work/shared.jsonl")
distinct=$(/usr/bin/python3 -c 'import json,sys; print(len({(d["task_id"], d["solution"]) for d in map(json.loads, open(sys.argv[1]))}))' "$work/shared.jsonl")
echo "== $samples samples (n=$n per task, tasks $tasks, repeat rate $rate): $distinct distinct programs; warm-up for ground truth, not timed"
"$work/repro" score --samples "$work/unique.jsonl" --tasks "$tasks" "${par[@]}" --json >/dev/null 2>>"$work/progress.jsonl"
printf '%-22s %10s %10s %14s %10s %10s\n' run scoring_s wall_s executions shared reused
row() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["scoring"]
print("%-22s %10.1f %10.1f %14d %10d %10d" % (sys.argv[2], s["wall_ns"] / 1e9, r["wall_seconds"], s["jobs"], s["shared_executions"], s.get("reused_verdicts", 0)))
PY
}
rounds=${ROUNDS:-3}
for r in $(seq "$rounds"); do
  "$work/repro" score --samples "$work/unique.jsonl" --tasks "$tasks" "${par[@]}" --json >"$work/unique-$r.json" 2>>"$work/progress.jsonl"
  row "$work/unique-$r.json" "byte-distinct $r"
  "$work/repro" score --samples "$work/shared.jsonl" --tasks "$tasks" "${par[@]}" --json >"$work/shared-$r.json" 2>>"$work/progress.jsonl"
  row "$work/shared-$r.json" "shared executions $r"
done
"$work/repro" score --samples "$work/shared.jsonl" --tasks "$tasks" "${par[@]}" --cache --json >"$work/cache.json" 2>>"$work/progress.jsonl"
row "$work/cache.json" "--cache, next run"
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
load = lambda p: json.load(open(p))
unique = [load("%s/unique-%d.json" % (work, r)) for r in range(1, rounds + 1)]
shared = [load("%s/shared-%d.json" % (work, r)) for r in range(1, rounds + 1)]
cache = load(work + "/cache.json")
def verdicts(r):
    ev = json.load(open(r["results_file"]))["eval"]
    return {t: [(e["base_status"], e["plus_status"]) for e in es] for t, es in ev.items()}
base = verdicts(unique[0])
flips = sum(a != b for r in unique[1:] + shared + [cache] for t, v in verdicts(r).items() for a, b in zip(base[t], v))
print("verdicts: %d of %d differ from the first byte-distinct run, over %d runs" % (flips, sum(map(len, base.values())), 2 * rounds))
wall = lambda rs: statistics.median(r["scoring"]["wall_ns"] / 1e9 for r in rs)
print("scoring time, medians: byte-distinct %.1f s, shared %.1f s (%.2fx; executions %.2fx), --cache %.1f s"
      % (wall(unique), wall(shared), wall(shared) / wall(unique), shared[0]["scoring"]["jobs"] / unique[0]["scoring"]["jobs"], cache["scoring"]["wall_ns"] / 1e9))
PY
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
