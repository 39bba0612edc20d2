package codebench

import (
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the output type tables in docs/humaneval.md and docs/mbpp.md from TestOutputTypesAsEvalPlus's cases")

// outputType is one honest program of the type table: the task's canonical
// solution with its output passed through wrap (a Python expression of r),
// after prelude. base and plus are the statuses both engines give it.
type outputType struct {
	task, kind, prelude, wrap string
	base, plus                Status
}

const (
	pass = StatusPass
	fail = StatusFail
)

// outputTypes are the cases of the table, by benchmark. Each names what the
// task's comparison is (==, set(out), a tolerance, find_zero).
func outputTypes() map[*task.Benchmark][]outputType {
	return map[*task.Benchmark][]outputType{
		task.HumanEvalPlus: {
			{"HumanEval/53", "int subclass", "class I(int): pass", "I(r)", pass, pass},
			{"HumanEval/53", "numpy.int64", "", "np.int64(r)", pass, pass},
			{"HumanEval/53", "float for int", "", "float(r)", pass, pass},
			{"HumanEval/0", "int for bool", "", "int(r)", pass, pass},
			{"HumanEval/0", "numpy.bool_", "", "np.bool_(r)", pass, pass},
			{"HumanEval/12", "str subclass", "class S(str): pass", "r if r is None else S(r)", pass, pass},
			{"HumanEval/29", "list subclass", "class L(list): pass", "L(r)", pass, pass},
			{"HumanEval/29", "list_iterator", "", "iter(r)", fail, fail},
			{"HumanEval/29", "generator", "", "(x for x in r)", fail, fail},
			{"HumanEval/29", "numpy.ndarray", "", "np.array(r)", fail, fail},
			{"HumanEval/8", "namedtuple", "P = namedtuple('P', 'a b')", "P(*r)", pass, pass},
			{"HumanEval/8", "list for tuple", "", "list(r)", fail, fail},
			{"HumanEval/111", "OrderedDict", "", "OrderedDict(r)", pass, pass},
			{"HumanEval/111", "defaultdict", "", "defaultdict(int, r)", pass, pass},
			{"HumanEval/111", "Counter", "", "Counter(r)", pass, pass},
			{"HumanEval/111", "dict.items()", "", "r.items()", fail, fail},
			{"HumanEval/4", "numpy.float64, tolerance task", "", "np.float64(r)", pass, pass},
			{"HumanEval/4", "numpy.float64 computed by numpy, tolerance task", "", "np.mean(np.abs(np.array(numbers) - np.mean(numbers))) if numbers else r", pass, pass},
			{"HumanEval/4", "float within atol, tolerance task", "", "r + 1e-9", pass, pass},
			{"HumanEval/4", "numpy.float64 within atol, tolerance task", "", "np.float64(r + 1e-9)", fail, fail},
			{"HumanEval/2", "float subclass, tolerance task", "class F(float): pass", "F(r)", pass, pass},
			{"HumanEval/32", "numpy.float64, find_zero", "", "np.float64(r)", pass, pass},
			{"HumanEval/32", "int for float, find_zero", "", "round(r) if abs(r - round(r)) < 1e-12 else r", pass, pass},
		},
		task.MBPPPlus: {
			{"Mbpp/88", "dict for Counter", "", "dict(r)", pass, pass},
			{"Mbpp/88", "OrderedDict", "", "OrderedDict(r)", pass, pass},
			{"Mbpp/88", "defaultdict", "", "defaultdict(int, r)", pass, pass},
			{"Mbpp/88", "UserDict", "", "UserDict(r)", pass, pass},
			{"Mbpp/7", "filter, set oracle", "", "filter(None, r)", pass, pass},
			{"Mbpp/7", "generator, set oracle", "", "(x for x in r)", pass, pass},
			{"Mbpp/7", "map, set oracle", "", "map(str, r)", pass, pass},
			{"Mbpp/2", "dict.keys(), set oracle", "", "dict.fromkeys(r).keys()", pass, pass},
			{"Mbpp/2", "list, set oracle", "", "list(r)", pass, pass},
			{"Mbpp/2", "numpy.ndarray of int64, set oracle", "", "np.array(sorted(r), dtype=np.int64)", pass, fail},
			{"Mbpp/2", "namedtuple, set oracle", "", "namedtuple('P', ['f%d' % i for i in range(len(r))])(*r) if r else r", pass, pass},
		},
	}
}

func (c outputType) program(d *task.Dataset) string {
	tk := d.Task(c.task)
	e := tk.EntryPoint
	od := "from collections import OrderedDict, defaultdict, namedtuple, Counter, UserDict\nimport numpy as np\n"
	return fmt.Sprintf("%s%s\n%s\n_f = %s\ndef %s(*a):\n    r = _f(*a)\n    numbers = a[0]\n    return %s\n", od, tk.Program(), c.prelude, e, e, c.wrap)
}

// TestOutputTypesAsEvalPlus scores one honest program per kind of output
// with repro's engine and with EvalPlus's own code in the same sandbox and
// requires the same statuses from both, and the table's.
func TestOutputTypesAsEvalPlus(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	launch, e, img := testSandbox(t)
	harness, err := wire.WriteHarness(filepath.Join(t.TempDir(), "harness"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := digest.Tree(filepath.Join(tree, EvalPlusPackage))
	if err != nil {
		t.Fatal(err)
	}
	cases := outputTypes()
	for _, b := range []*task.Benchmark{task.HumanEvalPlus, task.MBPPPlus} {
		id, pin := "humanevalplus-mini-v0.1.10", miniPin
		if b == task.MBPPPlus {
			id, pin = "mbppplus-v0.2.0", mbppPin
		}
		t.Run(b.Name, func(t *testing.T) {
			d := testDataset(t, id)
			var samples []*task.Sample
			var tasks []*task.Task
			seen := map[string]bool{}
			for i, c := range cases[b] {
				samples = append(samples, &task.Sample{TaskID: c.task, ID: i, Solution: c.program(d), Origin: c.kind})
				if !seen[c.task] {
					seen[c.task] = true
					tasks = append(tasks, d.Task(c.task))
				}
			}
			repro, err := RunStages(context.Background(), StagesConfig{Dataset: d, Tasks: tasks, Samples: samples, Launch: launch,
				Truth: testTruth(t, d, img), Limits: DefaultRunLimits(), Parallel: 2})
			if err != nil {
				t.Fatalf("repro: %v", err)
			}
			ep, err := RunEvalPlus(context.Background(), EvalPlusConfig{Engine: e, Image: img, HarnessDir: harness,
				TreeDir: tree, TreeDigest: m.Digest(), DatasetFile: decompressed(t, pin, d), Dataset: d, Tasks: tasks,
				Samples: samples, Parallel: 2, Limits: DefaultRunLimits()})
			if err != nil {
				t.Fatalf("evalplus: %v", err)
			}
			got := map[string]map[int]*SampleResult{"repro": byID(repro.Results), "evalplus": byID(ep.Results)}
			for i, c := range cases[b] {
				for _, eng := range []string{"repro", "evalplus"} {
					r := got[eng][i]
					if r == nil || r.Plus == nil {
						t.Errorf("%s %s: no result from %s", c.task, c.kind, eng)
						continue
					}
					if r.Base.Status != c.base || r.Plus.Status != c.plus {
						t.Errorf("%s %s: %s says base %s (%s), plus %s (%s); the table says %s, %s",
							c.task, c.kind, eng, r.Base.Status, r.Base.Reason, r.Plus.Status, r.Plus.Reason, c.base, c.plus)
					}
				}
			}
		})
	}
	checkTypeTables(t, cases)
}

func byID(rs []*SampleResult) map[int]*SampleResult {
	m := map[int]*SampleResult{}
	for _, r := range rs {
		m[r.Sample.ID] = r
	}
	return m
}

// decompressed writes the dataset's JSON lines, as EvalPlus's cache holds
// them, and checks their MD5.
func decompressed(t testing.TB, p tasktest.Pin, d *task.Dataset) string {
	f, err := os.Open(filepath.Join(sharedData(t), p.File))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), d.Bench().DataFile)
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	h := md5.New()
	if _, err := io.Copy(io.MultiWriter(w, h), zr); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.MD5 {
		t.Fatalf("%s decompressed to md5 %s, not %s", p.File, got, d.MD5)
	}
	return out
}

// typeTable renders a benchmark's cases as the Markdown table in its doc.
func typeTable(cs []outputType) string {
	var b strings.Builder
	b.WriteString("| task | output | base | plus |\n|---|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %s (`%s`) | %s | %s |\n", c.task, c.kind, strings.ReplaceAll(c.wrap, "|", "\\|"), c.base, c.plus)
	}
	return b.String()
}

const (
	tableBegin = "<!-- output types: generated by TestOutputTypesAsEvalPlus (go test ./internal/codebench -run TestOutputTypesAsEvalPlus -update-docs) -->\n"
	tableEnd   = "<!-- end of output types -->\n"
)

// checkTypeTables requires each doc to hold its benchmark's table between
// the markers, or rewrites it there with -update-docs.
func checkTypeTables(t *testing.T, cases map[*task.Benchmark][]outputType) {
	_, file, _, _ := runtime.Caller(0)
	docs := filepath.Join(filepath.Dir(file), "..", "..", "docs")
	for b, name := range map[*task.Benchmark]string{task.HumanEvalPlus: "humaneval.md", task.MBPPPlus: "mbpp.md"} {
		p := filepath.Join(docs, name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := string(raw)
		i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
		if i < 0 || j < i {
			t.Errorf("%s: no output type table between %q and %q", p, tableBegin, tableEnd)
			continue
		}
		want := s[:i+len(tableBegin)] + typeTable(cases[b]) + s[j:]
		if want == s {
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the output type table differs from the test's cases (run with -update-docs)", p)
	}
}
