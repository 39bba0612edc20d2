package codebench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/judge/judgetest"
	"github.com/reprolab/repro/internal/codebench/wire"
)

// runProgram runs a program's entry point on inputs in the sandbox through
// a supervisor and returns the records.
func runProgram(t *testing.T, w *wire.Worker, entry, program string, inputs []string) []wire.Record {
	t.Helper()
	return runJob(t, w, programJob(entry, program, inputs))
}

// programJob is the job of a program's entry point on inputs, each with a
// limit far beyond what the tests' programs take.
func programJob(entry, program string, inputs []string) *wire.Job {
	raw := make([]json.RawMessage, len(inputs))
	limits := make([]float64, len(inputs))
	for i, in := range inputs {
		raw[i] = json.RawMessage(in)
		limits[i] = 30
	}
	return &wire.Job{ID: nextJobID(), EntryPoint: entry, Program: []byte(program), Inputs: raw, Limits: limits,
		FirstExtra: 30, PhaseLimit: 600, WallFactor: 3, RecordCap: 1 << 20, ByteCap: 1 << 26,
		Memory: DefaultRunLimits().ChildMemory, FSize: 1 << 20}
}

// runJob runs j through w, requires it to end done, and returns its
// records.
func runJob(t *testing.T, w *wire.Worker, j *wire.Job) []wire.Record {
	t.Helper()
	var recs []wire.Record
	end, err := w.Run(context.Background(), j, func(k int, r wire.Record) bool {
		r.Data = append([]byte(nil), r.Data...)
		recs = append(recs, r)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != "done" {
		t.Fatalf("%s: %+v", j.EntryPoint, end)
	}
	return recs
}

// TestEqualityTableInPython checks the hand-written equality table against
// CPython itself, and the harness's encoder together with Equal against
// both: for every row, Python's a == b, and Equal on what the harness sends
// for a and b, must give the table's answer.
func TestEqualityTableInPython(t *testing.T) {
	launch, _, _ := testSandbox(t)
	w := wire.NewWorker(launch)
	defer w.Close()
	table := judgetest.EqualityTable()
	var prog strings.Builder
	prog.WriteString("PAIRS = [\n")
	var sides, idx []string
	for i, c := range table {
		a, b, ok := strings.Cut(c.Py, " == ")
		if !ok {
			t.Fatalf("row %q is not a == b", c.Py)
		}
		fmt.Fprintf(&prog, "    (lambda: %s, lambda: %s),\n", a, b)
		sides = append(sides, fmt.Sprintf("[%d, 0]", i), fmt.Sprintf("[%d, 1]", i))
		idx = append(idx, fmt.Sprintf("[%d]", i))
	}
	prog.WriteString("]\n")
	prog.WriteString("def value(i, side):\n    return PAIRS[i][side]()\n")
	prog.WriteString("def eq(i):\n    a, b = PAIRS[i]\n    return a() == b()\n")

	values := runProgram(t, w, "value", prog.String(), sides)
	answers := runProgram(t, w, "eq", prog.String(), idx)
	for i, c := range table {
		py := answers[i]
		if py.Kind != 'V' || len(py.Data) != 1 || (py.Data[0] == 'T') != c.Eq {
			t.Errorf("%s: CPython says %q, the table says %v", c.Py, py.Data, c.Eq)
		}
		a, errA := judge.ParseValue(values[2*i].Data, judge.DefaultBounds)
		b, errB := judge.ParseValue(values[2*i+1].Data, judge.DefaultBounds)
		if errA != nil || errB != nil {
			t.Errorf("%s: the harness sent malformed values: %v %v", c.Py, errA, errB)
			continue
		}
		if got := judge.Equal(a, b); got != c.Eq {
			t.Errorf("%s: Equal on the harness's encodings = %v, want %v", c.Py, got, c.Eq)
		}
		if got := judge.Equal(a, mustParse(t, c.A)); !got && !strings.Contains(c.Py, "nan") {
			t.Errorf("%s: the harness's encoding of the left side does not equal the table's", c.Py)
		}
	}
}

// TestEncoderFastPaths checks the harness's bulk encodings of float and
// int lists (and of a float list interrupted by other items) against the
// item-by-item ones, through Equal and canonical keys.
func TestEncoderFastPaths(t *testing.T) {
	launch, _, _ := testSandbox(t)
	w := wire.NewWorker(launch)
	defer w.Close()
	prog := `
import math
CASES = [
    [i / 7 for i in range(40)],
    [1, 3] + [i / 2 + 1 for i in range(40)],
    [2**62 - i for i in range(40)] + [-(2**63)],
    [float("inf"), -0.0, 5e-324, 1.7976931348623157e308] * 5,
    [1.5] * 20 + ["x"] + [2.5] * 20 + [None],
    [True] * 20,
    [2**64] + list(range(30)),
    tuple(i / 3 for i in range(30)),
]
def get(i, bulk):
    v = CASES[i]
    if bulk:
        return v
    return [x for x in v] if type(v) is list else v
def item(i, k):
    return CASES[i][k]
`
	n := 8
	var inputs []string
	for i := 0; i < n; i++ {
		inputs = append(inputs, fmt.Sprintf("[%d, true]", i))
	}
	recs := runProgram(t, w, "get", prog, inputs)
	for i, r := range recs {
		v, err := judge.ParseValue(r.Data, judge.DefaultBounds)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		its := v.Items()
		var single []string
		for k := range its {
			single = append(single, fmt.Sprintf("[%d, %d]", i, k))
		}
		one := runProgram(t, w, "item", prog, single)
		for k, got := range its {
			want, err := judge.ParseValue(one[k].Data, judge.DefaultBounds)
			if err != nil {
				t.Fatal(err)
			}
			ka, _ := judge.Key(got)
			kb, _ := judge.Key(want)
			sameFloat := got[0] != 'f' || string(got) == string(want) // -0.0, inf: bit for bit
			if got.Kind() != want.Kind() || string(ka) != string(kb) || !sameFloat {
				t.Errorf("case %d item %d: bulk %x, single %x", i, k, []byte(got), []byte(want))
			}
		}
	}
}
