#!/usr/bin/env bash
# Builds a repro release reproducibly and signs its provenance:
#   REPRO_RELEASE_KEY=release.key scripts/release.sh VERSION [OUT]
# OUT (default dist/VERSION) gets repro-linux-amd64 and repro-linux-arm64
# (-trimpath, no cgo, version and commit stamped by the linker, fixed
# GOAMD64/GOARM64 levels), sbom.cdx.json (CycloneDX SBOM of the Go modules,
# from the binaries' build information), provenance.sigstore.json (SLSA
# Provenance v1 over the binaries, signed with the release key as DSSE in a
# Sigstore bundle) and SHA256SUMS. The release key is an ed25519 key made
# by `repro keys new --out FILE`. It needs a clean git checkout (the commit
# is what the provenance names; GOFLAGS=-buildvcs=false is forced, so the
# commit comes from git, not from Go's VCS stamp) and the Go toolchain
# (GOTOOLCHAIN=local: the toolchain on PATH is the one named). Then it
# verifies the release with repro and, where COSIGN or `go -C tools/cosign
# tool -n cosign` gives one, with cosign. See docs/release.md.
# Exit 0: released; 2: usage; 3: a precondition is missing.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
	echo "usage: REPRO_RELEASE_KEY=FILE $0 VERSION [OUT]" >&2
	exit 2
fi
version=$1
cd "$(dirname "$0")/.."
root=$PWD
out=${2:-dist/$version}
log() { printf 'release: %s\n' "$*" >&2; }

key=${REPRO_RELEASE_KEY:-}
if [ -z "$key" ] || [ ! -f "$key" ]; then
	log "set REPRO_RELEASE_KEY to the release key (make one with: repro keys new --out release.key)"
	exit 3
fi
key=$(realpath "$key")
if ! commit=$(git rev-parse --verify HEAD 2>/dev/null); then
	log "not a git checkout: the provenance names the commit the release is built from"
	exit 3
fi
if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then
	log "the checkout has changes (git status): a release is built from a commit, nothing else"
	exit 3
fi
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out"/repro-linux-* "$out"/sbom.cdx.json "$out"/provenance.sigstore.json "$out"/SHA256SUMS

# Everything that could make two builds of one commit differ is fixed here.
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=readonly" GOAMD64=v1 GOARM64=v8.0 GOEXPERIMENT='' GOFIPS140=off
ldflags="-X main.Version=$version -X main.Commit=$commit"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
build_args=()
for platform in linux/amd64 linux/arm64; do
	goos=${platform%/*} goarch=${platform#*/}
	bin="$out/repro-$goos-$goarch"
	log "building $platform ($(go version | cut -d' ' -f3), commit $commit)"
	GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -o "$bin" ./cmd/repro
	build_args+=(--build-command "$platform=GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 go build -trimpath -ldflags '$ldflags' -o repro-$goos-$goarch ./cmd/repro")
done

host="$out/repro-$(go env GOHOSTOS)-$(go env GOHOSTARCH)"
[ -x "$host" ] || { log "no release binary runs on this host ($host)"; exit 3; }
"$host" release attest --key "$key" --version "$version" --commit "$commit" --started "$started" "${build_args[@]}" "$out" >&2
(cd "$out" && sha256sum repro-linux-amd64 repro-linux-arm64 sbom.cdx.json >SHA256SUMS)

# Check what was written, with repro and with cosign.
pub=$(mktemp)
trap 'rm -f "$pub"' EXIT
openssl pkey -in "$key" -pubout -out "$pub"
"$host" release verify --key "$pub" "$out" >&2
cosign=${COSIGN:-}
if [ -z "$cosign" ] && [ -f "$root/tools/cosign/go.mod" ]; then
	cosign=$(go -C "$root/tools/cosign" tool -n cosign 2>/dev/null || true)
fi
if [ -n "$cosign" ]; then
	for b in repro-linux-amd64 repro-linux-arm64; do
		"$cosign" verify-blob-attestation --key "$pub" --insecure-ignore-tlog --type slsaprovenance1 \
			--bundle "$out/provenance.sigstore.json" "$out/$b" >/dev/null 2>&1 ||
			{ log "cosign does not verify the provenance of $b"; exit 1; }
	done
	log "cosign verify-blob-attestation: the provenance of both binaries verifies"
else
	log "cosign not found (COSIGN, or go -C tools/cosign tool -n cosign): not checked with it"
fi
log "release $version in $out"
(cd "$out" && cat SHA256SUMS)
