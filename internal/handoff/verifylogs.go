package handoff

import (
	"context"
	"errors"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/workload"
)

// LogsReportFile is the verification report a run of kind "mllog" leaves
// in its folder.
const LogsReportFile = "mllog.json"

// LogInput is a log as the record of a run of kind "mllog" lists it.
type LogInput struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// VerifyLogs verifies the MLLOG files at paths with opt (mllog.VerifyFiles)
// as a run of kind "mllog" under home, made by repro version: the record
// lists each log's path, SHA-256 and size, the options as limits and the
// verdict and scores as summary; the report is the run's LogsReportFile.
//
// opt and every path are checked before the run starts, so a bad option
// (exit 2) or a log that cannot be read (exit 3) leaves no run folder.
// It returns the report (nil when nothing was verified), the run's id (""
// when no run started) and, for a report with a log that is not
// compliant, an error of exit code 1; the record is signed whatever the
// outcome.
func VerifyLogs(ctx context.Context, home, version string, paths []string, opt mllog.Options) (*mllog.Report, string, error) {
	if err := opt.Check(); err != nil {
		return nil, "", exitcode.New(exitcode.Usage, err)
	}
	inputs, err := logInputs(paths)
	if err != nil {
		return nil, "", err
	}
	var rep *mllog.Report
	var runID string
	err = workload.Do(home, "mllog", version, func(run *workload.Run) error {
		runID = run.ID
		run.Record.Limits = map[string]any{"ruleset": opt.Ruleset, "strict": opt.Strict, "benchmark": opt.Benchmark}
		run.Record.Extra = map[string]any{"logs": inputs}
		r, err := mllog.VerifyFiles(ctx, paths, mllog.Limits{}, opt)
		var ie *mllog.InputError
		switch {
		case errors.As(err, &ie):
			return logInputFailed(err)
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil:
			return exitcode.New(exitcode.Usage, err)
		}
		if err := run.WriteJSON(LogsReportFile, r, 0o644); err != nil {
			return err
		}
		rep = r
		run.Record.Summary = logsSummary(r)
		if len(r.Scores) > 0 {
			run.Record.Extra = map[string]any{"logs": inputs, "benchmark": r.Scores[0].Benchmark}
		}
		if !r.Compliant {
			return exitcode.Errorf(exitcode.Negative, "%d of %d logs are not compliant", notCompliant(r), len(r.Files))
		}
		return nil
	})
	return rep, runID, err
}

// logInputs checks that every path is a readable regular file and
// digests it (streamed, so a large file costs no memory). The logs are
// read again to be verified; the digests say which bytes were given.
func logInputs(paths []string) ([]LogInput, error) {
	out := make([]LogInput, 0, len(paths))
	for _, p := range paths {
		f, err := safefile.OpenRegular(p)
		if err != nil {
			return nil, logInputFailed(&mllog.InputError{Path: p, Err: err})
		}
		d, n, err := digest.ReaderFrom(f)
		f.Close()
		if err != nil {
			return nil, logInputFailed(&mllog.InputError{Path: p, Err: err})
		}
		out = append(out, LogInput{Path: p, SHA256: d.Hex(), Size: n})
	}
	return out, nil
}

// logInputFailed is the error for a log that cannot be read: exit 3,
// nothing was verified.
func logInputFailed(err error) error {
	return exitcode.Errorf(exitcode.Precondition, "%v; check the path (nothing was verified)", err)
}

// logsSummary is the record's summary of a verification: the verdict and
// each benchmark's score.
func logsSummary(rep *mllog.Report) map[string]any {
	return map[string]any{"compliant": rep.Compliant, "logs": len(rep.Files), "not_compliant": notCompliant(rep), "scores": rep.Scores}
}

// notCompliant is how many of rep's logs are not compliant.
func notCompliant(rep *mllog.Report) int {
	n := 0
	for _, r := range rep.Files {
		if !r.Compliant {
			n++
		}
	}
	return n
}
