package codebench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/testenv"
)

// rebuildCheck applies, on the host's python3, both the harness's input
// rebuild (supervisor.py's REBUILD, as the host names it per task) and
// EvalPlus's own mbpp_deserialize_inputs (read from the pinned tree) to
// every input of every MBPP+ task, and prints per task whether the two
// agree in value and in every nested type.
const rebuildCheck = `
import gzip, importlib.util, json, sys
harness, tree, data, rules = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("supervisor", harness + "/supervisor.py")
sup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sup)
src = open(tree + "/evalplus/data/mbpp.py").read()
ns = {}
exec(src[src.index("def mbpp_deserialize_inputs"):src.index("def get_mbpp()")], ns)
rules = json.loads(rules)

def sig(v):
    t = type(v)
    if t in (list, tuple):
        return (t.__name__, [sig(x) for x in v])
    if t is dict:
        return ("dict", [(sig(k), sig(x)) for k, x in v.items()])
    if t in (set, frozenset):
        return (t.__name__, sorted(repr(sig(x)) for x in v))
    return (t.__name__, repr(v))

out = {}
for line in gzip.open(data):
    task = json.loads(line)
    tid = task["task_id"]
    rule = rules.get(tid, "")
    verdict = "ok"
    for phase in ("base_input", "plus_input"):
        raw = task[phase]
        theirs = ns["mbpp_deserialize_inputs"](tid, json.loads(json.dumps(raw)))
        mine = [sup.REBUILD[rule](a) for a in json.loads(json.dumps(raw))] if rule else json.loads(json.dumps(raw))
        if len(list(theirs)) != len(list(mine)):
            verdict = "%s: %d inputs, EvalPlus %d" % (phase, len(mine), len(theirs))
            break
        for k, (a, b) in enumerate(zip(mine, theirs)):
            if sig(a) != sig(b):
                verdict = "%s %d: %r, EvalPlus %r" % (phase, k, sig(a), sig(b))
                break
    out[tid] = verdict
print(json.dumps(out))
`

// Every MBPP+ task's inputs reach the program exactly as EvalPlus's own
// mbpp_deserialize_inputs rebuilds them (tuples, sets, complex numbers,
// dicts of tuples), and no task that EvalPlus rebuilds lacks a rule here.
func TestMBPPInputRebuildsMatchEvalPlus(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3", "apt-get install python3")
		return
	}
	d := testDataset(t, "mbppplus-v0.2.0")
	rules := map[string]string{}
	for _, task := range d.Tasks {
		if task.Rules.Inputs != "" {
			rules[task.ID] = task.Rules.Inputs
		}
	}
	rb, _ := json.Marshal(rules)
	harness, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "check.py")
	if err := os.WriteFile(script, []byte(rebuildCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-B", "-I", script, harness, tree, filepath.Join(sharedData(t), mbppPin.File), string(rb))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var verdicts map[string]string
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(verdicts) != len(d.Tasks) {
		t.Fatalf("%d tasks checked, want %d", len(verdicts), len(d.Tasks))
	}
	for _, task := range d.Tasks {
		if v := verdicts[task.ID]; v != "ok" {
			t.Errorf("%s (rebuild %q): %s", task.ID, task.Rules.Inputs, v)
		}
	}
}
