#!/bin/sh
# Writes groundtruth-seconds.tsv: per HumanEval+ task, the canonical
# solution's measured seconds over its base inputs and over its plus
# inputs, read from a ground-truth cache exactly as Truth.CachedSeconds
# reads it (the sums of the "times" of each phase of N.json; a task whose
# canonical solution failed has no line). The committed file was made on
# the 2-core build machine (AMD EPYC) from the cache that the n = 100
# pass@k bench computed there on 2026-12-07 (any `repro score --dataset
# humanevalplus` run computes it; humanevalplus-v0.1.10, harness
# 04f68fd56e2f..., evaluator image sha256:879bd2bf9121..., cache format 2,
# whose N.json files format 3 keeps):
#
#   sh groundtruth-seconds.sh \
#     $REPRO_HOME/state/humaneval/truth-bd61b5cb82e86658c6bc8ce2906ca4b28d0ca99e9c2409a7b9d70b0953ff7483 \
#     > groundtruth-seconds.tsv
#
# Needs jq.
set -eu
cd "$1"
i=0
while [ -f "$i.json" ]; do
  jq -r 'select(.error == null) | [.task, (([.base.times[]?] | add) // 0), (([.plus.times[]?] | add) // 0)] | @tsv' "$i.json"
  i=$((i + 1))
done
