#!/bin/sh
# Measures the sandbox's costs on the local Docker engine and prints them:
#   BenchmarkContainerRun            one program per fresh container, create to removal
#   BenchmarkExecInRunningContainer  one more program through an engine exec
#   BenchmarkForkServer              one more program forked by an in-container supervisor
#   BenchmarkForkServerAmortized     the same with container start and teardown spread
#                                    over 164 programs (ms/program)
# Needs dockerd running and the evaluator image (built on first use, as root).
# Usage: bench/sandbox-overhead.sh [iterations]   (default 20)
set -eu
cd "$(dirname "$0")/.."
n="${1:-20}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
go test ./internal/sandbox/ -run '^$' -bench . -benchtime "${n}x" -count=1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
