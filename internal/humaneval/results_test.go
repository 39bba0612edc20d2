package humaneval

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	d := &Dataset{ID: "test", MD5: "0123", HasPlus: true, Tasks: []*Task{
		{ID: "HumanEval/0", Base: []json.RawMessage{[]byte("[1]"), []byte("[2]")}, Plus: []json.RawMessage{[]byte(`["x"]`)}},
		{ID: "HumanEval/1", Base: []json.RawMessage{[]byte("[3]")}, Plus: []json.RawMessage{[]byte("[4]")}},
	}}
	pass := PhaseResult{Status: StatusPass, FailInput: -1}
	fail := func(i int, why string) PhaseResult { return PhaseResult{Status: StatusFail, FailInput: i, Reason: why} }
	results := []*SampleResult{
		{Sample: &Sample{TaskID: "HumanEval/0", Solution: "a"}, Base: pass, Plus: &PhaseResult{Status: StatusPass, FailInput: -1}},
		{Sample: &Sample{TaskID: "HumanEval/0", Solution: "b", ID: 1}, Base: fail(1, "raised ValueError"), Plus: &PhaseResult{Status: StatusTimeout, FailInput: 0, Reason: "slow", Elapsed: 9.5, Limit: 9}},
		{Sample: &Sample{TaskID: "HumanEval/1", Solution: "c"}, Base: pass, Plus: &PhaseResult{Status: StatusFail, FailInput: 0}},
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
	if err := WriteResults(path, d, d.Tasks, results, sum, time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)); err != nil {
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
			PlusElapsed   float64           `json:"plus_elapsed"`
			PlusLimit     float64           `json:"plus_limit"`
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
		string(e.BaseFailTests[0]) != "[2]" || string(e.PlusFailTests[0]) != `["x"]` || e.PlusElapsed != 9.5 || e.PlusLimit != 9 {
		t.Errorf("entry %+v", e)
	}
	if ok := got.Eval["HumanEval/0"][0]; len(ok.BaseFailTests) != 0 || ok.BaseFailTests == nil {
		t.Errorf("a passing sample must list no failing tests as []: %+v", ok)
	}
	if got.PassAtK["base"]["pass@1"] != 0.75 || got.PassAtK["plus"]["pass@1"] != 0.25 {
		t.Errorf("pass_at_k %v", got.PassAtK)
	}
}
