#!/usr/bin/env bash
# Measures `repro pickle scan` and `repro pickle convert` on an EDM-sized
# snapshot (about 223 MB, the size of edm-cifar10-32x32-cond-vp.pkl) made
# with Debian's python3-torch, and prints wall time, CPU time and peak RSS
# per run. Targets (issue 5): decode plus safetensors write under 1.5 s,
# at least 8 times faster than fickling's 12.9 s scan, peak memory under
# twice the file size.
#
#   bench/pickle-convert.sh            # generate into a temporary folder
#   REPRO_BENCH_DIR=/tmp/b bench/pickle-convert.sh   # reuse a folder
#   PARAMS=295900000 bench/pickle-convert.sh         # ImageNet-64 size
set -euo pipefail
cd "$(dirname "$0")/.."

py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
	echo "pickle-convert: python3-torch is missing (apt-get install python3-torch python3-numpy)" >&2
	exit 3
fi
if [ ! -x /usr/bin/time ]; then
	echo "pickle-convert: /usr/bin/time is missing (apt-get install time)" >&2
	exit 3
fi
work=${REPRO_BENCH_DIR:-$(mktemp -d)}
params=${PARAMS:-55700000}
runs=${RUNS:-3}
mkdir -p "$work/out"
pkl=$work/edm-sized-$params.pkl
if [ ! -f "$pkl" ]; then
	PYTHONDONTWRITEBYTECODE=1 "$py" internal/pickle/testdata/torchfix/fixtures.py bench "$work" "$params" >/dev/null
	mv "$work/edm-sized.pkl" "$pkl"
fi
go build -o "$work/repro" ./cmd/repro
size=$(stat -c %s "$pkl")
echo "input: $pkl, $size bytes"
cat "$pkl" >/dev/null # page cache warm: measure decoding, not the source disk

measure() { # label, command...
	local label=$1
	shift
	for run in $(seq "$runs"); do
		/usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" >/dev/null
		read -r wall rss user sys <"$work/time"
		awk -v l="$label" -v r="$run" -v w="$wall" -v m="$rss" -v u="$user" -v s="$sys" -v z="$size" 'BEGIN {
			printf "%-8s run %d: wall %.2f s, cpu %.2f s, peak RSS %.0f MiB (%.2f x file), %.1f x faster than fickling (12.9 s)\n",
				l, r, w, u + s, m / 1024, m * 1024 / z, 12.9 / w }'
	done
}
measure scan "$work/repro" pickle scan --profile edm-checkpoint "$pkl"
measure convert "$work/repro" pickle convert --profile edm-checkpoint --out "$work/out" "$pkl"
ls -l "$work/out/model.safetensors" | awk '{print "output: " $5 " bytes"}'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
if [ -z "${REPRO_BENCH_DIR:-}" ]; then
	rm -rf "$work"
fi
