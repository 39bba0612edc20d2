#!/usr/bin/env bash
# The run index with 10,000 runs: the Go benchmark (List with its
# reconciliation against the folders and the re-check of what it returns,
# per filter), then the repro binary end to end (process start, database
# check, list) on 10,000 synthetic run folders.
# Usage: bench/run-index.sh [RUNS]   (default 10000)
set -euo pipefail
n=${1:-10000}
cd "$(dirname "$0")/.."
go test -run '^$' -bench List10k -benchtime 20x ./internal/runindex
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/repro" ./cmd/repro
python3 - "$work/home/runs" "$n" <<'PY'
import json, os, sys, hashlib
root, n = sys.argv[1], int(sys.argv[2])
kinds = ["humaneval", "edm-fid", "handoff-minigo", "handoff-dlrm"]
for i in range(n):
    kind = kinds[i % 4]
    day, sec = divmod(i, 86400)
    stamp = "202603%02dT%02d%02d%02dZ" % (1 + day, sec // 3600, sec // 60 % 60, sec % 60)
    rid = "%s-%s-%08x" % (kind, stamp, i)
    os.makedirs(os.path.join(root, rid))
    sha = hashlib.sha256(b"model%d" % (i % 100)).hexdigest()
    rec = {"schema": "repro.run/v1", "id": rid, "kind": kind, "status": ["ok", "negative"][i % 2],
           "started_at": "%s-%s-%sT%s:%s:%sZ" % (stamp[:4], stamp[4:6], stamp[6:8], stamp[9:11], stamp[11:13], stamp[13:15]),
           "assets": [{"id": "model", "sha256": sha}], "files": []}
    with open(os.path.join(root, rid, "record.json"), "w") as f:
        json.dump(rec, f, indent=2)
PY
export REPRO_HOME="$work/home"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); printf '%-60s %.3f s\n' "$*" "$(echo "$e - $s" | bc -l)"; }
echo "== repro binary, $n runs (load: $(cut -d' ' -f1-3 /proc/loadavg))"
t "$work/repro" runs reindex
for args in "" "--kind edm-fid --status negative" "--digest $(printf model42 | sha256sum | cut -c1-12) --limit 0" "--since 2026-03-01 --until 2026-03-01 --limit 0"; do
	# shellcheck disable=SC2086
	t "$work/repro" runs list $args
done
