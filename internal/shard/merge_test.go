package shard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// unshardedVerdicts are the verdicts one run gives splitPlan's samples:
// passes and failures in both phases, in an order a split would scramble.
func unshardedVerdicts(p Plan) ([]*task.Task, map[string][]codebench.ResultEntry) {
	var tasks []*task.Task
	eval := map[string][]codebench.ResultEntry{}
	for i, id := range p.Tasks {
		tasks = append(tasks, &task.Task{ID: id, Index: i})
		for j := range p.TaskSamples[i] {
			base, plus := codebench.StatusPass, codebench.StatusPass
			if (i+j)%3 == 0 {
				base = codebench.StatusFail
			}
			if (i*7+j)%4 == 1 {
				plus = codebench.StatusFail
			}
			eval[id] = append(eval[id], codebench.ResultEntry{TaskID: id, Solution: fmt.Sprintf("sample %d of %s", j, id), BaseStatus: base, PlusStatus: &plus})
		}
	}
	return tasks, eval
}

// cut gives each shard of p its part of eval, as its run reports it.
func cut(p Plan, eval map[string][]codebench.ResultEntry) []map[string][]codebench.ResultEntry {
	out := make([]map[string][]codebench.ResultEntry, len(p.Shards))
	for k, s := range p.Shards {
		out[k] = map[string][]codebench.ResultEntry{}
		for _, pt := range s.Parts {
			out[k][pt.Task] = append([]codebench.ResultEntry(nil), eval[pt.Task][pt.From:pt.To]...)
		}
	}
	return out
}

// TestMergePartsEqualsUnsharded merges the verdicts of a plan that splits
// a task over three shards, out of sample order: the merged verdicts and
// the summary with pass@k are those of the unsharded run.
func TestMergePartsEqualsUnsharded(t *testing.T) {
	p := splitPlan()
	b, _ := json.Marshal(p)
	if _, err := parsePlan(b); err != nil {
		t.Fatalf("the split plan: %v", err)
	}
	tasks, one := unshardedVerdicts(p)
	merged, err := mergeParts(&p, cut(p, one))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged, one) {
		t.Fatalf("merged verdicts differ from the unsharded run's:\n%v\n%v", merged, one)
	}
	want := codebench.Summarize(tasks, resultsOf(tasks, one), true, false)
	got := codebench.Summarize(tasks, resultsOf(tasks, merged), true, false)
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) || len(want.BasePassAtK) == 0 {
		t.Fatalf("merged summary %s, unsharded %s", gb, wb)
	}
}

// TestMergePartsRefusesNonPartitions: results short of a part, results of
// a task the shard does not hold, and plans whose parts overlap or leave
// a gap are refused.
func TestMergePartsRefusesNonPartitions(t *testing.T) {
	p := splitPlan()
	_, one := unshardedVerdicts(p)
	for name, c := range map[string]struct {
		change func(*Plan, []map[string][]codebench.ResultEntry)
		want   string
	}{
		"a verdict missing": {func(_ *Plan, r []map[string][]codebench.ResultEntry) {
			r[1]["HumanEval/0"] = r[1]["HumanEval/0"][1:]
		}, "shard 1 has 3 results for task HumanEval/0, its part 4 samples"},
		"a verdict too many": {func(_ *Plan, r []map[string][]codebench.ResultEntry) {
			r[2]["HumanEval/0"] = append(r[2]["HumanEval/0"], r[2]["HumanEval/0"][0])
		}, "shard 2 has 5 results for task HumanEval/0"},
		"another task's results": {func(_ *Plan, r []map[string][]codebench.ResultEntry) {
			r[1]["HumanEval/1"] = r[0]["HumanEval/1"]
		}, "shard 1 has results for 2 tasks, its parts 1"},
		"overlapping parts": {func(p *Plan, r []map[string][]codebench.ResultEntry) {
			p.Shards[0].Parts[0].From = 3
			r[0]["HumanEval/0"] = one["HumanEval/0"][3:6]
		}, "task HumanEval/0: the shards' parts start at sample 3 where 4 is next"},
		"a gap": {func(p *Plan, r []map[string][]codebench.ResultEntry) {
			p.Shards[0].Parts[0].From = 5
			r[0]["HumanEval/0"] = one["HumanEval/0"][5:6]
		}, "task HumanEval/0: the shards' parts start at sample 5 where 4 is next"},
	} {
		p := splitPlan()
		r := cut(p, one)
		c.change(&p, r)
		if _, err := mergeParts(&p, r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestParsePlanRefusesNonPartitions: every way a plan's parts can fail to
// be an exact partition of the tasks' samples, and a format 1 plan, are
// refused with a message naming the problem.
func TestParsePlanRefusesNonPartitions(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*Plan)
		want   string
	}{
		"overlapping parts": {func(p *Plan) {
			p.Shards[0].Parts[0].From, p.Shards[0].Samples, p.Samples.Count, p.TaskSamples[0] = 3, 6, 14, 11
		}, "samples 3 to 4 of task HumanEval/0 are in shards 2 and 0"},
		"a gap inside": {func(p *Plan) {
			p.Shards[0].Parts[0].From, p.Shards[0].Samples = 5, 4
		}, "samples 4 to 5 of task HumanEval/0 are in no shard"},
		"samples past the end": {func(p *Plan) { p.Shards[1].Parts[0].To, p.Shards[1].Samples = 11, 5 }, "samples 6 to 11 of task HumanEval/0, which has 10"},
		"an empty part":        {func(p *Plan) { p.Shards[1].Parts = append(p.Shards[1].Parts, Part{"HumanEval/1", 2, 2}) }, "samples 2 to 2 of task HumanEval/1"},
		"a task twice in a shard": {func(p *Plan) {
			p.Shards[1].Parts = []Part{{"HumanEval/0", 6, 8}, {"HumanEval/0", 8, 10}}
		}, "shard 1 holds task HumanEval/0 twice"},
		"a task the plan lacks": {func(p *Plan) {
			p.Shards[1].Parts = append(p.Shards[1].Parts, Part{"HumanEval/9", 0, 1})
		}, `part of task "HumanEval/9"`},
		"a shard without parts": {func(p *Plan) {
			p.Shards = append(p.Shards, Shard{Index: 3, File: FilePin{Path: "shards/shard-003.jsonl"}})
		}, "shard 3 has no parts"},
		"a shard's count off":    {func(p *Plan) { p.Shards[1].Samples = 5 }, "shard 1 has 5 samples, its parts 4"},
		"counts and tasks":       {func(p *Plan) { p.TaskSamples = p.TaskSamples[:1] }, "2 tasks and 1 task sample counts"},
		"a task without samples": {func(p *Plan) { p.TaskSamples[1], p.Samples.Count = 0, 10 }, "task HumanEval/1 has 0 samples"},
		"a task listed twice":    {func(p *Plan) { p.Tasks[1] = "HumanEval/0" }, "task HumanEval/0 is in the plan twice"},
	} {
		p := splitPlan()
		c.change(&p)
		b, _ := json.Marshal(p)
		if _, err := parsePlan(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// A plan of format 1 (whole tasks, "tasks" per shard) is refused by
	// its format, not as malformed, and says what to do.
	old := `{"format":1,"dataset":"humanevalplus","tasks":["HumanEval/0"],"samples":{"count":1},"shards":[{"index":0,"tasks":["HumanEval/0"],"samples":1}]}`
	if _, err := parsePlan([]byte(old)); err == nil || !strings.Contains(err.Error(), "plan format 1, this repro reads 2: make the bundle again") {
		t.Errorf("a format 1 plan: %v", err)
	}
}

// TestReadResultsChecksEachEntry: a shard's results file is read entry by
// entry and each entry must be the shard's sample at its place: another
// program, another task's name, a task or an entry the samples do not
// hold, or no "eval" at all is refused; what is accepted keeps the
// samples' programs, not copies.
func TestReadResultsChecksEachEntry(t *testing.T) {
	want := map[string][]string{"HumanEval/0": {"a", "b"}, "HumanEval/3": {"c"}}
	entry := func(task, sol string) string {
		return fmt.Sprintf(`{"task_id":%q,"solution":%q,"base_status":"pass","plus_status":"fail","base_fail_tests":[],"plus_fail_tests":[[1]]}`, task, sol)
	}
	file := func(h0, h3 string) string {
		return `{"date":"2026-12-07 01:00","hash":"md5","eval":{"HumanEval/0":[` + h0 + `],"HumanEval/3":[` + h3 + `]}}`
	}
	good := file(entry("HumanEval/0", "a")+","+entry("HumanEval/0", "b"), entry("HumanEval/3", "c"))
	write := func(s string) string {
		p := filepath.Join(t.TempDir(), "eval_results.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	eval, hash, err := readResults(write(good), want)
	if err != nil || hash != "md5" || len(eval) != 2 || len(eval["HumanEval/0"]) != 2 || eval["HumanEval/0"][1].Solution != "b" || *eval["HumanEval/3"][0].PlusStatus != codebench.StatusFail {
		t.Fatalf("a shard's own results: %v, %q, %+v", err, hash, eval)
	}
	if unsafe.StringData(eval["HumanEval/3"][0].Solution) != unsafe.StringData(want["HumanEval/3"][0]) {
		t.Error("an accepted entry holds a copy of its program")
	}
	for name, c := range map[string]struct{ text, why string }{
		"another program":        {file(entry("HumanEval/0", "a")+","+entry("HumanEval/0", "x"), entry("HumanEval/3", "c")), "result 1 of HumanEval/0 is not the shard's sample 1"},
		"another task's name":    {file(entry("HumanEval/0", "a")+","+entry("HumanEval/0", "b"), entry("HumanEval/0", "c")), `entry 0 of task "HumanEval/3" names task "HumanEval/0"`},
		"an entry more":          {file(entry("HumanEval/0", "a")+","+entry("HumanEval/0", "b")+","+entry("HumanEval/0", "b"), entry("HumanEval/3", "c")), "more results for HumanEval/0 than the shard's 2 samples"},
		"a task the shard lacks": {strings.Replace(good, `"HumanEval/3":`, `"HumanEval/4":`, 1), "results for task HumanEval/4, which the shard's samples do not hold"},
		"no eval":                {`{"hash":"md5","eval":null}`, `no "eval"`},
		"a duplicated task":      {strings.Replace(good, `"HumanEval/3":`, `"HumanEval/0":`, 1), "appears twice"},
	} {
		if _, _, err := readResults(write(c.text), want); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v; want %q in the error", name, err, c.why)
		}
	}
}

// TestSelfCheckCover: a shard may self-check a task on its base inputs
// only where it holds a later part of it, and only where the shard
// holding the task's first sample checked it in full under the same
// ground-truth key and by the same ground truth; everything else is
// refused naming every such shard and the rerun that mends it.
func TestSelfCheckCover(t *testing.T) {
	p := splitPlan() // HumanEval/0: shard 2 holds 0-4, shard 0 4-6, shard 1 6-10
	a := &codebench.TruthKey{Format: 2, Dataset: "d", Image: "i", CPU: "AMD EPYC"}
	b := &codebench.TruthKey{Format: 2, Dataset: "d", Image: "i", CPU: "Intel Xeon"}
	same := map[string]digest.SHA256{"HumanEval/0": digest.Of([]byte("truth"))}
	other := map[string]digest.SHA256{"HumanEval/0": digest.Of([]byte("truth computed again"))}
	good := []shardCheck{{[]string{"HumanEval/0"}, a, same}, {[]string{"HumanEval/0"}, a, same}, {nil, a, same}}
	if err := checkSelfCheckCover("B", &p, good); err != nil {
		t.Fatalf("base checks where shard 2 checked HumanEval/0 in full: %v", err)
	}
	if err := checkSelfCheckCover("B", &p, []shardCheck{{nil, a, same}, {nil, b, other}, {nil, nil, nil}}); err != nil {
		t.Fatalf("full self-checks everywhere, whatever the keys and ground truth: %v", err)
	}
	for name, c := range map[string]struct {
		checks []shardCheck
		want   []string
	}{
		"the first part checked on base inputs": {[]shardCheck{{nil, a, same}, {nil, a, same}, {[]string{"HumanEval/0"}, a, same}},
			[]string{"shard 2: it self-checked HumanEval/0 on its base inputs only, but it holds that task's first sample"}},
		"a whole task checked on base inputs": {[]shardCheck{{[]string{"HumanEval/1"}, a, same}, {nil, a, same}, {nil, a, same}},
			[]string{"shard 0: it self-checked HumanEval/1 on its base inputs only, but it holds that task's first sample"}},
		"a task the shard does not hold": {[]shardCheck{{[]string{"HumanEval/5"}, a, same}, {nil, a, same}, {nil, a, same}},
			[]string{"shard 0: it self-checked HumanEval/5 on its base inputs only"}},
		"another CPU model than the full check's": {[]shardCheck{{[]string{"HumanEval/0"}, a, same}, {[]string{"HumanEval/0"}, b, same}, {nil, a, same}},
			[]string{`shard 1: it self-checked HumanEval/0 on its base inputs only, with ground truth ` + b.Digest().Hex()[:12] + ` (CPU "Intel Xeon"), and shard 2 checked it in full with other ground truth`}},
		"no key": {[]shardCheck{{[]string{"HumanEval/0"}, nil, same}, {nil, a, same}, {nil, a, same}},
			[]string{"shard 0: it self-checked HumanEval/0 on its base inputs only, and its run or shard 2's names no ground truth"}},
		"ground truth computed twice": {[]shardCheck{{[]string{"HumanEval/0"}, a, same}, {[]string{"HumanEval/0"}, a, other}, {nil, a, same}},
			[]string{"shard 1: it self-checked HumanEval/0 on its base inputs only, and judged it by ground truth " + other["HumanEval/0"].Hex()[:12] + ", not the " + same["HumanEval/0"].Hex()[:12] + " that shard 2 checked in full"}},
		"no digest": {[]shardCheck{{[]string{"HumanEval/0"}, a, nil}, {[]string{"HumanEval/0"}, a, same}, {nil, a, same}},
			[]string{"shard 0: it self-checked HumanEval/0 on its base inputs only, and its run or shard 2's records no digest"}},
		"every bad shard at once": {[]shardCheck{{[]string{"HumanEval/0"}, b, same}, {[]string{"HumanEval/0"}, a, other}, {nil, a, same}},
			[]string{"shard 0: it self-checked HumanEval/0", "shard 1: it self-checked HumanEval/0", "repro shard run B --index 0 --full-self-check, repro shard run B --index 1 --full-self-check"}},
	} {
		err := checkSelfCheckCover("B", &p, c.checks)
		if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "--full-self-check") {
			t.Errorf("%s: %v, want exit 4 naming the rerun", name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", name, err, w)
			}
		}
	}
}
