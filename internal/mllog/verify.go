package mllog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"

	"github.com/reprolab/repro/internal/workpool"
	"golang.org/x/sync/semaphore"
)

// Report is the verdict on a set of logs.
type Report struct {
	Ruleset string `json:"ruleset"`
	Strict  bool   `json:"strict"`
	// Compliant is true when every file is compliant.
	Compliant bool      `json:"compliant"`
	Files     []*Result `json:"files"`
	// Scores has one entry per benchmark, in name order.
	Scores []SetScore `json:"scores"`
}

// ErrNoLogs is returned when there is nothing to verify: an empty set
// of logs is not evidence of anything.
var ErrNoLogs = errors.New("no logs to verify")

// Verify checks each log (none may be nil) and scores the set per
// benchmark. A log belongs to the benchmark it declares, or to
// opt.Benchmark when it declares none. It fails only for unsupported
// options and an empty set (ErrNoLogs).
func Verify(logs []*Log, opt Options) (*Report, error) {
	if _, err := opt.resolve(); err != nil {
		return nil, err
	}
	if len(logs) == 0 {
		return nil, ErrNoLogs
	}
	results := make([]*Result, len(logs))
	for i, l := range logs {
		r, err := Check(l, opt)
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return newReport(results, opt), nil
}

func newReport(results []*Result, opt Options) *Report {
	rep := &Report{Ruleset: opt.Ruleset, Strict: opt.Strict, Compliant: true, Files: results}
	if rep.Ruleset == "" {
		rep.Ruleset = "2.1.0"
	}
	groups := map[string][]*Result{}
	for _, r := range results {
		if !r.Compliant {
			rep.Compliant = false
		}
		b := r.Benchmark
		if b == "" {
			b = opt.Benchmark
		}
		if b != "" {
			groups[b] = append(groups[b], r)
		}
	}
	names := make([]string, 0, len(groups))
	for b := range groups {
		names = append(names, b)
	}
	sort.Strings(names)
	rep.Scores = []SetScore{}
	for _, b := range names {
		rep.Scores = append(rep.Scores, Score(rep.Ruleset, b, groups[b]))
	}
	return rep
}

// InputError reports a file that cannot be opened as a log at all
// (missing, unreadable, not a regular file). VerifyFiles checks every
// path before verifying any.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string {
	cause := e.Err
	var pe *os.PathError
	if errors.As(cause, &pe) {
		cause = pe.Err
	}
	return fmt.Sprintf("cannot read log %q: %v", e.Path, cause)
}

func (e *InputError) Unwrap() error { return e.Err }

// MaxInFlightBytes bounds the total size of the logs VerifyFiles holds
// parsed at once (a log costs about its own size once parsed, see
// Value): a worker waits until the file it is given fits. A file larger
// than the bound is parsed alone.
const MaxInFlightBytes = 256 << 20

// VerifyFiles parses and checks the logs at paths (concurrently, one
// worker per CPU, at most MaxInFlightBytes of logs at once) and scores
// the set. Every path is checked first: a
// missing or unreadable file fails the call with an *InputError and no
// report. A log that breaks lim is reported as non-compliant (rule
// "limit"), not as an error: its content is the problem, not the call.
// An empty list fails with ErrNoLogs.
func VerifyFiles(ctx context.Context, paths []string, lim Limits, opt Options) (*Report, error) {
	if _, err := opt.resolve(); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, ErrNoLogs
	}
	sizes := make([]int64, len(paths))
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, &InputError{Path: p, Err: err}
		}
		if !fi.Mode().IsRegular() {
			return nil, &InputError{Path: p, Err: &os.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}}
		}
		sizes[i] = fi.Size()
	}

	results := make([]*Result, len(paths))
	errs := make([]error, len(paths))
	inFlight := semaphore.NewWeighted(MaxInFlightBytes)
	jobs := make([]int, len(paths))
	for i := range jobs {
		jobs[i] = i
	}
	// Each job keeps its own error, so that the error returned is the
	// first in the order of paths, not the first to happen.
	err := workpool.Run(ctx, runtime.GOMAXPROCS(0), jobs, workpool.Worker[struct{}, int]{
		Do: func(ctx context.Context, _ struct{}, i int) error {
			// A file may grow after the check above; Parse's own limit
			// still holds, this only paces the workers.
			w := min(max(sizes[i], 1), MaxInFlightBytes)
			if err := inFlight.Acquire(ctx, w); err != nil {
				errs[i] = err
				return nil
			}
			results[i], errs[i] = verifyFile(paths[i], lim, opt)
			inFlight.Release(w)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return newReport(results, opt), nil
}

func verifyFile(path string, lim Limits, opt Options) (*Result, error) {
	l, err := ParseFile(path, lim)
	var le *LimitError
	switch {
	case errors.As(err, &le):
		le.Name = ""
		return &Result{File: path, Findings: []Finding{{Rule: "limit", Severity: SeverityError, Source: SourceRepro, Line: le.Line, Message: le.Error()}}}, nil
	case err != nil:
		return nil, &InputError{Path: path, Err: err}
	}
	return Check(l, opt)
}
