package shard

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// realLoads reads the committed per-task ground-truth seconds of HumanEval+
// (testdata/groundtruth-seconds.tsv, made by groundtruth-seconds.sh beside
// it from a real ground-truth cache) and costs n samples per task as
// WritePlan does: each sample the canonical solution's seconds plus
// perSampleSeconds.
func realLoads(t testing.TB, n int) ([]string, []TaskLoad) {
	t.Helper()
	f, err := os.Open("testdata/groundtruth-seconds.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	var loads []TaskLoad
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, secs, ok := strings.Cut(sc.Text(), "\t")
		s, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil || s < 0 {
			t.Fatalf("testdata/groundtruth-seconds.tsv: bad line %q", sc.Text())
		}
		ids = append(ids, id)
		loads = append(loads, TaskLoad{Samples: n, Unit: s + perSampleSeconds})
	}
	if err := sc.Err(); err != nil || len(loads) != 164 {
		t.Fatalf("testdata/groundtruth-seconds.tsv: %d tasks (%v), want HumanEval+'s 164", len(loads), err)
	}
	return ids, loads
}

// checkPartition fails unless plan holds every sample of every task
// exactly once, each shard a task at most once and at least one part.
func checkPartition(t *testing.T, loads []TaskLoad, plan [][]PartOf) {
	t.Helper()
	seen := make([][]bool, len(loads))
	for i, l := range loads {
		seen[i] = make([]bool, l.Samples)
	}
	for k, s := range plan {
		if len(s) == 0 {
			t.Fatalf("shard %d is empty", k)
		}
		in := map[int]bool{}
		for _, p := range s {
			if in[p.Task] {
				t.Fatalf("shard %d holds task %d twice", k, p.Task)
			}
			in[p.Task] = true
			if p.From < 0 || p.To > loads[p.Task].Samples || p.From >= p.To {
				t.Fatalf("shard %d: part %+v of a task of %d samples", k, p, loads[p.Task].Samples)
			}
			for j := p.From; j < p.To; j++ {
				if seen[p.Task][j] {
					t.Fatalf("sample %d of task %d planned twice", j, p.Task)
				}
				seen[p.Task][j] = true
			}
		}
	}
	for i, s := range seen {
		for j, ok := range s {
			if !ok {
				t.Fatalf("sample %d of task %d in no shard", j, i)
			}
		}
	}
}

// TestBalanceRealGroundTruth plans HumanEval+ at n = 100 samples per task,
// costed by the real ground-truth seconds, over 4, 10, 100 and 1000 shards
// and checks the plan's dearest shard against the mean of the unsharded
// run (its cost over the shards) and against LowerBound, which no plan can
// beat: a part of a task repeats that task's self-check, and a single
// sample of HumanEval/15 costs 19.9 s, so past some shard count the mean
// cannot be reached. The dearest shard must be within 5 % of both where
// LowerBound is the mean, and within 5 % of LowerBound always. It prints
// the figures of docs/shard.md (go test ./internal/shard -run
// TestBalanceRealGroundTruth -v).
func TestBalanceRealGroundTruth(t *testing.T) {
	_, loads := realLoads(t, 100)
	for _, n := range []int{4, 10, 100, 1000} {
		plan := BalanceParts(loads, n)
		if len(plan) != n {
			t.Fatalf("%d shards: the plan has %d", n, len(plan))
		}
		checkPartition(t, loads, plan)
		total, parts := 0.0, 0
		for _, l := range loads {
			total += partCost(l.Samples, l.Unit)
		}
		for _, s := range plan {
			parts += len(s)
		}
		mean, lb, got := total/float64(n), LowerBound(loads, n), MaxLoad(loads, plan)
		t.Logf("%4d shards: largest %7.1f s, mean %7.1f s (%.3f×), lower bound %7.1f s (%.3f×), %d parts of %d tasks",
			n, got, mean, got/mean, lb, got/lb, parts, len(loads))
		if lb < mean*(1-1e-9) {
			t.Fatalf("%d shards: the lower bound %.1f is under the mean %.1f", n, lb, mean)
		}
		if got > 1.05*lb {
			t.Errorf("%d shards: the largest shard costs %.1f s, %.3f× the lower bound %.1f s (mean %.1f s)", n, got, got/lb, lb, mean)
		}
	}
}

// TestBalancePartsKeepsWholeTasks: where whole tasks balance within
// splitSlack, no task is split.
func TestBalancePartsKeepsWholeTasks(t *testing.T) {
	loads := []TaskLoad{{3, 1}, {3, 1}, {3, 1}, {2, 1}, {2, 1}, {2, 1}}
	plan := BalanceParts(loads, 3)
	checkPartition(t, loads, plan)
	for k, s := range plan {
		for _, p := range s {
			if p.From != 0 || p.To != loads[p.Task].Samples {
				t.Errorf("shard %d splits task %d: %+v", k, p.Task, p)
			}
		}
	}
	// One dear task over 4 shards: it is split, and the largest shard
	// is within 5 % of the bound.
	loads = []TaskLoad{{100, 1}, {1, 1}, {1, 1}, {1, 1}}
	plan = BalanceParts(loads, 4)
	checkPartition(t, loads, plan)
	if got, lb := MaxLoad(loads, plan), LowerBound(loads, 4); got > 1.05*lb {
		t.Errorf("largest %.1f, bound %.1f: %v", got, lb, plan)
	}
	if fmt.Sprint(plan) != fmt.Sprint(BalanceParts(loads, 4)) {
		t.Error("the balance is not deterministic")
	}
}
