#!/usr/bin/env bash
# pass@k at scale: repro score and EvalPlus's evaluate side by side on
# real samples with n = 1, 5, 20, 100 samples per task (CodeGen-16B-mono at
# temperature 0.8, as microsoft/CodeT publishes them: bench/codet-samples.sh),
# scored on HumanEval+, rounds alternating, against the physical floor.
#
# Usage: bench/passk.sh
#   REPRO_HOME     must hold the evaluator image and humanevalplus-v0.1.10
#   EVALPLUS_TREE  a checkout of evalplus at 26d6d00 (EvalPlus's side;
#                  needs python3-numpy and python3-psutil on the host)
#   CODET          a local copy of CodeT's samples file (else downloaded;
#                  either way checked against its pinned SHA-256)
#   NS             the n values (default "1 5 20"; 100 is 16,400 samples,
#                  over an hour a side on a loaded 2-core machine)
#   SIDES          what runs each round (default "repro evalplus"):
#                  repro (repro's default runtime), repro-runc, repro-runsc,
#                  evalplus; e.g. NS=5 SIDES="repro-runsc repro-runc"
#   ROUNDS         rounds per n (default 1); the order of SIDES is reversed
#                  every other round, so that both see the same load
#   PARALLEL       containers / EvalPlus workers (default: number of CPUs)
#   BARE           the self-check's bare compute in CPU seconds, if measured
#                  already (bench/humaneval_bare.py's bare_cpu_seconds)
#   WARM           0: no untimed first run (the ground truth is cached already;
#                  EvalPlus's side computes its own, untimed, when absent)
#   OUT            keep every run's JSON, results and the table here
#                  (default: a temporary folder, removed at the end)
#   BIN            a repro binary to run instead of one built from this tree
#                  (an earlier build, to compare with: go build -o F ./cmd/repro
#                  in a checkout of it)
#
# Ground truth is computed and cached first, untimed, on both sides, so
# EvalPlus's time is `evaluate` with its ground-truth cache warm. repro's
# time is the whole command (container start, self-check, scoring,
# verification, writing the run). The floor (bench/programs_cpu.py) is the
# programs' own CPU time (each distinct program's deciding run, once) plus
# the self-check's bare compute (bench/humaneval_bare.py's CPU time, measured
# once at the start), over PARALLEL cores, or the longest single phase if more.
# One line per run, also in $OUT/passk.tsv (bench/passk_chart.py draws it):
#   n side round wall_s ms_per_sample peak_rss_mib jobs jobs_per_s floor_s
#   over_floor over_evalplus load1 verdicts host_cpu_s
# peak_rss_mib is repro's own RSS (/usr/bin/time), or EvalPlus's largest
# process; jobs are repro's executions (self-check and scoring), jobs_per_s
# the scoring stage's; verdicts compares every sample's base and plus status
# with EvalPlus's of the same round ("same", or the count that differ);
# host_cpu_s is repro's own CPU time, user and system (/usr/bin/time).
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1 # the upstream trees stay as pinned
cd "$(dirname "$0")/.."
parallel=${PARALLEL:-$(nproc)}
read -ra ns <<<"${NS:-1 5 20}"
read -ra sides <<<"${SIDES:-repro evalplus}"
rounds=${ROUNDS:-1}
if [ -n "${OUT:-}" ]; then
  work=$OUT; mkdir -p "$work"
else
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
home=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
blob=$home/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101
if [ ! -f "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
case " ${sides[*]} " in *" evalplus "*)
  if [ -z "${EVALPLUS_TREE:-}" ]; then
    echo "bench: set EVALPLUS_TREE to a checkout of evalplus at 26d6d00 (or SIDES without evalplus)" >&2
    exit 3
  fi;;
esac
if [ -n "${BIN:-}" ]; then
  cp -- "$BIN" "$work/repro"
else
  go build -o "$work/repro" ./cmd/repro
fi
# The untimed first run scores n = 1, whatever NS holds.
want=("${ns[@]}")
[[ " ${ns[*]} " == *" 1 "* ]] || want+=(1)
bench/codet-samples.sh ${CODET:+--from "$CODET"} "$work/samples" "${want[@]}"
# runc has open known escapes on some hosts: choosing it takes a recorded
# waiver in a trust file (docs/sandbox.md). This one is the benchmark's own.
expires=$(date -u -d '+30 days' +%F)
cat >"$work/trust-runc.json" <<JSON
{"version": 1, "keys": [], "image": {"require_signature": false, "runtime_waivers": [
 {"id": "CVE-2025-31133", "package": "runc", "reason": "benchmark of runc against runsc on published model output", "expires": "$expires"},
 {"id": "CVE-2025-52565", "package": "runc", "reason": "benchmark of runc against runsc on published model output", "expires": "$expires"},
 {"id": "CVE-2025-52881", "package": "runc", "reason": "benchmark of runc against runsc on published model output", "expires": "$expires"}]}}
JSON
repro_flags() { # sets flags: the runtime flags of side $1
  case $1 in
    repro) flags=();;
    repro-runc) flags=(--runtime runc --trust "$work/trust-runc.json");;
    repro-runsc) flags=(--runtime runsc);;
  esac
}
load() { cut -d' ' -f1 /proc/loadavg; }

if [ -n "${BARE:-}" ]; then
  bare=$BARE
  echo "== self-check's bare compute: $bare CPU-s, as BARE gives it"
else
  echo "== self-check's bare compute: canonical solutions on all inputs, one host process (load $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/python3 bench/humaneval_bare.py "$blob" | tee "$work/bare.txt"
  bare=$(sed -n 's/.*bare_cpu_seconds=\([0-9.]*\).*/\1/p' "$work/bare.txt")
fi

[ "${WARM:-1}" = 1 ] && echo "== ground truth, untimed, on every side: the first run of n=1 (load $(cut -d' ' -f1-3 /proc/loadavg))"
for side in "${sides[@]}"; do
  [ "${WARM:-1}" = 1 ] || break
  case $side in
    evalplus) /usr/bin/python3 bench/passk_evalplus.py "$EVALPLUS_TREE" "$blob" "$parallel" "$work/samples/codet-n1.jsonl" "$work/evalplus-gt.pickle" "$work/gt-verdicts.json" >/dev/null;;
    *) repro_flags "$side"
       if ! "$work/repro" score --samples "$work/samples/codet-n1.jsonl" --parallel "$parallel" "${flags[@]}" --json >/dev/null 2>"$work/warm.err"; then
         echo "bench: the untimed first run failed: $(tail -1 "$work/warm.err")" >&2
         exit 1
       fi;;
  esac
done

printf 'n\tside\tround\twall_s\tms_per_sample\tpeak_rss_mib\tjobs\tjobs_per_s\tfloor_s\tover_floor\tover_evalplus\tload1\tverdicts\thost_cpu_s\n' >"$work/passk.tsv"
for n in "${ns[@]}"; do
  samples=$work/samples/codet-n$n.jsonl
  count=$(grep -c . "$samples")
  echo "== n=$n: $count samples (load $(cut -d' ' -f1-3 /proc/loadavg))"
  for round in $(seq "$rounds"); do
    order=("${sides[@]}")
    if [ $((round % 2)) = 0 ]; then
      order=(); for ((i = ${#sides[@]} - 1; i >= 0; i--)); do order+=("${sides[i]}"); done
    fi
    for side in "${order[@]}"; do
      tag=n$n-$side-$round
      l=$(load)
      if [ "$side" = evalplus ]; then
        /usr/bin/time -f '%e %M %U %S' -o "$work/$tag.time" /usr/bin/python3 bench/passk_evalplus.py "$EVALPLUS_TREE" "$blob" "$parallel" "$samples" "$work/evalplus-gt.pickle" "$work/$tag.verdicts.json" >"$work/$tag.out"
      else
        repro_flags "$side"
        /usr/bin/time -f '%e %M %U %S' -o "$work/$tag.time" "$work/repro" score --samples "$samples" --parallel "$parallel" "${flags[@]}" --json >"$work/$tag.json" 2>"$work/$tag.err"
        results=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results_file"])' "$work/$tag.json")
        cp "$results" "$work/$tag.results.json"
      fi
      echo "$l" >"$work/$tag.load"
    done
    # One row per side of this round, now that every side of it has run.
    for side in "${sides[@]}"; do
      tag=n$n-$side-$round
      /usr/bin/python3 - "$work" "$tag" "$n" "$side" "$round" "$count" "$parallel" "$bare" <<'PY' | tee -a "$work/passk.tsv"
import json, os, subprocess, sys
work, tag, n, side, rnd, count, parallel, bare = sys.argv[1:9]
count = int(count)
wall, rss_kib, user, sys_ = open("%s/%s.time" % (work, tag)).read().split()[-4:]
host_cpu = "%.1f" % (float(user) + float(sys_))
load = open("%s/%s.load" % (work, tag)).read().strip()
ep_tag = "n%s-evalplus-%s" % (n, rnd)
ep = None
if os.path.exists("%s/%s.out" % (work, ep_tag)):
    ep = dict(kv.split("=") for kv in open("%s/%s.out" % (work, ep_tag)).read().split())
    ep_verdicts = json.load(open("%s/%s.verdicts.json" % (work, ep_tag)))
if side == "evalplus":
    wall = float(ep["eval_seconds"])  # ground truth cached: evaluate's own time
    row = [n, side, rnd, "%.1f" % wall, "%.1f" % (1000 * wall / count), "%.0f" % (int(rss_kib) / 1024),
           "-", "-", "-", "-", "1.00", load, "-", "-"]
else:
    wall = float(wall)
    run = json.load(open("%s/%s.json" % (work, tag)))
    sc = run["scoring"]
    jobs = sc["jobs"] + run["self_check"]["stats"]["jobs"]
    floor = subprocess.run(["/usr/bin/python3", "bench/programs_cpu.py", "%s/%s.json" % (work, tag), parallel, "-", bare],
                           capture_output=True, text=True, check=True).stdout
    f = dict(kv.split("=") for kv in floor.split())
    open("%s/%s.floor" % (work, tag), "w").write(floor)
    verdicts = "-"
    if ep:
        ev = json.load(open("%s/%s.results.json" % (work, tag)))["eval"]
        diff = 0
        for task, es in ev.items():
            for e, v in zip(es, ep_verdicts[task]):
                diff += [e["base_status"], e["plus_status"]] != v
        diff += abs(sum(map(len, ev.values())) - sum(map(len, ep_verdicts.values())))
        verdicts = "same" if diff == 0 else "%d differ" % diff
    row = [n, side, rnd, "%.1f" % wall, "%.1f" % (1000 * wall / count), "%.0f" % (int(rss_kib) / 1024),
           str(jobs), "%.1f" % (sc["jobs"] / (sc["wall_ns"] / 1e9)), f["floor_s"],
           "%.2f" % (wall / float(f["floor_s"])), "%.2f" % (wall / float(ep["eval_seconds"])) if ep else "-", load, verdicts, host_cpu]
print("\t".join(map(str, row)))
PY
    done
  done
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg); floor details in $work/*.floor"
