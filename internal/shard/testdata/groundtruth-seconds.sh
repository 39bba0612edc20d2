#!/bin/sh
# Writes groundtruth-seconds.tsv: per HumanEval+ task, the canonical
# solution's measured seconds over all its base and plus inputs, read from a
# ground-truth cache exactly as Truth.CachedSeconds reads it (the sum of the
# "times" of both phases of N.json; a task whose canonical solution failed
# has no line). The committed file was made on the 2-core build machine (AMD
# EPYC) from the cache that a full HumanEval+ run of the test suite's
# REPRO_HOME computed there on 2026-12-05 (any `repro score --dataset
# humanevalplus` run computes it; humanevalplus-v0.1.10, harness
# 48be470bf001..., evaluator image sha256:879bd2bf9121...):
#
#   sh groundtruth-seconds.sh \
#     $REPRO_HOME/state/humaneval/truth-02ed92be1ebab8dabf0a789892d9ea502e97e504d380c2bb9291d4bdf1bfbb59 \
#     > groundtruth-seconds.tsv
#
# Needs jq.
set -eu
cd "$1"
ls | grep -E '^[0-9]+\.json$' | sort -n | xargs jq -r \
  'select(.error == null) | [.task, ((([.base.times[]?] + [.plus.times[]?]) | add) // 0)] | @tsv'
