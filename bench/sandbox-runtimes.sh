#!/bin/sh
# Compares the sandbox's costs under runc and under runsc (gVisor) on the
# local Docker engine and prints them:
#   the sandbox benchmarks of bench/sandbox-overhead.sh under each runtime
#   (BenchmarkForkServer is the per-candidate overhead of the HumanEval+
#   execution model; BenchmarkForkServerAmortized spreads one container's
#   start and teardown over 164 programs, one HumanEval+ pass), and
#   200 fork+wait, 20,000 pipe round trips and a pure-Python loop inside a
#   container of each runtime,
#   and, when REPRO_BENCH_HOME names a REPRO_HOME with the evaluator image
#   pinned and humanevalplus-v0.1.10 fetched, the 164 HumanEval+ canonical
#   solutions end to end (repro score --canonical) under each runtime
#   (run once before, so that ground truth is cached, to time scoring only).
# Needs dockerd with runsc registered (bash scripts/deps.sh runsc) and the
# evaluator image (built on first use, as root).
# Usage: bench/sandbox-runtimes.sh [iterations]   (default 10)
set -eu
cd "$(dirname "$0")/.."
n="${1:-10}"
img=$(docker images -q reprolab/evaluator | head -1)
[ -n "$img" ] || { echo "no evaluator image: run 'repro image build' or the sandbox tests first" >&2; exit 3; }
probe='import os, time
t = time.perf_counter()
for _ in range(200):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
f = time.perf_counter() - t
r, w = os.pipe()
t = time.perf_counter()
for _ in range(20000):
    os.write(w, b"x" * 40)
    os.read(r, 100)
p = (time.perf_counter() - t) / 20000
t = time.perf_counter()
s = 0
for i in range(3000000):
    s += i
print("200 fork+wait %.3f s, 40-byte pipe write+read %.1f us, python loop %.3f s" % (f, p * 1e6, time.perf_counter() - t))'
for rt in runc runsc; do
	echo "== $rt (load $(cut -d' ' -f1-3 /proc/loadavg))"
	docker run --rm --runtime "$rt" --network none --pids-limit 2048 "$img" python3 -c "$probe"
	REPRO_BENCH_RUNTIME=$rt go test ./internal/sandbox/ -run '^$' -bench . -benchtime "${n}x" -count=1 | grep -E '^Benchmark'
done
if [ -n "${REPRO_BENCH_HOME:-}" ]; then
	bin=$(mktemp -d)/repro
	go build -o "$bin" ./cmd/repro
	for rt in runc runsc; do
		echo "== humaneval --canonical, 164 samples, $rt (load $(cut -d' ' -f1-3 /proc/loadavg))"
		REPRO_HOME="$REPRO_BENCH_HOME" "$bin" humaneval --canonical --runtime "$rt" | grep -E '^(passed|time):'
	done
	rm -rf "$(dirname "$bin")"
fi
