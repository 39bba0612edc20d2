package codebench

import (
	"github.com/reprolab/repro/internal/codebench/task"

	"slices"
	"testing"
)

// TestTestsOf: a sample passes when base and, where scored, plus pass; a
// task's one sample is named by the task, several by task and completion id.
func TestTestsOf(t *testing.T) {
	res := func(tk string, id int, base Status, plus *Status) *SampleResult {
		r := &SampleResult{Sample: &task.Sample{TaskID: tk, ID: id}, Base: PhaseResult{Status: base}}
		if plus != nil {
			r.Plus = &PhaseResult{Status: *plus}
		}
		return r
	}
	pass, fail := StatusPass, StatusFail
	got, _ := TestsOf(ResultSlice{
		res("HumanEval/0", 0, StatusPass, nil),
		res("HumanEval/1", 0, StatusPass, &fail),
		res("HumanEval/1", 1, StatusPass, &pass),
		res("HumanEval/2", 0, StatusFail, &pass),
	}, "eval_results.json")
	if !slices.Equal(got.Passed, []string{"HumanEval/0", "HumanEval/1#1"}) || !slices.Equal(got.Failed, []string{"HumanEval/1#0", "HumanEval/2"}) || got.Results != "eval_results.json" {
		t.Fatalf("%+v", got)
	}
}
