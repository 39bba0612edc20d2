#!/usr/bin/env bash
# Overhead of a sharded run: the same samples scored once on this machine
# (repro score) and as a job array of SHARDS shards on a private
# single-node Slurm cluster started here (repro shard plan + submit --wait,
# which merges), all array tasks at once sharing this machine's Docker
# engine.
#
# Usage: sudo bench/shard-overhead.sh   (slurmd must run as root)
#   REPRO_HOME  must hold the evaluator image and humanevalplus-v0.1.10
#   SAMPLES     a samples file to score (e.g. bench/codet-samples.sh's
#               codet-n100.jsonl: real model output); else made here:
#   TASKS       the tasks scored (default 0-39, a subset; with SAMPLES,
#               every task the file has)
#   N           samples per task (default 10: half canonical, half wrong)
#   SHARDS      number of shards (default 4)
#   OUT         a folder that keeps both runs' --json documents and results
#               files (one.json, one.results.json, merged.json,
#               merged.results.json); else nothing is kept
#
# Ground truth is cached by an untimed warm-up that scores the first sample
# of each task. The sharded time includes
# the plan (saving the image tarball, copying the binary), the array tasks
# (each loads the image, self-checks its tasks and scores) and the merge.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks=${TASKS:-}
[ -n "${SAMPLES:-}" ] || tasks=${tasks:-0-39}
n=${N:-10}
shards=${SHARDS:-4}
work=$(mktemp -d)
slurm=$work/slurm
cleanup() {
  sh internal/testenv/start-slurm.sh stop "$slurm" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/repro" ./cmd/repro
home=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
export REPRO_HOME=$home
blob=$home/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101
if [ ! -f "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
if [ -n "${SAMPLES:-}" ]; then
  cp -- "$SAMPLES" "$work/samples.jsonl"
  what="from $SAMPLES"
else
  /usr/bin/python3 bench/humaneval_samples.py "$blob" "$work/samples.jsonl" "$tasks" "$n"
  what="n=$n per task, half canonical, half wrong"
fi
# The warm-up's samples: the first of each task.
/usr/bin/python3 -c 'import json, sys
seen = set()
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as o:
    for line in f:
        if line.strip() and (t := json.loads(line)["task_id"]) not in seen:
            seen.add(t)
            o.write(line)' "$work/samples.jsonl" "$work/warm.jsonl"
samples=$(wc -l <"$work/samples.jsonl")
sel=()
[ -z "$tasks" ] || sel=(--tasks "$tasks")
read -r p1 p2 < <(/usr/bin/python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
sh internal/testenv/start-slurm.sh start "$slurm" 1 "$p1" "$p2" | tail -1 >"$work/slurm.env"
export SLURM_CONF=$slurm/slurm.conf PATH=$PATH:/usr/sbin:/sbin

echo "== $samples samples ($what; tasks ${tasks:-all}); warm-up for ground truth, not timed"
"$work/repro" score --samples "$work/warm.jsonl" "${sel[@]}" --json >/dev/null 2>>"$work/progress.jsonl"
echo "== one unsharded run; load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
"$work/repro" score --samples "$work/samples.jsonl" "${sel[@]}" --json >"$work/one.json" 2>>"$work/progress.jsonl"
t1=$(date +%s.%N)
echo "== $shards shards on one node; load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/repro" shard plan --samples "$work/samples.jsonl" "${sel[@]}" --shards "$shards" --out "$work/bundle" >/dev/null
t2=$(date +%s.%N)
REPRO_HOME=$work/merge-home "$work/repro" shard submit "$work/bundle" --wait --json >"$work/merged.json"
t3=$(date +%s.%N)
/usr/bin/python3 - "$work/one.json" "$work/merged.json" "$t0" "$t1" "$t2" "$t3" "$samples" "${OUT:-}" <<'PY'
import json, os, shutil, sys
one, merged = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if sys.argv[8]:
    os.makedirs(sys.argv[8], exist_ok=True)
    for side, path, doc in (("one", sys.argv[1], one), ("merged", sys.argv[2], merged)):
        shutil.copy(path, os.path.join(sys.argv[8], side + ".json"))
        shutil.copy(doc["results_file"], os.path.join(sys.argv[8], side + ".results.json"))
t0, t1, t2, t3 = map(float, sys.argv[3:7])
single, plan, array = t1 - t0, t2 - t1, t3 - t2
print("unsharded:        %6.1f s  (%.1f samples/s)" % (single, int(sys.argv[7]) / single))
print("sharded total:    %6.1f s  = plan %.1f s + array and merge %.1f s" % (plan + array, plan, array))
for s in merged["shards"]:
    print("  shard %d: %3d tasks, %4d samples, estimated %6.1f s CPU, wall %6.1f s" % (s["index"], s["tasks"], s["samples"], s["cost_seconds"], s["wall_seconds"]))
print("overhead:         %.2fx the unsharded run" % ((plan + array) / single))
a, b = json.load(open(one["results_file"]))["eval"], json.load(open(merged["results_file"]))["eval"]
key = lambda e: (e["solution"], e["base_status"], e["plus_status"], json.dumps(e["base_fail_tests"]), json.dumps(e["plus_fail_tests"]))
diff = [t for t in a if [key(e) for e in a[t]] != [key(e) for e in b.get(t, [])]] + [t for t in b if t not in a]
n = sum(len(v) for v in a.values())
print("verdicts:         %d compared, %d tasks differ %s; base passed %d / %d, plus %d / %d" % (n, len(diff), diff[:5],
      one["summary"]["base_passed"], merged["summary"]["base_passed"], one["summary"]["plus_passed"], merged["summary"]["plus_passed"]))
shown = 0
for t in diff:
    for i, (x, y) in enumerate(zip(a.get(t, []), b.get(t, []))):
        if key(x) != key(y) and shown < 20:
            shown += 1
            print("  %s completion %d: unsharded %s/%s %s %s, sharded %s/%s %s %s" % (t, i,
                  x["base_status"], x["plus_status"], str(x["base_fail_tests"][:1])[:60], str(x["plus_fail_tests"][:1])[:60],
                  y["base_status"], y["plus_status"], str(y["base_fail_tests"][:1])[:60], str(y["plus_fail_tests"][:1])[:60]))
PY
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
