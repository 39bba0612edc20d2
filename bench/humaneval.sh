#!/usr/bin/env bash
# repro score end to end, next to (a) the bare compute and (b) EvalPlus's
# own scoring of the same samples on the same machine.
#
# Usage: bench/humaneval.sh
#   REPRO_HOME    must hold the evaluator image (repro image build) and the
#                 dataset humanevalplus-v0.1.10 (repro fetch); default as repro
#   PARALLEL      containers / EvalPlus workers (default: number of CPUs)
#   EVALPLUS_TREE a checkout of evalplus at 26d6d00 for (b); skipped if unset
#                 (needs python3-numpy and python3-psutil on the host)
#   RUNTIME       the container runtime (runc, the default, or runsc: gVisor)
#   SAMPLES       a samples file (one sample per task) to score instead of
#                 the canonical solutions, e.g. the corpus's greedy
#                 ldb-seed-gpt-3.5-turbo-0613-he.jsonl; EvalPlus runs it
#                 unsandboxed, so only published model outputs
#   BASELINE      a git revision (e.g. main): its repro is timed too, right
#                 before this tree's, ROUNDS times in turn (default 1), so
#                 that before and after see the same load
#
# The samples are the 164 canonical solutions, one per task, as a samples
# file, unless SAMPLES names others. Ground truth is computed (and cached) by a first, untimed run; the
# timed run includes the self-check. Peak memory: repro's RSS from
# /usr/bin/time, plus each container's cgroup peak as the run reports it
# (the highest container peak times PARALLEL, an upper bound of the sum).
# Last, bench/programs_cpu.py: the floor that the programs' own CPU time and
# the self-check's bare compute set under any scorer of them, and repro's
# ratio to it.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1 # the upstream trees stay as pinned
cd "$(dirname "$0")/.."
parallel=${PARALLEL:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
rounds=${ROUNDS:-1}
runtime=(${RUNTIME:+--runtime "$RUNTIME"})
builds=(repro)
if [ -n "${BASELINE:-}" ]; then
  mkdir "$work/baseline"
  git archive "$BASELINE" | tar -x -C "$work/baseline"
  (cd "$work/baseline" && go build -o "$work/repro-baseline" ./cmd/repro)
  builds=(repro-baseline repro)
fi
home=${REPRO_HOME:-}
data="$work/HumanEvalPlus.jsonl.gz"
blob=$(ls "${home:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}"/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101 2>/dev/null || true)
if [ -z "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
cp "$blob" "$data"
if [ -n "${SAMPLES:-}" ]; then
  cp "$SAMPLES" "$work/samples.jsonl"
else
  /usr/bin/python3 bench/canonical_samples.py "$data" "$work/samples.jsonl"
fi

# `humaneval`, the alias of `score`, is the name every BASELINE revision knows.
for b in "${builds[@]}"; do
  echo "== $b: warm-up (ground truth, not timed)"
  "$work/$b" humaneval --samples "$work/samples.jsonl" --parallel "$parallel" "${runtime[@]}" --json >"$work/warm.json"
done

for round in $(seq "$rounds"); do
  for b in "${builds[@]}"; do
    echo "== $b, round $round: repro score ${RUNTIME:-runc} (ground truth cached, self-check included); load $(cut -d' ' -f1-3 /proc/loadavg)"
    /usr/bin/time -f "${b//-/_}_wall_s=%e ${b//-/_}_peak_rss_kib=%M" -o "$work/time.txt" \
      "$work/$b" humaneval --samples "$work/samples.jsonl" --parallel "$parallel" "${runtime[@]}" --json >"$work/run.json"
    cat "$work/time.txt"
    /usr/bin/python3 - "$work/run.json" "$parallel" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = int(sys.argv[2])
s = r["summary"]
print("pass@1 base %.1f plus %.1f; self-check %.1f s, scoring %.1f s; exact runs %d + %d; container peak %.0f MiB (x%d = %.0f MiB)" % (
    100 * s["base_pass_at_k"]["pass@1"], 100 * s["plus_pass_at_k"]["pass@1"],
    r["self_check"]["stats"]["wall_ns"] / 1e9, r["scoring"]["wall_ns"] / 1e9,
    r["self_check"]["stats"].get("exact_runs", 0), r["scoring"].get("exact_runs", 0),
    r["container_peak_memory_bytes"] / 2**20, p, p * r["container_peak_memory_bytes"] / 2**20))
PY
  done
done

echo "== (a) bare compute: canonical solutions on all inputs, one host process"
/usr/bin/time -f 'bare_peak_rss_kib=%M' /usr/bin/python3 bench/humaneval_bare.py "$data" | tee "$work/bare.txt"

if [ -n "${EVALPLUS_TREE:-}" ]; then
  echo "== (b) EvalPlus's scoring (evalplus@26d6d00 functions, $parallel workers, no sandbox)"
  /usr/bin/time -f 'evalplus_wall_s=%e evalplus_peak_rss_kib=%M' /usr/bin/python3 bench/humaneval_evalplus.py "$EVALPLUS_TREE" "$data" "$parallel" "$work/samples.jsonl" | tee "$work/evalplus.txt"
  # EvalPlus's evaluate with its ground truth cached is its eval time.
  repro_s=$(sed -n 's/^repro_wall_s=\([0-9.]*\).*/\1/p' "$work/time.txt")
  evalplus_s=$(sed -n 's/.*eval_seconds=\([0-9.]*\).*/\1/p' "$work/evalplus.txt")
  echo "repro_over_evalplus=$(/usr/bin/python3 -c "print('%.2f' % ($repro_s / $evalplus_s))") (repro ${repro_s} s end to end, self-check included; EvalPlus ${evalplus_s} s)"
  # The programs' own CPU time over the cores: no scorer of them goes below it.
  bare_s=$(sed -n 's/.*bare_cpu_seconds=\([0-9.]*\).*/\1/p' "$work/bare.txt")
  /usr/bin/python3 bench/programs_cpu.py "$work/run.json" "$parallel" "$evalplus_s" "$bare_s" "$repro_s"
else
  echo "== (b) skipped: set EVALPLUS_TREE to a checkout of evalplus at 26d6d00"
  bare_s=$(sed -n 's/.*bare_cpu_seconds=\([0-9.]*\).*/\1/p' "$work/bare.txt")
  repro_s=$(sed -n 's/^repro_wall_s=\([0-9.]*\).*/\1/p' "$work/time.txt")
  /usr/bin/python3 bench/programs_cpu.py "$work/run.json" "$parallel" - "$bare_s" "$repro_s"
fi
