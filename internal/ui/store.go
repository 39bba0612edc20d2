package ui

import (
	"fmt"
	"path/filepath"

	"github.com/reprolab/repro/internal/store"
)

// StoreProgress returns the receiver of a store's events: under --json a
// "progress" message per event on stdout, on a terminal one status line
// per asset, and nothing otherwise (the command reports failures itself).
func (t *Terminal) StoreProgress() func(store.Event) {
	return func(e store.Event) {
		if t.json {
			t.Message(MessageProgress, e)
			return
		}
		var line string
		done := false
		switch e.Phase {
		case store.PhaseWait:
			line = "waiting for another repro process"
		case store.PhaseStart, store.PhaseProgress:
			line = Bar(e.Bytes, e.Total)
		case store.PhaseRetry:
			line, done = "retrying: "+e.Error, true
		case store.PhaseStored:
			line, done = Bar(e.Total, e.Total)+" verified", true
		case store.PhaseCached:
			line, done = "already stored, verified", true
		case store.PhaseFailed:
			line, done = "failed", true
		default:
			return
		}
		line = fmt.Sprintf("%-28s %s", e.ID, line)
		if done {
			t.StatusDone(line)
		} else {
			t.Status(line)
		}
	}
}

// StageProgress returns a receiver of "stage done/total" counts that draws
// them as a status line on a terminal.
func (t *Terminal) StageProgress() func(stage string, done, total int) {
	return func(stage string, done, total int) {
		t.Status(fmt.Sprintf("%-13s %d/%d", stage, done, total))
	}
}

// HashProgress returns a receiver of hashing progress (file, bytes hashed,
// size) that draws it as a status line on a terminal.
func (t *Terminal) HashProgress() func(name string, done, total int64) {
	return func(name string, done, total int64) {
		line := fmt.Sprintf("hashing %q: %.1f of %.1f GiB", filepath.Base(name), float64(done)/(1<<30), float64(total)/(1<<30))
		if done >= total {
			t.StatusDone(line)
		} else {
			t.Status(line)
		}
	}
}
