#!/bin/bash
# edm-gpu-check: run repro's trusted EDM runtime once on a GPU, with a tiny
# network, EDM's real sampler, a few images and the FID of that tiny set,
# through the same code path as `repro edm fid` (pins, sealed memory files,
# re-hash before pickle.load, GPU preflight, features, FID in Go), both
# unpickling and --safe. Then time the Go FID statistics at dimension 2048.
#
#   bench/edm-gpu-check.sh prepare [EDM-CHECKOUT]   here: build the test binary
#        into .edmgpu/ (git-ignored through .git/info/exclude) and copy a
#        checkout of NVlabs/edm next to it; without one, the stand-in tree of
#        internal/edm/testdata/edmsrc is used
#   bench/edm-gpu-check.sh run                      on the GPU machine, from the
#        repository root; results go to $OUT (default /tmp/edm-gpu-check)
#
# Environment: REPRO_EDM_PYTHON (interpreter with CUDA PyTorch; default the
# python3 on PATH), REPRO_EDM_GPU (1, the default, keeps the whole GPU
# preflight; 0 runs on the CPU to try the script without a GPU).
set -u -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/.edmgpu

case "${1:-}" in
prepare)
	exclude=$(git -C "$root" rev-parse --git-path info/exclude)
	case "$exclude" in /*) ;; *) exclude=$root/$exclude ;; esac
	grep -qxF '/.edmgpu/' "$exclude" 2>/dev/null || echo '/.edmgpu/' >>"$exclude"
	rm -rf "$cache" && mkdir -p "$cache"
	(cd "$root" && CGO_ENABLED=0 go test -c -o "$cache/edm.test" ./internal/edm) || exit 1
	if [ -n "${2:-}" ]; then
		mkdir -p "$cache/edm-src"
		(cd "$2" && tar --exclude=./.git --exclude='__pycache__' -cf - .) | tar -xf - -C "$cache/edm-src" || exit 1
	fi
	du -sh "$cache"
	;;
run)
	out=${OUT:-/tmp/edm-gpu-check}
	mkdir -p "$out"
	py=${REPRO_EDM_PYTHON:-$(command -v python3)}
	src=$cache/edm-src
	[ -d "$src" ] || src=$root/internal/edm/testdata/edmsrc
	{
		echo "== nvidia-smi"; nvidia-smi 2>&1
		echo "== python"; "$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
		echo "== source $src"
	} | tee "$out/env.txt"
	cd "$root/internal/edm" || exit 1
	start=$(date +%s)
	REPRO_EDM_SOURCE=$src REPRO_EDM_PYTHON=$py REPRO_EDM_GPU=${REPRO_EDM_GPU:-1} REPRO_EDM_REPORT=$out \
		timeout 420 "$cache/edm.test" -test.run '^TestRuntimeWithEDMSource$' -test.v 2>&1 | tee "$out/runtime.log"
	rc=$?
	echo "runtime check: exit $rc in $(($(date +%s) - start)) s" | tee -a "$out/runtime.log"
	timeout 150 "$cache/edm.test" -test.run '^$' -test.bench '^Benchmark(FrechetDistance|ReadFeatures)' -test.benchtime 1x 2>&1 | tee "$out/bench.txt"
	exit $rc
	;;
*)
	sed -n '2,20p' "$0" >&2
	exit 2
	;;
esac
