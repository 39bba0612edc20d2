package mllog

import (
	"fmt"
	"io"
	"strconv"

	"github.com/reprolab/repro/internal/ui"
)

// WriteText writes the report for people: one line per file (its name
// quoted), its findings, then the scores. With details false only the
// verdict lines and scores are written (the JSON carries the rest).
func (rep *Report) WriteText(w io.Writer, details bool) {
	mode := "ruleset " + rep.Ruleset
	if rep.Strict {
		mode += ", strict"
	}
	for _, r := range rep.Files {
		verdict := "ok  "
		if !r.Compliant {
			verdict = "FAIL"
		}
		line := fmt.Sprintf("%s %q", verdict, r.File)
		if r.Benchmark != "" {
			line += " (" + r.Benchmark + ")"
		}
		if r.Minutes != nil {
			line += fmt.Sprintf("  %.4f min", *r.Minutes)
		}
		ui.Fprintf(w, "%s\n", line)
		if !details {
			continue
		}
		for _, f := range r.Findings {
			loc := ""
			if f.Line > 0 {
				loc = "line " + strconv.Itoa(f.Line) + ": "
			}
			ui.Fprintf(w, "     %s %s%s [%s]\n", f.Severity, loc, f.Message, f.Rule)
		}
	}
	for _, s := range rep.Scores {
		if s.Minutes != nil {
			ui.Fprintf(w, "score %s: %.4f min (olympic mean of %d runs, %d dropped; %s)\n", s.Benchmark, *s.Minutes, s.Runs, s.Dropped, mode)
			continue
		}
		msg := fmt.Sprintf("score %s: none (%s)", s.Benchmark, s.Note)
		if s.MeanMinutes != nil {
			msg += fmt.Sprintf("; plain mean of passing runs %.4f min", *s.MeanMinutes)
		}
		ui.Fprintf(w, "%s\n", msg)
	}
}
