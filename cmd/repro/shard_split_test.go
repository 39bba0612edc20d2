package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestShardSplitTaskMatchesSingleRun plans the 3 samples of one task over
// 2 shards, so that the planner must split the task's samples, runs each shard
// through the real sandboxed path (repro shard run, as an array task runs
// it, without Slurm, both at once) and merges: the merged verdicts and pass@k are the
// single run's, verdict by verdict.
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
		go func() { defer wg.Done(); runs[k] = repro(t, nil, shardRunArgs(bundle, k)...) }()
	}
	wg.Wait()
	for k, r := range runs {
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d: %s", k, r.code, r.stderr)
		}
	}
	step("shards")
	r := repro(t, []string{"REPRO_HOME=" + t.TempDir()}, "shard", "merge", bundle, "--json")
	if r.code != 0 {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	var m struct {
		ResultsFile string `json:"results_file"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("merge document: %v\n%s", err, r.stdout)
	}
	sameVerdicts(t, single, readShardEvalResults(t, m.ResultsFile))
	step("merge")
}
