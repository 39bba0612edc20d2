package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/reprolab/repro/internal/store"
	"golang.org/x/term"
)

// progressSink renders store events: JSON lines on stdout with --json, a
// one-line status per asset on a terminal, and nothing when stderr is piped
// (apart from failures, which the command reports itself).
type progressSink struct {
	mu    sync.Mutex
	json  *json.Encoder
	tty   io.Writer
	shown map[string]bool
}

func newProgressSink(stdout io.Writer, asJSON bool) *progressSink {
	p := &progressSink{shown: map[string]bool{}}
	if asJSON {
		p.json = json.NewEncoder(stdout)
	} else if term.IsTerminal(int(os.Stderr.Fd())) {
		p.tty = os.Stderr
	}
	return p
}

func (p *progressSink) event(e store.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json != nil {
		p.json.Encode(struct {
			Type string `json:"message_type"`
			store.Event
		}{"progress", e})
		return
	}
	if p.tty == nil {
		return
	}
	line := ""
	endsLine := true
	switch e.Phase {
	case store.PhaseWait:
		line, endsLine = "waiting for another repro process", false
	case store.PhaseStart, store.PhaseProgress:
		line, endsLine = bar(e.Bytes, e.Total), false
	case store.PhaseRetry:
		line = "retrying: " + e.Error
	case store.PhaseStored:
		line = bar(e.Total, e.Total) + " verified"
	case store.PhaseCached:
		line = "already stored, verified"
	case store.PhaseFailed:
		line = "failed"
	default:
		return
	}
	fmt.Fprintf(p.tty, "\r\033[K%-28s %s", e.ID, line)
	if endsLine {
		fmt.Fprintln(p.tty)
	}
}

func bar(n, total int64) string {
	const width = 30
	if total <= 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	filled := int(n * width / total)
	if filled > width {
		filled = width
	}
	b := make([]byte, width)
	for i := range b {
		if i < filled {
			b[i] = '#'
		} else {
			b[i] = '.'
		}
	}
	return fmt.Sprintf("[%s] %5.1f%% of %s", b, 100*float64(n)/float64(total), humanBytes(total))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
