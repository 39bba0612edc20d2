#!/usr/bin/env bash
# Times `repro mllog verify` on 160 MLPerf Training v2.1 logs of about
# 18 MB in all, made by copying the shared MiniGo and DLRM result logs
# (104 MiniGo and 56 DLRM copies). Target: under 1 s.
#
# With MLPERF_LOGGING_DIR set to a mlcommons/logging checkout it also
# times the upstream compliance checker on the same files, one Python
# process per log, two at a time (/usr/bin/python3 with python3-yaml).
#
# Usage: bench/mllog-verify.sh [LOGS_DIR]
#   LOGS_DIR defaults to $REPRO_MLPERF_LOGS, else the nearest
#   shared/data/mlperf-training-v2.1 above the repository.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1 # the upstream trees stay as pinned

root=$(cd "$(dirname "$0")/.." && pwd)
logs=${1:-${REPRO_MLPERF_LOGS:-}}
if [[ -z $logs ]]; then
	d=$root
	while [[ $d != / ]]; do
		if [[ -d $d/shared/data/mlperf-training-v2.1 ]]; then logs=$d/shared/data/mlperf-training-v2.1; break; fi
		d=$(dirname "$d")
	done
fi
if [[ -z $logs || ! -d $logs ]]; then
	echo "mllog-verify: MLPerf Training v2.1 logs not found; pass their directory or set REPRO_MLPERF_LOGS" >&2
	exit 3
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/logs"
(cd "$root" && go build -o "$work/repro" ./cmd/repro)

mapfile -t minigo < <(ls "$logs"/dgxa100_ngc22.09_tensorflow/minigo/result_*.txt)
mapfile -t dlrm < <(ls "$logs"/dgxa100_ngc22.04_merlin_hugectr/dlrm/result_*.txt)
for i in $(seq 0 103); do cp "${minigo[i % ${#minigo[@]}]}" "$work/logs/minigo_$i.txt"; done
for i in $(seq 0 55); do cp "${dlrm[i % ${#dlrm[@]}]}" "$work/logs/dlrm_$i.txt"; done
count=$(ls "$work/logs" | wc -l)
bytes=$(cat "$work/logs"/* | wc -c)
echo "logs: $count files, $bytes bytes"

# Warm the page cache, then take the best of five runs (wall clock; the
# CPU time of that run is printed too, as the machine may be shared).
"$work/repro" mllog verify --json "$work"/logs/*.txt >/dev/null 2>&1 || true
best= cpu= rc=0
TIMEFORMAT='%R %U %S'
for _ in 1 2 3 4 5; do
	t=$( { time "$work/repro" mllog verify --json "$work"/logs/*.txt >"$work/report.json" 2>/dev/null; } 2>&1 ) || rc=$?
	read -r real user sys <<<"$t"
	if [[ -z $best ]] || awk -v a="$real" -v b="$best" 'BEGIN { exit !(a < b) }'; then
		best=$real
		cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
	fi
done
echo "repro mllog verify: best of 5: ${best} s wall, ${cpu} s CPU (target: under 1 s)"
if [[ $rc -ne 0 ]] || ! grep -q '^  "compliant": true' "$work/report.json"; then
	echo "mllog-verify: expected every copied log to be compliant (exit $rc)" >&2
	exit 1
fi

if [[ -n ${MLPERF_LOGGING_DIR:-} ]]; then
	t=$( { time (ls "$work"/logs/*.txt | (cd "$MLPERF_LOGGING_DIR" && xargs -P 2 -I{} /usr/bin/python3 -m mlperf_logging.compliance_checker \
		--usage training --ruleset 2.1.0 --log_output /dev/null {} >/dev/null 2>&1)); } 2>&1 )
	read -r real user sys <<<"$t"
	echo "upstream compliance checker (one process per log, 2 at a time): ${real} s wall"
fi
