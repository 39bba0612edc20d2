#!/bin/sh
# What fresh namespaces per job would cost under runc and runsc: starts a job
# (a fork) bare, in a fresh user, mount, IPC, UTS and network namespace with
# its own /tmp, and with a PID namespace too, alternating, inside a container
# of the evaluator image run as the sandbox runs its programs (uid 65532,
# every capability dropped, no_new_privs, read-only root, tmpfs /tmp), and
# prints the median wall and CPU milliseconds of each (bench/job_namespaces.py).
# The container runs with seccomp unconfined, since repro's profile refuses
# namespaces to every process: this measures the mechanism, not a build of it.
# Needs dockerd with runsc registered (bash scripts/deps.sh) and the
# evaluator image.
# Usage: bench/job-namespaces.sh [rounds]   (default 60)
set -eu
cd "$(dirname "$0")/.."
n="${1:-60}"
img=$(docker images -q reprolab/evaluator | head -1)
[ -n "$img" ] || { echo "no evaluator image: run 'repro image build' or the sandbox tests first" >&2; exit 3; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rt in runc runsc; do
  echo "== $rt"
  docker run --rm --runtime "$rt" --network none --user 65532:65532 --cap-drop ALL \
    --security-opt no-new-privileges --security-opt seccomp=unconfined --read-only --tmpfs /tmp \
    -v "$PWD/bench/job_namespaces.py:/b.py:ro" "$img" python3 -I /b.py "$n"
done
