#!/usr/bin/env bash
# Time and peak memory of `repro mllog verify` on hostile logs of growing
# size: every record's value is an array nested 511 deep (the deepest the
# default limits accept below the record), logs of empty MLLOG lines (the
# most records per byte) and logs of the shortest records that parse.
# Logs past a limit (1<<20 records) are refused: their lines show the
# cost of reading up to the limit. Prints one line per file: shape,
# size, wall seconds, peak resident memory (GNU time's maximum RSS).
#
# Usage: bench/mllog-bombs.sh [REPRO_BINARY]
#   Without REPRO_BINARY it builds ./cmd/repro from this tree.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${1:-}
if [[ -z $bin ]]; then
	(cd "$root" && go build -o "$work/repro" ./cmd/repro)
	bin=$work/repro
fi
if [[ ! -x /usr/bin/time ]]; then
	echo "mllog-bombs: /usr/bin/time (Debian package time) is missing" >&2
	exit 3
fi

deep() { # deep FILE MEGABYTES
	python3 - "$1" "$2" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
line = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": ' + "[" * 511 + "]" * 511 + ', "metadata": {}}\n'
with open(path, "w") as f:
    n = 0
    while n < mb << 20:
        f.write(line)
        n += len(line)
PY
}
empty() { # empty FILE MEGABYTES
	python3 - "$1" "$2" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write(":::MLLOG \n" * ((mb << 20) // 10))
PY
}

tiny() { # tiny FILE MEGABYTES: the shortest records that parse, each with deviations
	python3 - "$1" "$2" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
line = ':::MLLOG {"time_ms":0,"key":"","value":0,"metadata":0,"x":0}\n'
with open(path, "w") as f:
    f.write(line * ((mb << 20) // len(line)))
PY
}

run() { # run SHAPE FILE...
	local shape=$1
	shift
	local bytes files=()
	for a in "$@"; do [[ $a == --* ]] || files+=("$a"); done
	bytes=$(cat "${files[@]}" | wc -c)
	/usr/bin/time -f '%e %M' -o "$work/time" "$bin" mllog verify "$@" >/dev/null 2>&1 || true
	read -r secs kb < <(tail -n 1 "$work/time")
	printf '%-12s %5d files %11d bytes %7.2f s %8.1f MiB peak RSS\n' "$shape" ${#files[@]} "$bytes" "$secs" "$(echo "$kb/1024" | bc -l)"
}

for mb in ${MLLOG_BOMB_SIZES:-8 26 64}; do
	deep "$work/deep.txt" "$mb"
	run deep-511 "$work/deep.txt"
done
deep "$work/d1.txt" 26
for i in 2 3 4; do cp "$work/d1.txt" "$work/d$i.txt"; done
run deep-511x4 "$work"/d[1-4].txt
for mb in ${MLLOG_BOMB_SIZES:-8 26 64}; do
	empty "$work/empty.txt" "$mb"
	run empty-lines "$work/empty.txt"
done
for mb in ${MLLOG_BOMB_SIZES:-8 26 64}; do
	tiny "$work/tiny.txt" "$mb"
	run tiny-records "$work/tiny.txt"
	run tiny-strict "$work/tiny.txt" --strict
done
