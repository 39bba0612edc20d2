#!/usr/bin/env bash
# README command 1: set up repro on a Debian bookworm machine (as root) and
# run its main job.
#  1. install and start the Docker engine (scripts/deps.sh --run);
#  2. build repro into bin/repro;
#  3. fetch the HumanEval+ dataset from upstream and verify it against the
#     compiled-in pin; where upstream cannot be reached and ../shared/data
#     holds the file, import that copy instead (verified the same way).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --run
echo "== build"
go build -trimpath -o bin/repro ./cmd/repro
bin/repro version
shared=${REPRO_SHARED_DATA:-../shared/data}
fetch_or_import() { # id relative-path
	if bin/repro fetch "$1" 2>/tmp/repro-fetch.err; then return 0; fi
	if [ -f "$shared/$2" ]; then
		echo "upstream unreachable ($(tail -c 200 /tmp/repro-fetch.err)); importing $shared/$2" >&2
		bin/repro fetch "$1" --from "$shared/$2"
	else
		cat /tmp/repro-fetch.err >&2
		return 3
	fi
}
echo "== dataset"
fetch_or_import humanevalplus-v0.1.10 humanevalplus-v0.1.10/HumanEvalPlus.jsonl.gz
bin/repro verify humanevalplus-v0.1.10
