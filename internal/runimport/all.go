package runimport

import (
	"context"
	"fmt"
	"os"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
)

// Outcome is what became of one bundle of ImportAll: its Result, or the
// text of its error.
type Outcome struct {
	Bundle string `json:"bundle"`
	*Result
	Error string `json:"error,omitempty"`
}

// ImportAll imports each evidence bundle of bundles into home, in order,
// as `repro runs import` does. Every path must be a readable regular file
// (else a usage error, exit 2, before anything is read) and the trust file
// (trustPath, "" for home's own) must load (runs.LoadTrust) before any
// bundle is imported. A bundle that fails does not stop the others; once
// ctx is done the bundles not yet begun fail with runs.Interrupted's
// error. Each imported run is noted in the run index (a cache, so a
// failure to note it is ignored). done, if not nil, receives each
// bundle's outcome and error as soon as it is known.
//
// ImportAll returns every outcome and nil when all were imported (or
// already there); else, for one bundle, its error, and for several, an
// error with the highest exit code among them that counts the bundles not
// imported.
func ImportAll(ctx context.Context, home string, bundles []string, trustPath string, done func(Outcome, error)) ([]Outcome, error) {
	for _, b := range bundles {
		if fi, err := os.Stat(b); err != nil || !fi.Mode().IsRegular() {
			return nil, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: not a readable regular file", b)
		}
	}
	tf, err := runs.LoadTrust(home, trustPath)
	if err != nil {
		return nil, err
	}
	if trustPath == "" {
		trustPath = layout.Home(home).Trust()
	}
	var out []Outcome
	var worst error
	failed := 0
	for _, b := range bundles {
		var res *Result
		err := ctx.Err()
		if err != nil {
			// A signal: the bundles not yet begun are not read.
			err = runs.Interrupted(ctx, fmt.Sprintf("bundle %q", b))
		} else {
			res, err = ImportContext(ctx, home, b, tf, trustPath)
		}
		o := Outcome{Bundle: b, Result: res}
		if err != nil {
			if worst == nil || exitcode.Of(err) > exitcode.Of(worst) {
				worst = err
			}
			failed++
			o = Outcome{Bundle: b, Error: err.Error()}
		} else {
			_ = runindex.NoteRun(home, res.RunID) // a cache: the next runs list mends it
		}
		out = append(out, o)
		if done != nil {
			done(o, err)
		}
	}
	if worst != nil && len(bundles) > 1 {
		return out, exitcode.Errorf(exitcode.Of(worst), "%d of %d bundles not imported", failed, len(bundles))
	}
	return out, worst
}
