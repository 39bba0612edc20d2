#!/usr/bin/env bash
# README command 1: set up repro on a Debian bookworm machine (as root) and
# run its main job.
#  1. install and start the Docker engine (scripts/deps.sh --run);
#  2. build repro into bin/repro; where the engine's runc has an open known
#     container escape (Debian bookworm's runc 1.1.5 has three), build and
#     register gVisor's runsc (scripts/deps.sh runsc), which sandboxed runs
#     then use by default ('repro sandbox runtime' says which and why);
#  3. fetch the HumanEval+ and MBPP+ datasets from upstream and verify them
#     against the compiled-in pins; where upstream cannot be reached and
#     ../shared/data holds the file, import that copy instead (verified the
#     same way);
#  4. build the evaluator image offline from Debian packages (first run only)
#     and self-test every sandbox control;
#  5. score the HumanEval+ canonical solutions as candidates (100.0 / 100.0
#     expected), then the MBPP+ ones (378/378, 100.0 / 100.0), then the
#     example samples file (correct, wrong and cheating samples);
#  6. write the HTML report of that scoring run and print where it is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --run
echo "== build"
go build -trimpath -o bin/repro ./cmd/repro
bin/repro version
echo "== runtime"
# The runtime with no setting is the host's choice; where that is runsc and
# runsc is not registered yet, 'sandbox runtime' names scripts/deps.sh runsc.
if ! rt=$(bin/repro sandbox runtime 2>/tmp/repro-runtime.err); then
	if grep -q "scripts/deps.sh runsc" /tmp/repro-runtime.err; then
		bash scripts/deps.sh runsc
		rt=$(bin/repro sandbox runtime 2>/tmp/repro-runtime.err)
	else
		cat /tmp/repro-runtime.err >&2
		exit 3
	fi
fi
echo "sandboxed runs use $rt (why: bin/repro sandbox runtime; the check below says so once)"
shared=${REPRO_SHARED_DATA:-../shared/data}
fetch_or_import() { # id relative-path
	if bin/repro fetch "$1" 2>/tmp/repro-fetch.err; then return 0; fi
	if [ -f "$shared/$2" ]; then
		echo "upstream unreachable ($(tail -n 1 /tmp/repro-fetch.err | cut -c 1-300)); importing $shared/$2" >&2
		bin/repro fetch "$1" --from "$shared/$2"
	else
		cat /tmp/repro-fetch.err >&2
		return 3
	fi
}
echo "== dataset"
fetch_or_import humanevalplus-v0.1.10 humanevalplus-v0.1.10/HumanEvalPlus.jsonl.gz
bin/repro verify humanevalplus-v0.1.10
fetch_or_import mbppplus-v0.2.0 mbppplus-v0.2.0/MbppPlus.jsonl.gz
bin/repro verify mbppplus-v0.2.0
echo "== sandbox"
if ! bin/repro sandbox check >/dev/null 2>&1; then
	bin/repro image build
fi
bin/repro sandbox check
echo "== HumanEval+: canonical solutions scored as candidates"
bin/repro score --canonical
echo "== MBPP+: canonical solutions scored as candidates"
bin/repro score --dataset mbppplus --canonical
echo "== HumanEval+: examples/humaneval-samples.jsonl"
bin/repro score --samples examples/humaneval-samples.jsonl --tasks 0,2,12,32,53,55
bin/repro runs list
echo "== report"
run_id=$(bin/repro runs list --kind humaneval --limit 1 | awk 'NR == 2 { print $1 }')
bin/repro report "$run_id" --out "$PWD/bin/report-$run_id.html"
echo "open $PWD/bin/report-$run_id.html to see the score, what failed and why, and that the run verifies"
