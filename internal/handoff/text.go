package handoff

import (
	"fmt"
	"io"

	"github.com/reprolab/repro/internal/ui"
)

// WriteText writes the ingest record for people: the verdict, the
// preflight reports, each run and the score on w, the problems on
// problems.
func (r *IngestRecord) WriteText(o, problems io.Writer) {
	ui.Fprintf(o, "%s: %s, manifest sha256:%s, verdict %s\n", r.ID, r.Workload, r.ManifestDigest, r.Verdict)
	for _, p := range r.Preflight {
		ui.Fprintf(o, "  preflight %q (%s on %s): %s, %d pins verified\n", p.File, p.Mode, p.Host, p.Result, p.PinsVerified)
	}
	for _, run := range r.Runs {
		state := "not compliant"
		if run.Compliant {
			state = "compliant"
		}
		if run.File == "" {
			state = "missing"
		}
		mins := ""
		if run.Minutes != nil {
			mins = fmt.Sprintf(", %.2f min", *run.Minutes)
		}
		ui.Fprintf(o, "  run %d seed %d: %s%s\n", run.Index, run.Seed, state, mins)
	}
	if s := r.Score; s != nil {
		if s.Minutes != nil {
			ui.Fprintf(o, "  score: %.2f min (olympic mean of %d runs)\n", *s.Minutes, s.Runs)
		} else {
			ui.Fprintf(o, "  score: none (%s)\n", s.Note)
		}
	}
	for _, p := range r.Problems {
		ui.Fprintf(problems, "  problem: %s\n", p)
	}
	ui.Fprintf(o, "  recorded as run %s in %q (repro runs verify %s)\n", r.RunID, r.RunDir, r.RunID)
}

// WriteRequirements writes each workload's requirements, where each is
// checked and how to satisfy it, for people.
func WriteRequirements(o io.Writer, ws []*Workload) {
	for _, w := range ws {
		ui.Fprintf(o, "%s (MLPerf %s, ruleset %s, %d runs)\n", w.Name, w.Benchmark, w.Ruleset, w.DefaultRuns)
		for _, r := range w.Requirements {
			ui.Fprintf(o, "  %s: %s\n", r.ID, r.Title)
			for _, c := range r.Checks {
				ui.Fprintf(o, "    [%s] %s\n", c.Where, c.What)
			}
			ui.Fprintf(o, "    to satisfy: %s\n", r.Remedy)
		}
	}
}
