#!/usr/bin/env bash
# The real-output differential corpus in full: every task of every sample
# set of ../shared/corpus scored by repro and compared, task by task, with
# the verdicts EvalPlus@26d6d00's own evaluate gave (SOURCES.md there).
# CI scores a subset (every fourth task and the tasks whose EvalPlus
# verdicts depend on the machine); this scores all 1,248 programs and
# prints, per set, the time taken and pass@1 base/plus of repro and of
# EvalPlus, then every difference not in
# internal/codebench/testdata/corpus/known-differences.json.
#
# Usage: bench/corpus.sh [SET]   (SET: a file name of the corpus without
#                                 .jsonl, as TestCorpusMatchesEvalPlus names
#                                 its subtests; default all five)
#   Needs what the test needs: dockerd with runc and runsc, the shared data
#   beside the repository (or REPRO_SHARED_DATA).
set -euo pipefail
cd "$(dirname "$0")/.."
run='TestCorpusMatchesEvalPlus'
if [ $# -gt 0 ]; then run="$run/$1"; fi
echo "== load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
REPRO_CORPUS_FULL=1 REPRO_TEST_DISALLOW_SKIP=1 /usr/bin/time -f "corpus_wall_s=%e" \
  go test ./internal/codebench -run "^$run\$" -count=1 -p 1 -v -timeout 3h 2>&1 |
  grep -E 'corpus_test.go|known difference|^\s+(HumanEval|Mbpp)/|^(--- )?(PASS|FAIL|ok)|corpus_wall_s'
