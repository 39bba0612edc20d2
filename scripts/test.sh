#!/usr/bin/env bash
# Runs repro's whole test suite against real components: installs and starts
# them first (scripts/deps.sh), then gofmt, vet, staticcheck and go test.
#
# go vet and staticcheck run beside the tests, and the tests run in three
# lanes at once, each one package at a time (-p 1): cmd/repro (the largest
# package) with internal/edm; internal/codebench (the next) but four of its
# suites, with internal/release and internal/pickle; and those four suites,
# then every other package. Many of the engine's tests wait (a container's
# start, a program idle until its limit, a silent supervisor), and a third
# lane fills those waits. Measured on a 2-core machine at a load of 10 to
# 20 with the three lanes at once: cmd/repro 2147 s, codebench 1346 s and
# its four suites 1487 s, release 960 s, handoff 506 s, edm 344 s, sandbox
# 186 s, pickle 91 s, the rest about 220 s (the lanes 2502 s, 2408 s and
# 2475 s with edm where it is now). The lanes share the Docker engine;
# every test names its own containers, volumes and labels, so no lane
# sees another's. Each step prints how long it took, and each lane its
# packages' times and its slowest tests, so that the next slow step is
# visible in CI's log.
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
# lane NAME ARG...: one go test of ARG... (flags, then packages), one
# package at a time. Its log (scripts/testlog.py) gives each package's
# result and time as it ends, the output of what failed, and the lane's
# slowest tests at the end.
lane() {
	local name=$1 t0=$SECONDS rc=0
	shift
	go test -json -p 1 -timeout 80m -count=1 "$@" | python3 scripts/testlog.py "$name" || rc=$?
	echo "== go test, lane $name: $((SECONDS - t0)) s, exit $rc"
	return $rc
}

t0=$SECONDS
echo "== go vet, staticcheck, go test (three lanes)"
(
	t=$SECONDS rc=0
	lint >"$logs/lint" 2>&1 || rc=$?
	echo "== go vet and staticcheck: $((SECONDS - t)) s, exit $rc" >>"$logs/lint"
	exit $rc
) &
lint_pid=$!
mod=github.com/reprolab/repro
codebench=$mod/internal/codebench
# codebench's suites that run in the third lane, about 40 % of its time.
suites='^(TestCorpusMatchesEvalPlus|TestHostileSuite|TestClockIntegritySuite|TestClockControlsAreNeeded)$'
second=("$codebench" "$mod/internal/release" "$mod/internal/pickle")
first=("$mod/cmd/repro" "$mod/internal/edm")
mapfile -t others < <(go list ./... | grep -v -x -F "${first[@]/#/-e}" "${second[@]/#/-e}")
lane cmd/repro+ "${first[@]}" &
lane_a=$!
lane codebench+ -skip "$suites" "${second[@]}" &
lane_b=$!
(
	rc=0
	lane codebench-suites -run "$suites" "$codebench" || rc=1
	lane internal "${others[@]}" || rc=1
	exit $rc
) &
lane_c=$!

rc=0
wait "$lane_a" || rc=1
wait "$lane_b" || rc=1
wait "$lane_c" || rc=1
wait "$lint_pid" || rc=1
cat "$logs/lint"
echo "== go vet, staticcheck, go test: $((SECONDS - t0)) s"
echo "== all: $((SECONDS - t_all)) s"
exit $rc
