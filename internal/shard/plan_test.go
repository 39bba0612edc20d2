package shard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
)

func TestBalance(t *testing.T) {
	costs := []float64{1, 9, 3, 3, 2, 8, 1, 1}
	got := Balance(costs, 3)
	load := make([]float64, len(got))
	seen := map[int]bool{}
	for k, idx := range got {
		for _, i := range idx {
			if seen[i] {
				t.Fatalf("task %d in two shards: %v", i, got)
			}
			seen[i] = true
			load[k] += costs[i]
		}
	}
	if len(seen) != len(costs) {
		t.Fatalf("%d of %d tasks assigned: %v", len(seen), len(costs), got)
	}
	// 28 in all: the greedy balance is 10, 9, 9 (9 | 8+1 | 3+3+2+1... in
	// some order); nothing above 10.
	for k, l := range load {
		if l > 10 {
			t.Errorf("shard %d carries %.0f of 28: %v", k, l, got)
		}
	}
	if fmt.Sprint(Balance(costs, 3)) != fmt.Sprint(got) {
		t.Error("the balance is not deterministic")
	}
}

// validPlan is a well-formed plan of 2 shards over 3 tasks, whole.
func validPlan() Plan {
	return Plan{
		Format: Format, Dataset: "humanevalplus", Tasks: []string{"HumanEval/0", "HumanEval/1", "HumanEval/2"}, TaskSamples: []int{2, 2, 1},
		Samples: SamplesPin{Count: 5}, Image: ImagePin{Tarball: FilePin{Path: ImageFile}}, Binary: FilePin{Path: BinaryFile},
		Limits: codebench.DefaultRunLimits(),
		Shards: []Shard{
			{Index: 0, Parts: []Part{{"HumanEval/0", 0, 2}, {"HumanEval/2", 0, 1}}, Samples: 3, File: FilePin{Path: "shards/shard-000.jsonl"}},
			{Index: 1, Parts: []Part{{"HumanEval/1", 0, 2}}, Samples: 2, File: FilePin{Path: "shards/shard-001.jsonl"}},
		},
	}
}

// splitPlan is a well-formed plan of 3 shards over 2 tasks, one split
// over all three: HumanEval/0's samples 0-3 in shard 2, 4-5 in shard 0,
// 6-9 in shard 1.
func splitPlan() Plan {
	return Plan{
		Format: Format, Dataset: "humanevalplus", Tasks: []string{"HumanEval/0", "HumanEval/1"}, TaskSamples: []int{10, 3},
		Samples: SamplesPin{Count: 13}, Image: ImagePin{Tarball: FilePin{Path: ImageFile}}, Binary: FilePin{Path: BinaryFile},
		Limits: codebench.DefaultRunLimits(),
		Shards: []Shard{
			{Index: 0, Parts: []Part{{"HumanEval/0", 4, 6}, {"HumanEval/1", 0, 3}}, Samples: 5, File: FilePin{Path: "shards/shard-000.jsonl"}},
			{Index: 1, Parts: []Part{{"HumanEval/0", 6, 10}}, Samples: 4, File: FilePin{Path: "shards/shard-001.jsonl"}},
			{Index: 2, Parts: []Part{{"HumanEval/0", 0, 4}}, Samples: 4, File: FilePin{Path: "shards/shard-002.jsonl"}},
		},
	}
}

func TestParsePlanRefusesBadShapes(t *testing.T) {
	b, _ := json.Marshal(validPlan())
	if _, err := parsePlan(b); err != nil {
		t.Fatalf("a valid plan: %v", err)
	}
	for name, c := range map[string]struct {
		change func(*Plan)
		want   string
	}{
		"a task in two shards": {func(p *Plan) {
			p.Shards[1].Parts, p.Shards[1].Samples = append(p.Shards[1].Parts, Part{"HumanEval/0", 0, 2}), 4
		}, "samples 0 to 2 of task HumanEval/0 are in shards 0 and 1"},
		"a task in no shard": {func(p *Plan) {
			p.Shards[0].Parts, p.Shards[0].Samples = p.Shards[0].Parts[:1], 2
		}, "samples 0 to 1 of task HumanEval/2 are in no shard"},
		"shards out of order":    {func(p *Plan) { p.Shards[0].Index, p.Shards[1].Index = 1, 0 }, "shard 0 of the plan has index 1"},
		"a file outside shards/": {func(p *Plan) { p.Shards[1].File.Path = "../x.jsonl" }, `shard 1 names file "../x.jsonl"`},
		"a sample count off":     {func(p *Plan) { p.Samples.Count = 6 }, "the tasks hold 5 samples, the plan 6"},
		"another format":         {func(p *Plan) { p.Format = Format + 1 }, fmt.Sprintf("plan format %d", Format+1)},
		"no shards":              {func(p *Plan) { p.Shards = nil }, "the plan has 0 shards"},
		"another binary path":    {func(p *Plan) { p.Binary.Path = "/bin/sh" }, `binary "/bin/sh"`},
	} {
		p := validPlan()
		c.change(&p)
		b, _ := json.Marshal(p)
		if _, err := parsePlan(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := parsePlan(append(b, []byte(`{"x":1}`)...)); err == nil {
		t.Error("trailing data accepted")
	}
	if _, err := parsePlan([]byte(fmt.Sprintf(`{"format":%d,"extra":true}`, Format))); err == nil {
		t.Error("an unknown field accepted")
	}
}

// TestReadPlanChecksTheSignature signs a plan with a bundle key, then
// changes the plan, the envelope, and the key: each is exit 4.
func TestReadPlanChecksTheSignature(t *testing.T) {
	dir := t.TempDir()
	p := validPlan()
	write := func() {
		if err := writeSigned(filepath.Join(dir, PlanFile), filepath.Join(dir, PlanSigFile), filepath.Join(dir, HomeDir), planPayload, p); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if _, err := ReadPlan(dir); err != nil {
		t.Fatalf("a signed plan: %v", err)
	}
	refused := func(what string) {
		t.Helper()
		if _, err := ReadPlan(dir); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "the plan does not verify") {
			t.Errorf("%s: %v, want exit 4", what, err)
		}
	}
	planPath := filepath.Join(dir, PlanFile)
	b, _ := os.ReadFile(planPath)
	os.WriteFile(planPath, []byte(strings.Replace(string(b), `"base_only": false`, `"base_only": true`, 1)), 0o644)
	refused("an edited plan")
	os.WriteFile(planPath, b, 0o644)

	// A shard record's envelope is not a plan's, though the same key signed it.
	if err := writeSigned(filepath.Join(dir, "x.json"), filepath.Join(dir, PlanSigFile), filepath.Join(dir, HomeDir), shardPayload, p); err != nil {
		t.Fatal(err)
	}
	refused("a shard record's envelope")
	write()

	// Another key: the bundle home is made anew (a new key and trust
	// file); the old signature no longer verifies.
	sig, _ := os.ReadFile(filepath.Join(dir, PlanSigFile))
	os.RemoveAll(filepath.Join(dir, HomeDir))
	write()
	os.WriteFile(filepath.Join(dir, PlanSigFile), sig, 0o644)
	refused("a signature by another key")
}

func TestPlanOptionsRefused(t *testing.T) {
	out := t.TempDir()
	for name, o := range map[string]PlanOptions{
		"no samples":                {Shards: 2, Out: filepath.Join(out, "b")},
		"zero shards":               {Samples: "s.jsonl", Out: filepath.Join(out, "b")},
		"an existing out":           {Samples: "s.jsonl", Shards: 2, Out: out},
		"a partition that is shell": {Samples: "s.jsonl", Shards: 2, Out: filepath.Join(out, "b"), Partition: "x\n#SBATCH --uid=0"},
	} {
		o.Limits = codebench.DefaultRunLimits()
		if err := o.validate(); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: %v, want exit 2", name, err)
		}
	}
}

func FuzzParsePlan(f *testing.F) {
	for _, p := range []Plan{validPlan(), splitPlan()} {
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	f.Add([]byte(`{"format":1,"shards":[{"index":0,"tasks":["a","a"]}]}`))
	f.Add([]byte(`{"format":2,"tasks":["a"],"task_samples":[3],"samples":{"count":3},"shards":[{"index":0,"parts":[{"task":"a","from":0,"to":2},{"task":"a","from":1,"to":3}],"samples":3}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parsePlan(b)
		if err != nil {
			return
		}
		// An accepted plan is an exact partition of every task's samples.
		count := map[string]int{}
		for i, id := range p.Tasks {
			count[id] = p.TaskSamples[i]
		}
		seen := map[string][]bool{}
		total := 0
		for i, s := range p.Shards {
			if s.Index != i {
				t.Fatalf("accepted shard %d with index %d", i, s.Index)
			}
			for _, pt := range s.Parts {
				if seen[pt.Task] == nil {
					seen[pt.Task] = make([]bool, count[pt.Task])
				}
				for j := pt.From; j < pt.To; j++ {
					if j < 0 || j >= len(seen[pt.Task]) || seen[pt.Task][j] {
						t.Fatalf("accepted sample %d of %s twice or out of range", j, pt.Task)
					}
					seen[pt.Task][j] = true
					total++
				}
			}
		}
		for id, n := range count {
			if len(seen[id]) != n || slices.Contains(seen[id], false) {
				t.Fatalf("accepted a plan that leaves samples of %s in no shard", id)
			}
		}
		if total != p.Samples.Count {
			t.Fatalf("accepted %d planned samples for a count of %d", total, p.Samples.Count)
		}
	})
}
