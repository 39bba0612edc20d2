#!/usr/bin/env bash
# MBPP+ end to end: repro score --dataset mbppplus on the 378 canonical
# solutions (as a samples file; ground truth cached by an untimed first run;
# self-check included), then EvalPlus's own scoring core on the same samples
# on the same machine.
#
# Usage: bench/mbpp.sh
#   REPRO_HOME    must hold the evaluator image (repro image build) and the
#                 dataset mbppplus-v0.2.0 (repro fetch); default as repro
#   PARALLEL      containers / EvalPlus workers (default: number of CPUs)
#   SAMPLES       a samples file (one sample per task) to score instead of
#                 the canonical solutions, e.g. the corpus's greedy
#                 qwen2.5-coder-7b-base-mbpp.jsonl; EvalPlus runs it
#                 unsandboxed, so only published model outputs
#   EVALPLUS_TREE a checkout of evalplus at 26d6d00; EvalPlus's run is
#                 skipped if unset (needs python3-numpy and python3-psutil
#                 on the host)
#
# Last, bench/programs_cpu.py: the floors that the programs' own CPU time
# sets under any scorer of them, without and with rechecks.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1 # the upstream trees stay as pinned
cd "$(dirname "$0")/.."
parallel=${PARALLEL:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
home=${REPRO_HOME:-}
data="$work/MbppPlus.jsonl.gz"
blob=$(ls "${home:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}"/blobs/sha256/af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63 2>/dev/null || true)
if [ -z "$blob" ]; then
  echo "bench: mbppplus-v0.2.0 is not in the store: run repro fetch mbppplus-v0.2.0" >&2
  exit 3
fi
cp "$blob" "$data"
if [ -n "${SAMPLES:-}" ]; then
  cp "$SAMPLES" "$work/samples.jsonl"
else
  /usr/bin/python3 bench/canonical_samples.py "$data" "$work/samples.jsonl"
fi

echo "== repro: warm-up (ground truth, not timed)"
"$work/repro" score --dataset mbppplus --samples "$work/samples.jsonl" --parallel "$parallel" --json >"$work/warm.json"
echo "== repro score --dataset mbppplus (ground truth cached, self-check included); load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "repro_wall_s=%e repro_peak_rss_kib=%M" -o "$work/time.txt" \
  "$work/repro" score --dataset mbppplus --samples "$work/samples.jsonl" --parallel "$parallel" --json >"$work/run.json"
cat "$work/time.txt"
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print("samples %d; pass@1 base %.1f plus %.1f; self-check %d/%d in %.1f s, scoring %.1f s; exact runs %d + %d; largest container peak %.0f MiB" % (
    s["samples"], 100 * s["base_pass_at_k"]["pass@1"], 100 * s["plus_pass_at_k"]["pass@1"],
    r["self_check"]["passed"], r["self_check"]["tasks"], r["self_check"]["stats"]["wall_ns"] / 1e9,
    r["scoring"]["wall_ns"] / 1e9, r["self_check"]["stats"].get("exact_runs", 0), r["scoring"].get("exact_runs", 0),
    r["container_peak_memory_bytes"] / 2**20))
PY

if [ -n "${EVALPLUS_TREE:-}" ]; then
  echo "== EvalPlus's scoring (evalplus@26d6d00 functions, $parallel workers, no sandbox); load $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f 'evalplus_wall_s=%e evalplus_peak_rss_kib=%M' /usr/bin/python3 bench/mbpp_evalplus.py "$EVALPLUS_TREE" "$data" "$parallel" "$work/samples.jsonl" | tee "$work/evalplus.txt"
  # EvalPlus's evaluate with its ground truth cached is its eval time.
  repro_s=$(sed -n 's/^repro_wall_s=\([0-9.]*\).*/\1/p' "$work/time.txt")
  evalplus_s=$(sed -n 's/.*eval_seconds=\([0-9.]*\).*/\1/p' "$work/evalplus.txt")
  echo "repro_over_evalplus=$(/usr/bin/python3 -c "print('%.2f' % ($repro_s / $evalplus_s))") (repro ${repro_s} s end to end, self-check included; EvalPlus ${evalplus_s} s)"
  # The programs' own CPU time over the cores: no scorer of them goes below it.
  /usr/bin/python3 bench/programs_cpu.py "$work/run.json" "$parallel" "$evalplus_s"
else
  echo "== EvalPlus skipped: set EVALPLUS_TREE to a checkout of evalplus at 26d6d00"
  /usr/bin/python3 bench/programs_cpu.py "$work/run.json" "$parallel"
fi
