#!/usr/bin/env bash
# Installs and starts what repro and its tests need on a Debian bookworm
# machine, as root: the Docker engine (docker.io), debootstrap for the
# evaluator image, PyTorch/NumPy/SciPy from Debian for pickle and FID
# fixtures, PyYAML for the upstream MLLOG checker the agreement tests run,
# Python's cryptography for the independent DSSE verifier of run records,
# Slurm with munge for the handoff test, and chromium for the dashboard's
# browser test. Safe to run again:
# it installs only what is missing and starts dockerd only if no engine
# answers.
#   scripts/deps.sh          everything (tests)
#   scripts/deps.sh --run    only what `repro humaneval` needs (engine, debootstrap)
set -euo pipefail
want_all=1
[ "${1:-}" = "--run" ] && want_all=0

log() { printf 'deps: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
	log "run as root (it installs Debian packages and starts dockerd)"
	exit 3
fi

pkgs=(docker.io debootstrap ca-certificates openssl)
if [ "$want_all" = 1 ]; then
	pkgs+=(python3-torch python3-numpy python3-scipy python3-yaml python3-cryptography slurm-wlm munge shellcheck bc time chromium)
fi
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

if ! docker info >/dev/null 2>&1; then
	log "starting dockerd"
	setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		sleep 1
	done
	docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/dockerd.log"; exit 3; }
fi
log "ready: $(docker version --format 'engine {{.Server.Version}}, API {{.Server.APIVersion}}')"
