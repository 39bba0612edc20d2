#!/usr/bin/env bash
# Runs repro's whole test suite against real components: installs and starts
# them first (scripts/deps.sh), then vet, staticcheck and go test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export CI="${CI:-true}"   # tests that need an engine fail instead of skipping
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go tool staticcheck ./...   # pinned in go.mod (tool directive), bytes fixed by go.sum
echo "== go test"
go test -p 1 -timeout 75m -count=1 ./...
