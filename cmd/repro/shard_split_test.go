package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestShardSplitTaskMatchesSingleRun plans the 3 samples of one task over
// 2 shards, so that the planner must split the task's samples, runs each shard
// through the real sandboxed path (repro shard run, as an array task runs
// it, without Slurm, both at once) and merges: the merged verdicts and pass@k are the
// single run's, verdict by verdict. The shard holding a later part of the
// split task self-checks it on its base inputs only and the other in
// full; run again with --full-self-check, it checks it in full, and the
// merge gives the same verdicts.
func TestShardSplitTaskMatchesSingleRun(t *testing.T) {
	sb := newShardBundle(t, 1, "0", 2)
	single, bundle, step := sb.single, sb.dir, sb.step
	b, err := os.ReadFile(filepath.Join(bundle, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Shards []struct {
			Parts []struct {
				Task     string `json:"task"`
				From, To int
			} `json:"parts"`
		} `json:"shards"`
	}
	if err := json.Unmarshal(b, &plan); err != nil || len(plan.Shards) != 2 {
		t.Fatalf("plan.json: %v\n%s", err, b)
	}
	parts := map[string]int{}
	for _, s := range plan.Shards {
		for _, p := range s.Parts {
			parts[p.Task]++
		}
	}
	split := false
	for _, n := range parts {
		split = split || n > 1
	}
	if !split {
		t.Fatalf("no task split over shards: %s", b)
	}
	// Both at once, as array tasks on one node run: both hold a part of
	// the same task in the same bundle home.
	runs := make([]result, len(plan.Shards))
	var wg sync.WaitGroup
	for k := range plan.Shards {
		wg.Add(1)
		go func() { defer wg.Done(); runs[k] = repro(t, nil, append(shardRunArgs(bundle, k), "--json")...) }()
	}
	wg.Wait()
	later := -1 // the shard holding a part after the task's first sample
	for k, r := range runs {
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d: %s", k, r.code, r.stderr)
		}
		var want []string
		for _, p := range plan.Shards[k].Parts {
			if p.From > 0 {
				want, later = append(want, p.Task), k
			}
		}
		if got := shardSelfCheck(t, r); got.Tasks != len(plan.Shards[k].Parts) || !slices.Equal(got.BaseOnly, want) {
			t.Fatalf("shard %d self-checked %d tasks, %v on base inputs only; want %d, %v", k, got.Tasks, got.BaseOnly, len(plan.Shards[k].Parts), want)
		}
	}
	// Both name the ground truth they judged the split task by, and it is
	// the same (the bundle's): what the merge compares.
	var truth []map[string]string
	for k, r := range runs {
		var doc struct {
			Truth struct {
				Digests  map[string]string `json:"task_digests"`
				Cached   int               `json:"cached_tasks"`
				Computed int               `json:"computed_tasks"`
			} `json:"ground_truth"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("shard %d report: %v", k, err)
		}
		// The bundle's home holds the planning machine's ground truth
		// (Truth.TaskFiles), which this machine's shards use as it is.
		if doc.Truth.Cached != len(plan.Shards[k].Parts) || doc.Truth.Computed != 0 {
			t.Fatalf("shard %d: ground truth of %d tasks cached, %d computed; want the bundle's", k, doc.Truth.Cached, doc.Truth.Computed)
		}
		truth = append(truth, doc.Truth.Digests)
	}
	for task, n := range parts {
		if n > 1 && (truth[0][task] == "" || truth[0][task] != truth[1][task]) {
			t.Fatalf("ground truth of the split task %s: %q and %q", task, truth[0][task], truth[1][task])
		}
	}
	step("shards")
	merge := func(baseOnly int) {
		t.Helper()
		r := repro(t, []string{"REPRO_HOME=" + t.TempDir()}, "shard", "merge", bundle, "--json")
		if r.code != 0 {
			t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
		}
		var m struct {
			ResultsFile string `json:"results_file"`
			Shards      []struct {
				BaseOnly int `json:"self_check_base_only"`
			} `json:"shards"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("merge document: %v\n%s", err, r.stdout)
		}
		if got := m.Shards[later].BaseOnly; got != baseOnly {
			t.Errorf("merge: shard %d checked %d tasks on base inputs only, want %d", later, got, baseOnly)
		}
		sameVerdicts(t, single, readShardEvalResults(t, m.ResultsFile))
	}
	merge(1)
	step("merge")
	r := repro(t, nil, append(shardRunArgs(bundle, later), "--json", "--full-self-check")...)
	if r.code != 0 {
		t.Fatalf("shard %d --full-self-check: exit %d: %s", later, r.code, r.stderr)
	}
	if got := shardSelfCheck(t, r); got.Tasks != 1 || len(got.BaseOnly) != 0 {
		t.Fatalf("shard %d --full-self-check: %d tasks, %v on base inputs only", later, got.Tasks, got.BaseOnly)
	}
	merge(0)
	step("shard with --full-self-check, merge")
}

// shardSelfCheck reads the self-check of a shard run's --json report.
func shardSelfCheck(t *testing.T, r result) (sc struct {
	Tasks    int      `json:"tasks"`
	BaseOnly []string `json:"base_only_tasks"`
	Stats    struct {
		Jobs int `json:"jobs"`
	} `json:"stats"`
}) {
	t.Helper()
	var doc struct {
		SelfCheck *json.RawMessage `json:"self_check"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.SelfCheck == nil {
		t.Fatalf("shard report: %v\n%s", err, r.stdout)
	}
	if err := json.Unmarshal(*doc.SelfCheck, &sc); err != nil {
		t.Fatalf("shard report's self-check: %v", err)
	}
	// A job per phase: base and plus in full, base alone otherwise.
	if want := 2*(sc.Tasks-len(sc.BaseOnly)) + len(sc.BaseOnly); sc.Stats.Jobs != want {
		t.Fatalf("the self-check ran %d jobs for %d tasks, %d of them on base inputs only; want %d", sc.Stats.Jobs, sc.Tasks, len(sc.BaseOnly), want)
	}
	return sc
}
