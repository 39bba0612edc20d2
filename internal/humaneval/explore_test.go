package humaneval

import (
	"context"
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	launch, _, img := testSandbox(t)
	d := testDataset(t, "humanevalplus-v0.1.10")
	tr := testTruth(t, d, img)
	var tasks []*Task
	for _, id := range []string{"HumanEval/0", "HumanEval/2", "HumanEval/32", "HumanEval/15", "HumanEval/139", "HumanEval/130"} {
		tasks = append(tasks, d.Task(id))
	}
	start := time.Now()
	rep, err := Run(context.Background(), Config{Dataset: d, Tasks: tasks, Canonical: true, Launch: launch, Truth: tr, Limits: DefaultRunLimits(), Parallel: 2,
		Progress: func(s string, dn, tot int) { t.Logf("%s %d/%d %v", s, dn, tot, time.Since(start)) }})
	if err != nil {
		t.Fatalf("%v\n%+v\n%+v", err, rep.SelfCheck, rep.Truth)
	}
	t.Logf("%+v", rep.Summary)
	t.Logf("truth %+v selfcheck %+v scoring %+v", rep.Truth, rep.SelfCheck, rep.Scoring)
	for _, r := range rep.Results {
		t.Logf("%s %+v %+v", r.Sample.TaskID, r.Base, r.Plus)
	}
}
