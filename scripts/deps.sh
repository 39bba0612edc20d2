#!/usr/bin/env bash
# Installs and starts what repro and its tests need on a Debian bookworm
# machine, as root: the Docker engine (docker.io), debootstrap for the
# evaluator image, PyTorch/NumPy/SciPy from Debian for pickle and FID
# fixtures, PyYAML for the upstream MLLOG checker the agreement tests run,
# Python's cryptography for the independent DSSE verifier of run records,
# Slurm with munge and Podman for the handoff tests, chromium for the
# dashboard's browser test, bsdtar (libarchive-tools) for the tar
# differential tests beside GNU tar and Python's tarfile, gVisor's runsc
# (built from the Go module proxy at the commit tools/gvisor pins, for its
# systrap platform) registered with dockerd as a second sandbox runtime,
# and cosign (the
# independent verifier of the evidence and release attestations, pinned by
# tools/cosign) with jq for the maintainer's bundle check. Safe to run
# again: it installs only what is missing,
# merges its runtime entry into the daemon configuration without touching
# other settings, makes a running dockerd reload it (SIGHUP: runtimes are
# reloaded without a restart) and starts dockerd only if no engine answers.
#   scripts/deps.sh          everything (tests)
#   scripts/deps.sh --run    only what `repro score` needs (engine, debootstrap)
#   scripts/deps.sh runsc    the engine and gVisor's runsc, registered as runtime "runsc"
# Building runsc needs the go command and the module proxy GOPROXY names.
set -euo pipefail
want_all=1 want_runsc=1
case "${1:-}" in
--run) want_all=0 want_runsc=0 ;;
runsc) want_all=0 ;;
esac

log() { printf 'deps: %s\n' "$*" >&2; }
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ "$(id -u)" != 0 ]; then
	log "run as root (it installs Debian packages and starts dockerd)"
	exit 3
fi

pkgs=(docker.io debootstrap ca-certificates openssl)
if [ "$want_runsc" = 1 ]; then
	pkgs+=(python3)
fi
if [ "$want_all" = 1 ]; then
	pkgs+=(python3-torch python3-numpy python3-scipy python3-yaml python3-cryptography slurm-wlm munge podman shellcheck bc time chromium libarchive-tools jq)
fi
# install_runsc builds gVisor's runsc at the commit tools/gvisor/go.mod
# pins, stamped with that module version, into RUNSC_DIR, unless the
# binary there already reports that version. Debian bookworm's runsc
# (0.0~20221219) predates the systrap platform; its ptrace platform costs
# a pipe round trip 68-130 us against 40 us on systrap, and a fork 38-41
# ms against 30 ms (docs/humaneval.md, what gVisor costs). About 2 CPU-minutes the first
# time on a machine.
RUNSC_DIR=/usr/local/lib/repro
install_runsc() {
	local version
	version=$(go -C "$root/tools/gvisor" list -m -f '{{.Version}}' gvisor.dev/gvisor)
	if [ "$("$RUNSC_DIR/runsc" --version 2>/dev/null | head -1)" = "runsc version $version" ]; then
		return
	fi
	log "building gVisor runsc $version from the Go module proxy"
	mkdir -p "$RUNSC_DIR"
	CGO_ENABLED=0 go -C "$root/tools/gvisor" build -trimpath \
		-ldflags="-X gvisor.dev/gvisor/runsc/version.version=$version" \
		-o "$RUNSC_DIR/runsc.tmp" gvisor.dev/gvisor/runsc
	mv -f "$RUNSC_DIR/runsc.tmp" "$RUNSC_DIR/runsc"
}

# register_runsc merges the runtime "runsc" into /etc/docker/daemon.json:
# the systrap platform (the KVM platform hangs at start on these
# machines) without its fast path (stub threads that spin for the
# kernel's answer take the CPU from the other sandboxes when there are
# as many as cores: HumanEval+ 37.2 s against 41.8 s on 2 cores), no
# network stack in the sandbox (needed by --network none), the
# container's seccomp profile applied inside the sandbox. It prints
# "changed" when it wrote the file.
register_runsc() {
	python3 - /etc/docker/daemon.json "$RUNSC_DIR/runsc" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        conf = json.load(f)
except FileNotFoundError:
    conf = {}
want = {"path": runsc, "runtimeArgs": ["--platform=systrap", "--systrap-disable-fast-path", "--network=none", "--oci-seccomp"]}
if conf.setdefault("runtimes", {}).get("runsc") != want:
    conf["runtimes"]["runsc"] = want
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("changed")
PY
}
# The Go builds (runsc, cosign) need only the go command and the module
# proxy: they run beside the Debian installs, which wait mostly on the
# network and dpkg, and their logs are printed when they end.
go_logs=$(mktemp -d)
trap 'rm -rf "$go_logs"' EXIT
runsc_pid="" cosign_pid=""
if [ "$want_runsc" = 1 ]; then
	install_runsc >"$go_logs/runsc" 2>&1 &
	runsc_pid=$!
fi
if [ "$want_all" = 1 ]; then
	# Built from the Go module proxy into the go command's build cache;
	# tests and scripts/check-bundle.sh find it with the same command.
	# About 6 CPU-minutes the first time on a machine, a lookup after.
	go -C "$root/tools/cosign" tool -n cosign >"$go_logs/cosign" 2>&1 &
	cosign_pid=$!
fi
# wait_build NAME PID: waits for a background build and stops on its failure.
wait_build() {
	if ! wait "$2"; then
		cat "$go_logs/$1" >&2
		log "building $1 failed (log above)"
		exit 3
	fi
	cat "$go_logs/$1" >&2
}

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

runsc_changed=""
if [ "$want_runsc" = 1 ]; then
	wait_build runsc "$runsc_pid"
	runsc_changed=$(register_runsc)
fi

if ! docker info >/dev/null 2>&1; then
	log "starting dockerd"
	setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		sleep 1
	done
	docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/dockerd.log"; exit 3; }
fi
if [ "$want_runsc" = 1 ]; then
	if [ -n "$runsc_changed" ] || ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
		# A reload, not a restart: running containers are untouched.
		pid=$(cat /var/run/docker.pid 2>/dev/null || pidof dockerd || true)
		[ -n "$pid" ] || { log "no dockerd process to reload /etc/docker/daemon.json"; exit 3; }
		log "registering runsc with dockerd (pid $pid) by SIGHUP"
		kill -HUP "$pid"
		for _ in $(seq 1 20); do
			docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' && break
			sleep 0.5
		done
	fi
	docker info --format '{{json .Runtimes}}' | grep -q -- '--oci-seccomp' || { log "dockerd did not register runsc; see its log"; exit 3; }
	log "runtime runsc: $("$RUNSC_DIR/runsc" --version | head -1)"
fi
if [ "$want_all" = 1 ]; then
	wait "$cosign_pid" || { cat "$go_logs/cosign" >&2; log "building cosign failed (log above)"; exit 3; }
	log "cosign: $(tail -1 "$go_logs/cosign")"
fi
log "ready: $(docker version --format 'engine {{.Server.Version}}, API {{.Server.APIVersion}}')"
