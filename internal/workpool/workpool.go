// Package workpool runs a list of jobs on a fixed number of workers, each
// with its own state (a sandbox supervisor, a container), and stops at the
// first error.
package workpool

import (
	"context"
	"sync"
)

// Size returns how many workers Run starts for jobs jobs when at most
// parallel may run at once: at least one, and no more than there are jobs.
func Size(parallel, jobs int) int { return max(1, min(parallel, jobs)) }

// Worker is one worker's state and what it does. Start makes the state
// when the worker begins; Do runs one job with it; Stop releases it when
// the worker ends, also after a failure. Start and Stop may be nil.
type Worker[S, J any] struct {
	Start func() S
	Do    func(ctx context.Context, state S, job J) error
	Stop  func(state S)
}

// Run hands jobs, in order, to Size(parallel, len(jobs)) workers. The
// first error a job returns cancels the context of every other job and is
// what Run returns once all workers have stopped; a worker takes no job
// after its own failed. With no error, Run returns ctx's error, so a
// cancelled run never looks complete.
func Run[S, J any](ctx context.Context, parallel int, jobs []J, w Worker[S, J]) error {
	if len(jobs) == 0 {
		return ctx.Err()
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	queue := make(chan J)
	for i := 0; i < Size(parallel, len(jobs)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var state S
			if w.Start != nil {
				state = w.Start()
			}
			if w.Stop != nil {
				defer w.Stop(state)
			}
			for job := range queue {
				if err := w.Do(inner, state, job); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					break
				}
			}
			for range queue {
				// The run failed: drain without working so the feeder ends.
			}
		}()
	}
feed:
	for _, job := range jobs {
		if inner.Err() != nil {
			break // select would pick at random between a ready send and Done
		}
		select {
		case queue <- job:
		case <-inner.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
