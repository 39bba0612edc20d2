#!/usr/bin/env bash
# Measures `repro pickle scan --json` on small hostile files whose cost grew
# with something other than their size (issue 11) and prints, per file, its
# size, wall time, peak RSS and the bytes of JSON printed. Each bomb comes
# at several sizes, so that cost can be read against size.
#
#   bench/pickle-bombs.sh                       # build repro from this tree
#   REPRO_BIN=/path/to/repro bench/pickle-bombs.sh   # measure another build
#   KEY_DEPTHS="16 20" ZIP_ENTRIES="100" REPORT_DEPTHS="12" bench/pickle-bombs.sh
#
# keys:   dict key = tuple nested D deep holding the level below twice
# zip:    N central-directory entries pointing at one 1 MiB record
# report: a tuple nested D deep holding the level below twice, over
#         one tensor (the scan report lists every path)
# A limit of 8 GB of virtual memory (ulimit -v) protects the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/time ]; then
	echo "pickle-bombs: /usr/bin/time is missing (apt-get install time)" >&2
	exit 3
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${REPRO_BIN:-}
if [ -z "$bin" ]; then
	go build -o "$work/repro" ./cmd/repro
	bin=$work/repro
fi
printf '%-8s %-8s %10s %9s %10s %12s %s\n' bomb param bytes wall-s peak-MB json-bytes verdict
run() { # kind, param
	local f=$work/$1-$2
	python3 bench/pickle_bombs.py "$1" "$2" "$f"
	local t
	(ulimit -v 8000000; /usr/bin/time -o "$work/time" -f '%e %M' "$bin" pickle scan --json "$f" >"$work/out.json" 2>/dev/null) || true
	t=$(tail -1 "$work/time")
	local verdict
	verdict=$(grep -o '"verdict": *"[a-z]*"' "$work/out.json" | head -1 | sed 's/.*"\([a-z]*\)"$/\1/')
	printf '%-8s %-8s %10s %9s %10s %12s %s\n' "$1" "$2" "$(stat -c %s "$f")" "${t% *}" "$(( ${t#* } / 1024 ))" "$(stat -c %s "$work/out.json")" "${verdict:-none}"
}
for d in ${KEY_DEPTHS:-18 20 22 24 26}; do run keys "$d"; done
for n in ${ZIP_ENTRIES:-1000 10000 50000}; do run zip "$n"; done
for d in ${REPORT_DEPTHS:-12 16 18 20}; do run report "$d"; done
