#!/usr/bin/env bash
# Samples files for pass@k at scale from real model output: CodeGen-16B-mono
# on HumanEval, 100 samples per task at temperature 0.8 (top-p 0.95, at most
# 300 tokens), as microsoft/CodeT publishes them (the samples its paper
# ranks). Source, pinned by commit and by the SHA-256 of the file's bytes:
#   https://github.com/microsoft/CodeT at 35f54d60b152cc31d134b788e702878ad613d9f7,
#   CodeT/data/generated_data/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl
#   (3,844,578 bytes; MIT licence). The samples are used as the model wrote
#   them; bench/codet_samples.py says how they are matched to task ids.
#
# Usage: bench/codet-samples.sh [--from FILE] OUTDIR [N ...]
#   --from FILE  a local copy of the file instead of downloading it (its
#                SHA-256 is checked all the same)
#   OUTDIR       gets codet-n$N.jsonl for each N (default 1 5 20 100): the
#                first N samples of every task, {"task_id", "solution"}
#   REPRO_HOME   must hold humanevalplus-v0.1.10 (repro fetch), for the task ids
#
# The file is model output that has not been reviewed: score it with repro
# (sandboxed). EvalPlus's side of bench/passk.sh runs it unsandboxed, as
# EvalPlus does; that is the one place it runs outside the sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
url=https://raw.githubusercontent.com/microsoft/CodeT/35f54d60b152cc31d134b788e702878ad613d9f7/CodeT/data/generated_data/HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl
sha=239b84349993c19a98bc4bf96a9a9ac47908125b3242db72788471e6c58728d5
from=
if [ "${1:-}" = --from ]; then from=$2; shift 2; fi
if [ $# -lt 1 ]; then
  echo "usage: bench/codet-samples.sh [--from FILE] OUTDIR [N ...]" >&2
  exit 2
fi
out=$1; shift
ns=("$@")
[ ${#ns[@]} -gt 0 ] || ns=(1 5 20 100)
home=${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}
blob=$home/blobs/sha256/272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101
if [ ! -f "$blob" ]; then
  echo "bench: humanevalplus-v0.1.10 is not in the store: run repro fetch humanevalplus-v0.1.10" >&2
  exit 3
fi
mkdir -p "$out"
src=$out/codet-codegen16B-temp0.8.jsonl
if [ -n "$from" ]; then
  cp "$from" "$src.tmp"
else
  curl -fsSL --max-filesize 8000000 -o "$src.tmp" "$url"
fi
got=$(sha256sum "$src.tmp" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  rm -f "$src.tmp"
  echo "bench: CodeT samples: SHA-256 $got, want $sha: not the pinned file" >&2
  exit 4
fi
mv "$src.tmp" "$src"
for n in "${ns[@]}"; do
  printf 'n=%s: ' "$n"
  /usr/bin/python3 bench/codet_samples.py "$src" "$blob" "$n" "$out/codet-n$n.jsonl"
done
