#!/usr/bin/env bash
# Checks an evidence bundle of `repro runs export` without repro's code:
# every signature with cosign verify-blob-attestation, offline (a trusted
# public key, no transparency log, no network), every file against the
# signed digests, and the image evidence against the signed provenance.
#   scripts/check-bundle.sh BUNDLE.tar TRUSTED.pub
# TRUSTED.pub is the lab's public run key (PEM), got over a channel you
# trust (`repro keys export` on the lab's machine). COSIGN names the cosign
# binary (default: cosign on PATH; scripts/deps.sh builds the pinned one,
# `go -C tools/cosign tool -n cosign` prints its path). Needs tar, jq,
# base64, sha256sum and cmp. Exit 0: every check passed; 1: one failed
# (named on stderr); 2: usage.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 BUNDLE.tar TRUSTED.pub" >&2
	exit 2
fi
bundle=$(realpath "$1") key=$(realpath "$2")
cosign=${COSIGN:-cosign}
record_type=https://reprolab.github.io/repro/run/v1
provenance_type=https://slsa.dev/provenance/v1
test_result_type=https://in-toto.io/attestation/test-result/v0.1
scan_type=https://github.com/reprolab/repro/attestation/vulnscan/v1

fail() {
	echo "REFUSED: $*" >&2
	exit 1
}
work=$(mktemp -d) log=$(mktemp)
trap 'rm -rf "$work" "$log"' EXIT
tar -xf "$bundle" -C "$work" --no-same-owner --no-same-permissions || fail "cannot unpack $bundle"
cd "$work"

# verify TYPE FLAG ATTESTATION BLOB: cosign checks the attestation's
# signature with the trusted key, its predicate type, and that BLOB's
# SHA-256 is one of its subjects.
verify() {
	"$cosign" verify-blob-attestation --key "$key" --insecure-ignore-tlog --type "$1" "$2" "$3" "$4" >>"$log" 2>&1 ||
		fail "cosign: $4 is not a subject of $3 ($1), or its signature does not verify: $(tail -1 "$log")"
}
# payload ENVELOPE-JSON: the in-toto statement an envelope (or a Sigstore
# bundle's envelope) carries, as cosign verified it.
payload() { jq -er 'if .dsseEnvelope then .dsseEnvelope.payload else .payload end' "$1" | base64 -d; }

[ -f signer.pub ] || fail "the bundle has no signer.pub"
cmp -s signer.pub "$key" || fail "signer.pub is not the trusted key"
if [ ! -f run/record.json ] || [ ! -f run/record.dsse.json ]; then
	fail "the bundle has no run/record.json and run/record.dsse.json"
fi

# The record: every file of the run, record.json and the attestations
# included, is a subject of the signed record, and nothing else is one.
verify "$record_type" --signature run/record.dsse.json run/record.json
files=$(cd run && find . -type f ! -path ./record.dsse.json | sed 's|^\./||' | LC_ALL=C sort)
subjects=$(payload run/record.dsse.json | jq -er '.subject[].name' | LC_ALL=C sort) || fail "run/record.dsse.json carries no in-toto statement with subjects"
[ "$files" = "$subjects" ] || fail "the run's files are not the signed record's subjects: $(diff <(echo "$subjects") <(echo "$files") | grep '^[<>]' | head -5 | tr '\n' ' ')"
while IFS= read -r f; do
	verify "$record_type" --signature run/record.dsse.json "run/$f"
done <<<"$files"
n=$(wc -l <<<"$files")
echo "record: $n files, each a subject of run/record.dsse.json, signed by the trusted key"

# The standard attestations: every output (every file but record.json and
# the attestations) is a subject of each.
outputs=$(grep -v -x -e record.json -e provenance.sigstore.json -e test-result.sigstore.json <<<"$files" || true)
for a in provenance.sigstore.json:$provenance_type test-result.sigstore.json:$test_result_type; do
	name=${a%%:*} type=${a#*:}
	[ -f "run/$name" ] || fail "run/$name is missing"
	verify "$type" --bundle "run/$name" "run/$(head -1 <<<"$outputs")"
	signed=$(payload "run/$name" | jq -er '.subject[].name' | LC_ALL=C sort) || fail "run/$name carries no in-toto statement with subjects"
	[ "$signed" = "$outputs" ] || fail "run/$name does not name exactly the run's outputs"
	while IFS= read -r f; do
		verify "$type" --bundle "run/$name" "run/$f"
	done <<<"$outputs"
	echo "$name: $type over $(wc -l <<<"$outputs") outputs, signed by the trusted key"
done

# The image evidence, when the run used the evaluator image: the SBOM is
# the one the provenance names, and the scan is signed and about the image
# the provenance names.
dep() { payload run/provenance.sigstore.json | jq -r --arg n "$1" '.predicate.buildDefinition.resolvedDependencies[]? | select(.name == $n) | .digest.sha256' || fail "run/provenance.sigstore.json cannot be read"; }
if [ -f image/sbom.cdx.json ]; then
	want=$(dep evaluator-image/sbom)
	got=$(sha256sum image/sbom.cdx.json | cut -d' ' -f1)
	if [ -z "$want" ] || [ "$got" != "$want" ]; then
		fail "image/sbom.cdx.json has sha256 $got, the provenance names '$want'"
	fi
	echo "image/sbom.cdx.json: sha256 $got, as the provenance names it"
fi
if [ -f image/scan.dsse.json ]; then
	id=$(dep evaluator-image/id)
	[ -n "$id" ] || fail "image/scan.dsse.json is there, but the provenance names no evaluator image"
	"$cosign" verify-blob-attestation --key "$key" --insecure-ignore-tlog --type "$scan_type" --signature image/scan.dsse.json \
		--digest "$id" --digestAlg sha256 >>"$log" 2>&1 || fail "cosign: image/scan.dsse.json is not a signed scan of image sha256:$id: $(tail -1 "$log")"
	echo "image/scan.dsse.json: a scan of image sha256:$id, signed by the trusted key"
fi
echo "bundle $1: every check passed"
