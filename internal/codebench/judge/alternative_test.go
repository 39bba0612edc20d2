package judge

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// alternativeCheck computes EvalPlus's alternative answers
// (_special_oracle.py's _surface_Area for Mbpp/581, _digit_distance_nums
// for Mbpp/558) on every input of the two tasks, as "raise" where they
// raise.
const alternativeCheck = `
import gzip, json, sys
tree, data = sys.argv[1:3]
ns = {}
exec(open(tree + "/evalplus/eval/_special_oracle.py").read(), ns)
fns = {"Mbpp/581": ns["_surface_Area"], "Mbpp/558": ns["_digit_distance_nums"]}
out = []
for line in gzip.open(data):
    task = json.loads(line)
    fn = fns.get(task["task_id"])
    if fn is None:
        continue
    for inp in task["base_input"] + task["plus_input"]:
        try:
            r = str(fn(*inp))
        except Exception:
            r = "raise"
        out.append([task["task_id"], json.dumps(inp), r])
print(json.dumps(out))
`

// repro's alternative answers for Mbpp/581 and Mbpp/558 equal EvalPlus's
// on every input of the two tasks (ints, floats and bools among them).
func TestMBPPAlternativeAnswersMatchEvalPlus(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3", "apt-get install python3")
		return
	}
	script := filepath.Join(t.TempDir(), "alt.py")
	if err := os.WriteFile(script, []byte(alternativeCheck), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-B", "-I", script, tree, filepath.Join(testenv.SharedData(t), "mbppplus-v0.2.0", "MbppPlus.jsonl.gz"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var rows [][3]string
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3+103+3+143 {
		t.Fatalf("%d inputs, want 252", len(rows))
	}
	for _, r := range rows {
		got := "raise"
		if r[0] == "Mbpp/581" {
			if x, err := surfaceArea(json.RawMessage(r[1])); err == nil {
				got = x.String()
			}
		} else if v, err := digitDistance(json.RawMessage(r[1])); err == nil {
			n, _ := numberAt(v, 0)
			got = n.bigInt().String()
		}
		if got != r[2] {
			t.Errorf("%s%s: %s, EvalPlus %s", r[0], r[1], got, r[2])
		}
	}
}
