package workpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRunDoesEveryJobOnce(t *testing.T) {
	jobs := make([]int, 1000)
	for i := range jobs {
		jobs[i] = i
	}
	var (
		mu      sync.Mutex
		seen    = map[int]int{}
		started atomic.Int32
		stopped atomic.Int32
	)
	err := Run(context.Background(), 7, jobs, Worker[*int, int]{
		Start: func() *int { started.Add(1); return new(int) },
		Do: func(_ context.Context, n *int, j int) error {
			*n++
			mu.Lock()
			seen[j]++
			mu.Unlock()
			return nil
		},
		Stop: func(*int) { stopped.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(jobs) {
		t.Fatalf("%d distinct jobs done, want %d", len(seen), len(jobs))
	}
	for j, n := range seen {
		if n != 1 {
			t.Fatalf("job %d done %d times", j, n)
		}
	}
	if started.Load() != 7 || stopped.Load() != 7 {
		t.Fatalf("started %d, stopped %d workers; want 7 and 7", started.Load(), stopped.Load())
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var after atomic.Int32
	jobs := make([]int, 10000)
	for i := range jobs {
		jobs[i] = i
	}
	var stopped atomic.Int32
	err := Run(context.Background(), 4, jobs, Worker[struct{}, int]{
		Do: func(ctx context.Context, _ struct{}, j int) error {
			if j == 10 {
				return boom
			}
			if j > 10 && ctx.Err() != nil {
				after.Add(1)
			}
			return nil
		},
		Stop: func(struct{}) { stopped.Add(1) },
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v; want boom", err)
	}
	// Jobs already handed out may still see a cancelled context, but the
	// feeder stops: far fewer than the 9989 remaining jobs run.
	if after.Load() > 8 {
		t.Fatalf("%d jobs ran after the failure", after.Load())
	}
	if stopped.Load() != 4 {
		t.Fatalf("%d workers stopped, want 4", stopped.Load())
	}
}

func TestRunReportsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, 2, []int{1, 2, 3}, Worker[struct{}, int]{
		Do: func(context.Context, struct{}, int) error { return nil },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
}

func TestSize(t *testing.T) {
	for _, c := range [][3]int{{8, 3, 3}, {2, 10, 2}, {0, 5, 1}, {4, 0, 1}} {
		if got := Size(c[0], c[1]); got != c[2] {
			t.Errorf("Size(%d, %d) = %d; want %d", c[0], c[1], got, c[2])
		}
	}
}
