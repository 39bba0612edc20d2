#!/usr/bin/env bash
# Runs repro's whole test suite against real components: installs and starts
# them first (scripts/deps.sh), then vet, staticcheck and go test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export CI="${CI:-true}"
# Any skip is a failure (internal/testenv); only the GPU-only EDM test may
# skip, and only on a machine without a GPU.
export REPRO_TEST_DISALLOW_SKIP=1
# Unmodified upstream trees the agreement tests run next to ours (paths
# relative to the repository, made absolute for tests in other folders).
export REPRO_TEST_EVALPLUS_TREE="${REPRO_TEST_EVALPLUS_TREE:-$(realpath -m ../shared/engines/evalplus-26d6d00)}"
# Tests that leave artifacts (the dashboard's browser screenshot) also
# write them here.
export REPRO_TEST_ARTIFACTS="${REPRO_TEST_ARTIFACTS:-$PWD/test-artifacts}"
# The upstream trees are read, never written: no Python run of the tests
# leaves bytecode in them (their tree digests are pinned).
export PYTHONDONTWRITEBYTECODE=1
export MLPERF_LOGGING_DIR="${MLPERF_LOGGING_DIR:-$(realpath -m ../shared/engines/mlcommons-logging-7bbf7926)}"
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go tool staticcheck ./...   # pinned in go.mod (tool directive), bytes fixed by go.sum
echo "== go test"
go test -p 1 -timeout 75m -count=1 ./...
