#!/usr/bin/env bash
# Ctrl-C on a long run: starts repro humaneval on SAMPLES, sends SIGINT
# after each DELAY in turn (a new run each time), and prints how long the
# run took to exit, its exit status, the stage it was in, and how many of
# its sandbox containers were left behind (none is the contract).
#
# Usage: bench/interrupt.sh SAMPLES [DELAY ...]
#   SAMPLES     a samples file (for example bench/codet-samples.sh's
#               codet-n5.jsonl)
#   DELAY       seconds from the start to the signal (default: 30 90)
#   REPRO_HOME  must hold the evaluator image and the dataset; the stopped
#               runs stay in it, each resumable with --resume
#   PARALLEL    containers at once (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  echo "usage: bench/interrupt.sh SAMPLES [DELAY ...]" >&2
  exit 2
fi
samples=$(realpath "$1")
shift
delays=("$@")
[ ${#delays[@]} -gt 0 ] || delays=(30 90)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
printf 'delay\tstage\texit\tseconds to exit\tload\tcontainers left\n'
for d in "${delays[@]}"; do
  "$work/repro" humaneval --samples "$samples" --parallel "${PARALLEL:-2}" --json >"$work/out" 2>"$work/err" &
  pid=$!
  sleep "$d"
  stage=$(grep -o '"stage":"[a-z -]*"' "$work/err" | tail -1 | cut -d'"' -f4 || true)
  start=$(date +%s.%N)
  kill -INT "$pid"
  rc=0
  wait "$pid" || rc=$?
  end=$(date +%s.%N)
  left=$(docker ps -aq --filter "label=org.reprolab.repro.owner=$pid" | wc -l)
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$d" "${stage:-starting}" "$rc" "$(echo "$end - $start" | bc)" "$(cut -d' ' -f1 /proc/loadavg)" "$left"
done
