#!/usr/bin/env bash
# Runs repro's whole test suite against real components: installs and starts
# them first (scripts/deps.sh), then gofmt, vet, staticcheck and go test.
#
# go vet and staticcheck run beside the tests, and the tests run in two
# lanes at once, each one package at a time (-p 1): cmd/repro (the largest
# package) with internal/handoff, internal/sandbox and internal/release in
# one, every other package (internal/codebench the largest) in the other,
# which balances the lanes' measured times (CI on a 2-core machine, both
# lanes at once: cmd/repro 1952 s, codebench 2313 s, release 251 s,
# sandbox 206 s, handoff 202 s, edm 138 s, the rest ~250 s). The lanes
# share the Docker engine; every test names its own containers, volumes
# and labels, so neither lane sees the other's. Each step prints how long
# it took, so that the next slow step is visible in CI's log.
#
# For the edit-test loop, `go test -short ./...` leaves out every test that
# needs the engine, Slurm, cosign, a browser or PyTorch, and the longest
# sweeps (internal/testenv.Heavy): nothing to install.
set -euo pipefail
cd "$(dirname "$0")/.."

# step NAME CMD... runs CMD and prints how long it took.
step() {
	local name=$1 t0=$SECONDS
	shift
	echo "== $name"
	"$@"
	echo "== $name: $((SECONDS - t0)) s"
}

t_all=$SECONDS
step deps bash scripts/deps.sh
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

# shellcheck disable=SC2317 # called through step
gofmt_check() {
	local unformatted
	unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
	if [ -n "$unformatted" ]; then
		echo "gofmt would change: $unformatted"
		return 1
	fi
}
step gofmt gofmt_check

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

lint() {
	go vet ./... && go tool staticcheck ./... # pinned in go.mod (tool directive), bytes fixed by go.sum
}
lane() { # lane NAME PKG...: one go test of PKG..., one package at a time
	local name=$1 t0=$SECONDS rc=0
	shift
	go test -p 1 -timeout 80m -count=1 "$@" || rc=$?
	echo "== go test, lane $name: $((SECONDS - t0)) s, exit $rc"
	return $rc
}

t0=$SECONDS
echo "== go vet, staticcheck, go test (two lanes)"
(
	t=$SECONDS rc=0
	lint >"$logs/lint" 2>&1 || rc=$?
	echo "== go vet and staticcheck: $((SECONDS - t)) s, exit $rc" >>"$logs/lint"
	exit $rc
) &
lint_pid=$!
first=(github.com/reprolab/repro/cmd/repro github.com/reprolab/repro/internal/handoff github.com/reprolab/repro/internal/sandbox github.com/reprolab/repro/internal/release)
mapfile -t others < <(go list ./... | grep -v -x -F "${first[@]/#/-e}")
lane cmd/repro+ "${first[@]}" &
lane_a=$!
lane internal "${others[@]}" &
lane_b=$!

rc=0
wait "$lane_a" || rc=1
wait "$lane_b" || rc=1
wait "$lint_pid" || rc=1
cat "$logs/lint"
echo "== go vet, staticcheck, go test: $((SECONDS - t0)) s"
echo "== all: $((SECONDS - t_all)) s"
exit $rc
