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
	if now == nil {
		now = time.Now
	}
	var (
		mu      sync.Mutex
		stage   string
		start   time.Time
		lastMsg time.Time
	)
	return func(s string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		at := now()
		if s != stage {
			stage, start, lastMsg = s, at, time.Time{}
		}
		p := stageProgress{Stage: s, Done: done, Total: total}
		if el := at.Sub(start).Seconds(); el > 0 && done > 0 {
			p.Rate = float64(done) / el
			p.ETASeconds = float64(total-done) / p.Rate
		}
		switch {
		case t.json:
			if done < total && at.Sub(lastMsg) < time.Second {
				return
			}
			lastMsg = at
			if line, err := messageLine(MessageProgress, p); err == nil {
				t.mu.Lock()
				t.stderr.Write(line)
				t.mu.Unlock()
			}
		case t.tty:
			t.Status(progressLine(p))
		}
	}
}

// progressLine is a stage's status line for people.
func progressLine(p stageProgress) string {
	const width = 24
	filled := 0
	if p.Total > 0 {
		filled = min(max(p.Done*width/p.Total, 0), width)
	}
	line := fmt.Sprintf("%-12s [%s%s] %d/%d", p.Stage, strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Done, p.Total)
	if p.Rate > 0 {
		line += fmt.Sprintf("  %.1f jobs/s  ETA %s", p.Rate, (time.Duration(p.ETASeconds) * time.Second).String())
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
