#!/usr/bin/env bash
# The walkthrough of docs/dashboard.md ("From three bundles to a ranked
# board"), measured: three labs score HumanEval+ Mini in REPRO_HOMEs of
# their own (coder-7b wrong at every fifth task, tiny-1b at every second,
# lucky-3b as tiny-1b but with its results file rewritten to pass every
# sample and the run signed again with the lab's key), export their runs;
# the maintainer imports the three bundles, re-executes each
# (repro runs reproduce) and writes the board under the trust file's
# require_reexecution policy. Prints each command's output and time.
#
# Usage: bench/dashboard-walkthrough.sh
#   IMAGE_HOME  a REPRO_HOME whose sandbox/image.json pins the evaluator
#               image (repro image build); default as repro
#   DATA        the folder holding humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz
#               (default ../shared/data beside the repository)
#   OUT         a new working folder (default a temporary one)
#
# The first lab computes the ground truth of the 164 tasks; the other
# homes start from a copy of its cache. About 20 minutes on a loaded
# 2-core machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
IMAGE_HOME=${IMAGE_HOME:-${REPRO_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/repro}}
DATA=${DATA:-$root/../shared/data}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$OUT"
go -C "$root" build -o "$OUT/bin/repro" ./cmd/repro
go -C "$root" build -o "$OUT/bin/resign" ./bench/resign
R=$OUT/bin/repro
now() { date +%s.%N; }
took() { echo "$1: $(echo "$(now) - $2" | bc) s" >&2; }
mk_home() {
	mkdir -p "$1/sandbox"
	cp "$IMAGE_HOME/sandbox/image.json" "$1/sandbox/"
	cp "$IMAGE_HOME/sandbox/sbom.cdx.json" "$1/sandbox/" 2>/dev/null || true
	REPRO_HOME=$1 "$R" fetch humanevalplus-mini-v0.1.10 --from "$DATA/humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz" >/dev/null
}
python3 - "$DATA/humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz" <<'PY'
import gzip, json, sys
tasks = [json.loads(l) for l in gzip.open(sys.argv[1])]
for name, every in (("coder-7b", 5), ("tiny-1b", 2), ("lucky-3b", 2)):
    with open(name + ".jsonl", "w") as f:
        for t in tasks:
            n = int(t["task_id"].split("/")[1])
            body = "    return None\n" if n % every == 0 else t["canonical_solution"]
            f.write(json.dumps({"task_id": t["task_id"], "completion": body}) + "\n")
PY
for h in lab-a lab-b lab-c maintainer; do mk_home "$OUT/homes/$h"; done
declare -A id
for lab in lab-a:coder-7b lab-b:tiny-1b lab-c:lucky-3b; do
	h=${lab%%:*} label=${lab#*:}
	s=$(now)
	REPRO_HOME=$OUT/homes/$h "$R" score --samples "$label.jsonl" --dataset humanevalplus-mini --label "$label" \
		--model "org/$label" --sampling temperature=0,n=1 --json >"$h.json" 2>"$h.err"
	took "$h scoring" "$s"
	id[$h]=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$h.json")
	if [ "$h" = lab-a ]; then
		for o in lab-b lab-c maintainer; do mkdir -p "$OUT/homes/$o/state"; cp -r "$OUT/homes/lab-a/state/humaneval" "$OUT/homes/$o/state/"; done
	fi
done
# lab-c: every sample passes, says its results file, signed again.
python3 - "$OUT/homes/lab-c/runs/${id[lab-c]}/eval_results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for es in r["eval"].values():
    for e in es:
        for ph in ("base", "plus"):
            e[ph + "_status"] = "pass"; e[ph + "_fail_tests"] = []; e.pop(ph + "_reason", None)
json.dump(r, open(sys.argv[1], "w"))
PY
"$OUT/bin/resign" "$OUT/homes/lab-c" "${id[lab-c]}"
for h in lab-a lab-b lab-c; do
	REPRO_HOME=$OUT/homes/$h "$R" runs export "${id[$h]}" --out "$h.tar" >/dev/null
	REPRO_HOME=$OUT/homes/$h "$R" keys export --trust-file >"$h.trust.json"
done
python3 - <<'PY'
import json
keys = []
for lab in ("lab-a", "lab-b", "lab-c"):
    k = json.load(open(lab + ".trust.json"))["keys"][0]; k["name"] = lab; keys.append(k)
json.dump({"version": 1, "keys": keys}, open("submitters.json", "w"), indent=2)
PY
export REPRO_HOME=$OUT/homes/maintainer
echo '$ repro runs import lab-a.tar lab-b.tar lab-c.tar --trust submitters.json'
s=$(now); "$R" runs import lab-a.tar lab-b.tar lab-c.tar --trust submitters.json; took import "$s"
for h in lab-a lab-b lab-c; do
	echo "\$ repro runs reproduce $h.tar --trust submitters.json"
	s=$(now); rc=0; "$R" runs reproduce "$h.tar" --trust submitters.json || rc=$?; took "reproduce $h (exit $rc)" "$s"
done
python3 - "$REPRO_HOME/trust.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["leaderboard"] = {"require_reexecution": True}
json.dump(t, open(sys.argv[1], "w"), indent=2)
PY
echo '$ repro report --leaderboard humanevalplus-mini-v0.1.10 --out site'
s=$(now); "$R" report --leaderboard humanevalplus-mini-v0.1.10 --out site; took export "$s"
du -sh site
