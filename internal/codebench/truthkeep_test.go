package codebench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
)

// phaseOf is a phase's ground truth of n inputs, each measured at secs.
func phaseOf(n int, secs float64) *phaseTruth {
	pt := &phaseTruth{N: n, Times: make([]float64, n), Encode: make([]float64, n)}
	for i := range pt.Times {
		pt.Times[i] = secs
	}
	return pt
}

// TestTruthKeepsTheFirstWritten: two processes under one key that compute
// a task's ground truth at once (two Truths on one cache folder, as shards
// of one sharded run in a shared home) end up judging it by the same
// truth, the first written (even one of a failed canonical solution), with
// equal digests; a record there that is not usable for what is wanted
// (base inputs only, plus wanted) is replaced.
func TestTruthKeepsTheFirstWritten(t *testing.T) {
	dir := t.TempDir()
	key := TruthKey{Dataset: "d", Image: "i", CPU: "c"}
	a, err := OpenTruth(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenTruth(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	tk := &task.Task{ID: "T/3", Index: 3, Base: []json.RawMessage{[]byte("[1]")}, Plus: []json.RawMessage{[]byte("[2]"), []byte("[3]")}}
	if a.Missing([]*task.Task{tk}, true) == nil || b.Missing([]*task.Task{tk}, true) == nil {
		t.Fatal("a fresh cache holds the task")
	}
	// Both found none; a writes first, then b, with other times.
	first := &taskTruth{Task: tk.ID, Base: phaseOf(1, 0.01), Plus: phaseOf(2, 0.5)}
	second := &taskTruth{Task: tk.ID, Base: phaseOf(1, 0.02), Plus: phaseOf(2, 0.7)}
	if got, err := a.keep(context.Background(), tk, first, true); err != nil || got != first {
		t.Fatalf("the first writer keeps %v (%v), want its own", got, err)
	}
	got, err := b.keep(context.Background(), tk, second, true)
	if err != nil || got.Plus.Times[0] != 0.5 {
		t.Fatalf("the second writer keeps %+v (%v), want the first's", got, err)
	}
	da, _ := a.TaskDigest(tk)
	db, _ := b.TaskDigest(tk)
	if da != db {
		t.Fatalf("the two judge the task by ground truth %s and %s", da.Hex(), db.Hex())
	}
	// A later process reads the first too.
	c, _ := OpenTruth(dir, key)
	if dc, err := c.TaskDigest(tk); err != nil || dc != da {
		t.Fatalf("a later reader: %s (%v), want %s", dc.Hex(), err, da.Hex())
	}
	// A record of the base inputs only does not serve a run that wants
	// plus inputs: that run's truth replaces it.
	tk2 := &task.Task{ID: "T/4", Index: 4, Base: tk.Base, Plus: tk.Plus}
	if _, err := a.keep(context.Background(), tk2, &taskTruth{Task: tk2.ID, Base: phaseOf(1, 0.01)}, false); err != nil {
		t.Fatal(err)
	}
	d, _ := OpenTruth(dir, key)
	full := &taskTruth{Task: tk2.ID, Base: phaseOf(1, 0.03), Plus: phaseOf(2, 0.9)}
	if got, err := d.keep(context.Background(), tk2, full, true); err != nil || got != full {
		t.Fatalf("over a base-only record the plus run keeps %+v (%v), want its own", got, err)
	}
	e, _ := OpenTruth(dir, key)
	if got, err := e.Get(tk2); err != nil || got.Plus == nil || got.Plus.Times[0] != 0.9 {
		t.Fatalf("the cache holds %+v (%v), want the plus run's record", got, err)
	}
	// The first written stands also where it records a failed canonical
	// solution (a timeout under load) and a later process's ran: both
	// judge the task alike (its self-check then fails in both).
	tk5 := &task.Task{ID: "T/5", Index: 5, Base: tk.Base, Plus: tk.Plus}
	failed := &taskTruth{Task: tk5.ID, Error: "plus inputs: timeout"}
	if got, err := a.keep(context.Background(), tk5, failed, true); err != nil || got != failed {
		t.Fatalf("the first, failed: %+v (%v)", got, err)
	}
	ran := &taskTruth{Task: tk5.ID, Base: phaseOf(1, 0.01), Plus: phaseOf(2, 0.2)}
	if got, err := b.keep(context.Background(), tk5, ran, true); err != nil || got.Error != failed.Error {
		t.Fatalf("a success after a failure keeps %+v (%v), want the failure", got, err)
	}
	d5a, _ := a.TaskDigest(tk5)
	d5b, _ := b.TaskDigest(tk5)
	if d5a != d5b {
		t.Fatal("the two judge the failed task by different ground truth")
	}
}

// TestTruthReplacesABaseOnlyRecordOnce: processes that each found a
// task's ground truth recorded for the base inputs only, and each want
// plus inputs, each compute their own; the first to replace the record
// wins, and every other keeps that one (read again from the file, not
// the base-only record it read before), one after another and all at
// once, so all judge the task by one ground truth.
func TestTruthReplacesABaseOnlyRecordOnce(t *testing.T) {
	dir := t.TempDir()
	key := TruthKey{Dataset: "d", Image: "i", CPU: "c"}
	const procs, tasks = 8, 12
	for k := 0; k < tasks; k++ {
		tk := &task.Task{ID: fmt.Sprintf("T/%d", k), Index: k, Base: []json.RawMessage{[]byte("[1]")}, Plus: []json.RawMessage{[]byte("[2]")}}
		w, err := OpenTruth(dir, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.keep(context.Background(), tk, &taskTruth{Task: tk.ID, Base: phaseOf(1, 0.01)}, false); err != nil {
			t.Fatal(err)
		}
		// Each process has read the base-only record, and finds it
		// missing for plus inputs.
		truths := make([]*Truth, procs)
		for i := range truths {
			if truths[i], err = OpenTruth(dir, key); err != nil {
				t.Fatal(err)
			}
			if truths[i].load(tk, false) == nil || truths[i].Missing([]*task.Task{tk}, true) == nil {
				t.Fatal("the base-only record does not read as base-only")
			}
		}
		digests := make([]string, procs)
		keep := func(i int) {
			got, err := truths[i].keep(context.Background(), tk, &taskTruth{Task: tk.ID, Base: phaseOf(1, 0.02), Plus: phaseOf(1, float64(i+1))}, true)
			if err != nil || got.Plus == nil {
				t.Errorf("process %d: %+v, %v", i, got, err)
				return
			}
			sum, err := truths[i].TaskDigest(tk)
			if err != nil {
				t.Error(err)
			}
			digests[i] = sum.Hex()
		}
		if k%2 == 0 {
			for i := range truths {
				keep(i)
			}
		} else {
			var wg sync.WaitGroup
			for i := range truths {
				wg.Add(1)
				go func() { defer wg.Done(); keep(i) }()
			}
			wg.Wait()
		}
		later, _ := OpenTruth(dir, key)
		onDisk, err := later.TaskDigest(tk)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range digests {
			if d != onDisk.Hex() {
				t.Errorf("%s (processes %s): process %d judges by %.12s, the cache holds %.12s", tk.ID, map[bool]string{true: "one after another", false: "at once"}[k%2 == 0], i, d, onDisk.Hex())
			}
		}
	}
}
