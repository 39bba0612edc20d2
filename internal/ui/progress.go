package ui

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// stageProgress is one stage's progress message under --json.
type stageProgress struct {
	Stage      string  `json:"stage"`
	Done       int     `json:"done"`
	Total      int     `json:"total"`
	Rate       float64 `json:"per_second"`
	ETASeconds float64 `json:"eta_seconds"`
	// Verdicts are the verdicts so far of the stage's samples, where the
	// stage reports them.
	Verdicts *Verdicts `json:"verdicts,omitempty"`
}

// Verdicts counts the samples of a stage that have every verdict: Passed
// and Failed of Samples in all.
type Verdicts struct {
	Samples int `json:"samples"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
}

// Rate shows stages' "done/total" counts with their rate and the time
// left, and the verdicts so far where the stage has them (see
// RateProgress for where it writes). It is safe for concurrent use.
type Rate struct {
	t   *Terminal
	now func() time.Time

	mu       sync.Mutex
	stage    string
	maxDone  int // the stage's highest count so far
	start    time.Time
	lastMsg  time.Time
	vStage   string // the stage the verdicts belong to
	verdicts Verdicts
}

// NewRate returns a Rate that writes to t; now gives the time (nil for
// the clock).
func (t *Terminal) NewRate(now func() time.Time) *Rate {
	if now == nil {
		now = time.Now
	}
	return &Rate{t: t, now: now}
}

// RateProgress returns a receiver of "stage done/total" counts that
// shows the rate and the time left. On a terminal it draws a status line
// with a bar, the count, jobs per second and an ETA; under --json it
// writes JSON-lines progress messages (message_type "progress") to
// stderr, at most one a second per stage and always the stage's last, so
// that stdout keeps its one document. Elsewhere it writes nothing. The
// rate is measured from the stage's first count; now gives the time (nil
// for the clock).
func (t *Terminal) RateProgress(now func() time.Time) func(stage string, done, total int) {
	return t.NewRate(now).Count
}

// Verdicts records the verdicts so far of stage's samples: passed and
// failed of samples. They are shown with the stage's next count (a
// receiver reports each job's verdicts before counting it).
func (r *Rate) Verdicts(stage string, passed, failed, samples int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vStage, r.verdicts = stage, Verdicts{Samples: samples, Passed: passed, Failed: failed}
}

// Count shows that done of total jobs of stage s are done (see
// RateProgress).
func (r *Rate) Count(s string, done, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.t
	at := r.now()
	if s != r.stage {
		r.stage, r.start, r.lastMsg, r.maxDone = s, at, time.Time{}, 0
	}
	// Counts of jobs that end together may arrive out of order: the count
	// shown never goes back, and a late count after the last shows the
	// last again, with the verdicts recorded since.
	done = max(done, r.maxDone)
	r.maxDone = done
	p := stageProgress{Stage: s, Done: done, Total: total}
	if el := at.Sub(r.start).Seconds(); el > 0 && done > 0 {
		p.Rate = float64(done) / el
		p.ETASeconds = float64(total-done) / p.Rate
	}
	if r.vStage == s {
		v := r.verdicts
		p.Verdicts = &v
	}
	switch {
	case t.json:
		if done < total && at.Sub(r.lastMsg) < time.Second {
			return
		}
		r.lastMsg = at
		if line, err := messageLine(MessageProgress, p); err == nil {
			t.mu.Lock()
			t.stderr.Write(line)
			t.mu.Unlock()
		}
	case t.tty:
		t.Status(progressLine(p))
	}
}

// progressLine is a stage's status line for people: with a bar, or with
// the verdicts so far in its place where the stage has them.
func progressLine(p stageProgress) string {
	const width = 24
	filled := 0
	if p.Total > 0 {
		filled = min(max(p.Done*width/p.Total, 0), width)
	}
	line := fmt.Sprintf("%-12s [%s%s] %d/%d", p.Stage, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Done, p.Total)
	if p.Verdicts != nil {
		line = fmt.Sprintf("%s %d/%d jobs", p.Stage, p.Done, p.Total)
	}
	if p.Rate > 0 {
		line += fmt.Sprintf("  %.1f jobs/s  ETA %s", p.Rate, (time.Duration(p.ETASeconds) * time.Second).String())
	}
	if v := p.Verdicts; v != nil {
		line += fmt.Sprintf("  samples %d/%d: %d passed, %d failed", v.Passed+v.Failed, v.Samples, v.Passed, v.Failed)
	}
	return line
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
