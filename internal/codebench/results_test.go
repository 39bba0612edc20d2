package codebench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

func TestEstimatePassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{1, 1, 1, 1}, {1, 0, 1, 0}, {10, 3, 1, 0.3}, {10, 0, 10, 0}, {10, 1, 10, 1},
		// 1 - C(5,2)/C(10,2) = 1 - 10/45
		{10, 5, 2, 1 - 10.0/45},
		// n - c < k: certain
		{20, 15, 10, 1},
		// 1 - C(190,10)/C(200,10), computed by hand with exact binomials
		{200, 10, 10, 0.4085478660814171},
	} {
		got := EstimatePassAtK(c.n, c.c, c.k)
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("pass@%d with n=%d c=%d: %v, want %v", c.k, c.n, c.c, got, c.want)
		}
	}
}

func TestSummarizeAndResultsFile(t *testing.T) {
	d := &task.Dataset{ID: "test", MD5: "0123", HasPlus: true, Tasks: []*task.Task{
		{ID: "HumanEval/0", Base: []json.RawMessage{[]byte("[1]"), []byte("[2]")}, Plus: []json.RawMessage{[]byte(`["x"]`)}},
		{ID: "HumanEval/1", Base: []json.RawMessage{[]byte("[3]")}, Plus: []json.RawMessage{[]byte("[4]")}},
	}}
	pass := PhaseResult{Status: StatusPass, FailInput: -1}
	fail := func(i int, why string) PhaseResult { return PhaseResult{Status: StatusFail, FailInput: i, Reason: why} }
	results := []*SampleResult{
		{Sample: &task.Sample{TaskID: "HumanEval/0", Solution: "a"}, Base: pass, Plus: &PhaseResult{Status: StatusPass, FailInput: -1}},
		{Sample: &task.Sample{TaskID: "HumanEval/0", Solution: "b", ID: 1}, Base: fail(1, "raised ValueError"), Plus: &PhaseResult{Status: StatusTimeout, FailInput: 0, Reason: "slow", Elapsed: 9.5, Limit: 9,
			Clocks: &PhaseClocks{Run: RunExact, JobCPU: 9.01, LoadCPU: 0.1, CPULimit: 9, Wall: 9.5}}},
		{Sample: &task.Sample{TaskID: "HumanEval/1", Solution: "c"}, Base: pass, Plus: &PhaseResult{Status: StatusFail, FailInput: 0}},
	}
	sum := Summarize(d.Tasks, results, true, false)
	if sum.BasePassed != 2 || sum.PlusPassed != 1 || sum.Timeouts != 1 || sum.Samples != 3 {
		t.Errorf("summary %+v", sum)
	}
	// base: task 0 has 1 of 2, task 1 has 1 of 1 -> (0.5 + 1) / 2
	if sum.BasePassAtK["pass@1"] != 0.75 || sum.PlusPassAtK["pass@1"] != 0.25 {
		t.Errorf("pass@1 base %v plus %v", sum.BasePassAtK, sum.PlusPassAtK)
	}
	if _, ok := sum.BasePassAtK["pass@10"]; ok {
		t.Error("pass@10 reported with fewer than 10 samples per task")
	}
	path := filepath.Join(t.TempDir(), "eval_results.json")
	if err := WriteResults(path, d, d.Tasks, ResultSlice(results), sum, time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got struct {
		Date string `json:"date"`
		Hash string `json:"hash"`
		Eval map[string][]struct {
			TaskID        string            `json:"task_id"`
			Solution      string            `json:"solution"`
			BaseStatus    string            `json:"base_status"`
			PlusStatus    *string           `json:"plus_status"`
			BaseFailTests []json.RawMessage `json:"base_fail_tests"`
			PlusFailTests []json.RawMessage `json:"plus_fail_tests"`
			PlusElapsed   *float64          `json:"plus_elapsed"`
			PlusClocks    map[string]any    `json:"plus_clocks"`
		} `json:"eval"`
		PassAtK map[string]map[string]float64 `json:"pass_at_k"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Date != "2026-01-02 03:04" || got.Hash != "0123" || len(got.Eval) != 2 {
		t.Fatalf("header %q %q, %d tasks", got.Date, got.Hash, len(got.Eval))
	}
	e := got.Eval["HumanEval/0"][1]
	if e.Solution != "b" || e.BaseStatus != "fail" || *e.PlusStatus != "timeout" ||
		string(e.BaseFailTests[0]) != "[2]" || string(e.PlusFailTests[0]) != `["x"]` || e.PlusElapsed != nil ||
		e.PlusClocks["run"] != "exact" || e.PlusClocks["job_cpu_s"] != 9.01 || e.PlusClocks["cpu_limit_s"] != 9.0 || e.PlusClocks["wall_s"] != 9.5 {
		t.Errorf("entry %+v", e)
	}
	if ok := got.Eval["HumanEval/0"][0]; len(ok.BaseFailTests) != 0 || ok.BaseFailTests == nil {
		t.Errorf("a passing sample must list no failing tests as []: %+v", ok)
	}
	if got.PassAtK["base"]["pass@1"] != 0.75 || got.PassAtK["plus"]["pass@1"] != 0.25 {
		t.Errorf("pass_at_k %v", got.PassAtK)
	}
}

// TestNoPassOverItsLimit: a pass whose deciding run's CPU time (on the
// supervisor's job clock, or the host's reading of the container) exceeds
// its limit is not a pass (settlePass), and no results file records one:
// WriteResults and WriteResultEntries refuse it with exit 4. An older
// results file, which recorded only base_elapsed (wall seconds) and
// base_limit, still reads, its figures named as what they were.
func TestNoPassOverItsLimit(t *testing.T) {
	over := []*PhaseClocks{
		{Run: RunFirst, JobCPU: 13.2, CPULimit: 13},
		{Run: RunRecheck, JobCPU: 12, CPULimit: 13, ContainerCPU: 15.9, ContainerBudget: 15.8},
	}
	for _, c := range over {
		pr := PhaseResult{Status: StatusPass, FailInput: -1, Limit: c.CPULimit, Clocks: c}
		settlePass(&pr)
		if pr.Status != StatusTimeout || !strings.Contains(pr.Reason, c.Run+" run") {
			t.Errorf("%+v: settled as %s (%s), want a timeout naming the run", c, pr.Status, pr.Reason)
		}
	}
	within := PhaseResult{Status: StatusPass, FailInput: -1, Clocks: &PhaseClocks{Run: RunFirst, JobCPU: 13, CPULimit: 13, Wall: 14.2}}
	if settlePass(&within); within.Status != StatusPass {
		t.Errorf("a pass at its limit, 14.2 s of wall time: settled as %s (%s)", within.Status, within.Reason)
	}
	// Under gVisor the job clock counts a loaded host's waits, and the
	// supervisor holds the list to eight times its limit on it: the
	// host's reading of the container holds the limit itself. A pass
	// whose job clock went past the limit, but not past eight times it,
	// stands where the host's reading is within its budget; a scale the
	// host never sets, or one without the host's reading, counts as 1.
	for _, c := range []struct {
		clocks PhaseClocks
		pass   bool
	}{
		{PhaseClocks{Run: RunFirst, JobCPU: 13.2, CPULimit: 13, ClockScale: 8, ContainerCPU: 12, ContainerBudget: 15.8}, true},
		{PhaseClocks{Run: RunFirst, JobCPU: 104.1, CPULimit: 13, ClockScale: 8, ContainerCPU: 12, ContainerBudget: 15.8}, false},
		{PhaseClocks{Run: RunFirst, JobCPU: 13.2, CPULimit: 13, ClockScale: 8, ContainerCPU: 15.9, ContainerBudget: 15.8}, false},
		{PhaseClocks{Run: RunFirst, JobCPU: 13.2, CPULimit: 13, ClockScale: 8}, false},
		{PhaseClocks{Run: RunFirst, JobCPU: 120, CPULimit: 13, ClockScale: 1000, ContainerCPU: 12, ContainerBudget: 15.8}, false},
	} {
		pr := PhaseResult{Status: StatusPass, FailInput: -1, Limit: c.clocks.CPULimit, Clocks: &c.clocks}
		if settlePass(&pr); (pr.Status == StatusPass) != c.pass {
			t.Errorf("%+v: settled as %s (%s), want a pass: %v", c.clocks, pr.Status, pr.Reason, c.pass)
		}
		// The share of its limit a report shows is over 1 where, and only
		// where, the run is past a limit.
		if share := c.clocks.LimitShare(); (share <= 1) != c.pass || c.clocks.PastLimit() == c.pass {
			t.Errorf("%+v: LimitShare %.3f, PastLimit %v; want a pass: %v", c.clocks, share, c.clocks.PastLimit(), c.pass)
		}
	}

	d := &task.Dataset{ID: "test", MD5: "0123", Tasks: []*task.Task{{ID: "Mbpp/123", Base: []json.RawMessage{[]byte("[1]")}}}}
	path := filepath.Join(t.TempDir(), "eval_results.json")
	for _, c := range over {
		res := []*SampleResult{{Sample: &task.Sample{TaskID: "Mbpp/123", Solution: "x"}, Base: PhaseResult{Status: StatusPass, FailInput: -1, Clocks: c}}}
		err := WriteResults(path, d, d.Tasks, ResultSlice(res), Summarize(d.Tasks, res, false, false), time.Now())
		if exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("a pass over its limit (%+v) was written, or refused with %v: want exit 4", c, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("a refused results file was written")
		}
	}

	var f ResultsFile
	old := `{"hash":"0123","eval":{"Mbpp/123":[{"task_id":"Mbpp/123","solution":"x","base_status":"pass","plus_status":"pass",
		"base_fail_tests":[],"plus_fail_tests":[],"base_elapsed":14.2,"base_limit":13.0,"plus_elapsed":203.6,"plus_limit":61.0,"plus_exact_run":true}]}}`
	if err := strictjson.DecodeOpen([]byte(old), &f); err != nil {
		t.Fatal(err)
	}
	e := f.Eval["Mbpp/123"][0]
	if c := e.Clocks(task.Base); c == nil || c.Wall != 14.2 || c.CPULimit != 13 || c.Run != "" || c.JobCPU != 0 {
		t.Errorf("an older file's base figures read as %+v, want wall 14.2 s against a 13 s CPU limit, run and CPU unknown", c)
	}
	if c := e.Clocks(task.Plus); c == nil || c.Wall != 203.6 || c.CPULimit != 61 {
		t.Errorf("an older file's plus figures read as %+v", c)
	}
}

// TestOneJSONObject: the check of a written results file accepts one JSON
// object, and what Python's json.loads would refuse, or read as something
// else, it refuses: another value, a cut document, a second value, a stray
// delimiter.
func TestOneJSONObject(t *testing.T) {
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"date":"x","eval":{"HumanEval/0":[{"solution":"print(1)\n","base_fail_tests":[[1,2.5,null,true]]}]},"pass_at_k":{}}` + "\n", true},
		{"  {}  \n\t", true},
		{`{"a":[{"b":{"c":[]}}]}`, true},
		{`[]`, false},
		{`"x"`, false},
		{``, false},
		{`{"a":[1,2}`, false},
		{`{"a":1`, false},
		{`{"a":1}{}`, false},
		{`{"a":1} x`, false},
		{`{"a":1}]`, false},
		{`{"a" 1}`, false},
		{`{"a":1,}`, false},
	} {
		err := oneJSONObject(strings.NewReader(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%q: %v, want ok %v", c.doc, err, c.ok)
		}
	}
}
