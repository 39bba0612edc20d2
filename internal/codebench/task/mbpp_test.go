package task_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
)

func TestLoadMBPPPlus(t *testing.T) {
	d := tasktest.Dataset(t, "mbppplus-v0.2.0")
	if len(d.Tasks) != 378 || d.Tasks[0].ID != "Mbpp/2" || d.Tasks[377].ID != "Mbpp/809" || d.MD5 != "ee43ecabebf20deef4bb776a405ac5b1" {
		t.Fatalf("%d tasks, %s to %s, md5 %s", len(d.Tasks), d.Tasks[0].ID, d.Tasks[len(d.Tasks)-1].ID, d.MD5)
	}
	base, plus := 0, 0
	for _, task := range d.Tasks {
		base += len(task.Base)
		plus += len(task.Plus)
	}
	if base != 1174 || plus != 39841 {
		t.Fatalf("%d base and %d plus inputs, want 1174 and 39841", base, plus)
	}
	if d.Task("Mbpp/5") != nil || d.Task("Mbpp/2") != d.Tasks[0] || d.Task("HumanEval/2") != nil || d.Task("Mbpp/02") != nil {
		t.Fatal("task lookup by id is wrong")
	}
	// The rules that apply to tasks of this dataset, counted off.
	rebuilt := map[string][]string{}
	oracles := map[judge.OracleKind][]string{}
	for _, task := range d.Tasks {
		if r := task.Rules.Inputs; r != "" {
			rebuilt[r] = append(rebuilt[r], task.ID)
		}
		if o := task.Rules.Oracle; o != judge.OracleEqual {
			oracles[o] = append(oracles[o], task.ID)
		}
	}
	n := 0
	for _, ids := range rebuilt {
		n += len(ids)
	}
	if n != 52 {
		t.Errorf("%d tasks with rebuilt inputs, want 52: %v", n, rebuilt)
	}
	want := map[judge.OracleKind][]string{
		judge.OracleSetEqual:      {"Mbpp/111", "Mbpp/140", "Mbpp/2", "Mbpp/232", "Mbpp/579", "Mbpp/7", "Mbpp/769"},
		judge.OracleNotNone:       {"Mbpp/737", "Mbpp/787", "Mbpp/794"},
		judge.OracleSurfaceArea:   {"Mbpp/581"},
		judge.OracleDigitDistance: {"Mbpp/558"},
	}
	for k, ids := range oracles {
		sort.Strings(ids)
		if len(ids) != len(want[k]) {
			t.Errorf("oracle %s: %v, want %v", k, ids, want[k])
			continue
		}
		for i := range ids {
			if ids[i] != want[k][i] {
				t.Errorf("oracle %s: %v, want %v", k, ids, want[k])
			}
		}
	}
	if len(oracles) != len(want) {
		t.Errorf("oracles %v, want %v", oracles, want)
	}
	if tk := d.Task("Mbpp/124"); tk.Rules.Inputs != "float_complex" || tk.Atol != 1e-4 {
		t.Errorf("Mbpp/124: %+v atol %g", tk.Rules, tk.Atol)
	}
	if d.Task("Mbpp/2").Rules != (judge.TaskRules{Inputs: "tuple_args", Oracle: judge.OracleSetEqual}) {
		t.Errorf("Mbpp/2: %+v", d.Task("Mbpp/2").Rules)
	}
	he := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	for _, task := range he.Tasks {
		if want := (judge.TaskRules{}); task.ID == "HumanEval/32" {
			if task.Rules.Oracle != judge.OracleFindZero {
				t.Errorf("HumanEval/32: %+v", task.Rules)
			}
		} else if task.Rules != want {
			t.Errorf("%s: %+v", task.ID, task.Rules)
		}
	}
}

// standardJSON turns Python's Infinity tokens into 1e999 outside strings,
// refuses NaN, and leaves everything else as it is.
func FuzzStandardJSON(f *testing.F) {
	for _, s := range []string{`[[-Infinity, Infinity]]`, `["Infinity", "a\"Infinity"]`, `[NaN]`, `[1e999]`, `{"a": [1, 2]}`, `["\\", Infinity]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		out, err := task.StandardJSON(line)
		if err != nil {
			if !bytes.Contains(line, []byte("NaN")) {
				t.Fatalf("refused %q without NaN: %v", line, err)
			}
			return
		}
		if !bytes.Contains(line, []byte("Infinity")) && !bytes.Equal(out, line) {
			t.Fatalf("changed %q to %q", line, out)
		}
		if json.Valid(line) && !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q", line, out)
		}
	})
}

func TestStandardJSON(t *testing.T) {
	for in, want := range map[string]string{
		`[[-Infinity, Infinity], ["Infinity"]]`: `[[-1e999, 1e999], ["Infinity"]]`,
		`["a\"Infinity", Infinity]`:             `["a\"Infinity", 1e999]`,
		`[1, 2]`:                                `[1, 2]`,
	} {
		got, err := task.StandardJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	if _, err := task.StandardJSON([]byte(`[NaN]`)); err == nil {
		t.Error("NaN accepted")
	}
	// Mbpp/404's infinities reach the program as floats: its inputs are
	// standard JSON now.
	d := tasktest.Dataset(t, "mbppplus-v0.2.0")
	n := 0
	for _, in := range d.Task("Mbpp/404").Plus {
		if !json.Valid(in) {
			t.Fatalf("Mbpp/404 input %s is not JSON", in)
		}
		n += bytes.Count(in, []byte("1e999"))
	}
	if n != 15 {
		t.Errorf("%d infinities in Mbpp/404, want 15", n)
	}
	if len(d.Task("Mbpp/793").Plus) != 0 {
		t.Error("Mbpp/793 has plus inputs")
	}
}
