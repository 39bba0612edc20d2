#!/usr/bin/env bash
# Verifying a stored blob: repro's store against sha256sum on the same file.
# Usage: bench/verify.sh [SIZE_BYTES]   (default 1 GiB)
# Prints both times, the ratio and repro's peak RSS. Warm page cache for both.
set -euo pipefail
size=${1:-1073741824}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
go build -o "$work/storeverify" ./bench/storeverify
"$work/storeverify" -dir "$work" -size "$size" -phase prepare
blob=$(ls "$work"/home/blobs/sha256/*)
cat "$blob" >/dev/null                  # warm the page cache
out=$( { /usr/bin/time -f 'peak_rss_kib=%M' "$work/storeverify" -dir "$work" -phase verify; } 2>&1 )
echo "$out"
repro_s=$(sed -n 's/.* in \([0-9.]*\) s.*/\1/p' <<<"$out")
rss=$(sed -n 's/peak_rss_kib=//p' <<<"$out")
start=$(date +%s.%N); sha256sum "$blob" >/dev/null; end=$(date +%s.%N)
sum_s=$(echo "$end - $start" | bc -l)
printf 'sha256sum:    %d bytes in %.3f s = %.2f GB/s\n' "$size" "$sum_s" "$(echo "$size / $sum_s / 1000000000" | bc -l)"
printf 'ratio (sha256sum / repro): %.2fx; repro peak RSS %d MiB\n' "$(echo "$sum_s / $repro_s" | bc -l)" "$((rss / 1024))"
