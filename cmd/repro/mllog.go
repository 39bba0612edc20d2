package main

import (
	"errors"
	"runtime/debug"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/workload"
	"github.com/spf13/cobra"
)

func init() { register(newMllogCommand) }

func newMllogCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mllog",
		Short: "Check MLPerf MLLOG result logs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.Errorf(exitcode.Usage, "mllog needs a subcommand: verify")
		},
	}
	cmd.AddCommand(newMllogVerifyCommand(g))
	return cmd
}

type mllogVerifyOptions struct {
	benchmark string
	ruleset   string
	strict    bool
}

func newMllogVerifyCommand(g *globalOptions) *cobra.Command {
	var o mllogVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Verify MLPerf Training result logs and compute their score",
		Long: `verify applies the MLPerf Training compliance rules to each log, as the
mlcommons/logging compliance checker does, and computes the time to train
of each run and the olympic mean of the set, as its result summarizer does.

Only lines carrying ":::MLLOG " are read; anything before the marker on a
line is ignored. --strict adds checks the upstream checker lacks: run_stop
status must be "success", a passing eval_accuracy must come between
run_start and run_stop (MiniGo back-dates run_stop, so file order decides),
exactly-once keys may not repeat, and every record must follow the format.

Each verification is a run: REPRO_HOME/runs/mllog-<time>-<random> holds
mllog.json (the report, with each log's eval_accuracy series and quality
target) and a signed record listing every log's path, SHA-256 and size;
` + "`repro report RUN`" + ` shows it.

EXIT STATUS
  0 every log is compliant, 1 a log is not (including malformed or
  oversized logs), 2 usage error, 3 a file is missing or unreadable
  (nothing is verified).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMllogVerify(cmd, g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.benchmark, "benchmark", "", "require every log to be of this benchmark (minigo or dlrm)")
	f.StringVar(&o.ruleset, "ruleset", "2.1.0", "MLPerf Training ruleset version")
	f.BoolVar(&o.strict, "strict", false, "add the checks the upstream checker lacks")
	g.jsonFlag(cmd, "print one JSON report on stdout")
	return cmd
}

// mllogMemoryLimit is the Go heap size past which verification trades
// CPU for memory: four times MaxInFlightBytes (a parsed log
// costs about its size, a tree being looked at a few times that).
const mllogMemoryLimit = 4 * mllog.MaxInFlightBytes

func runMllogVerify(cmd *cobra.Command, g *globalOptions, o mllogVerifyOptions, paths []string) error {
	// Each log is garbage once checked, so the live heap stays small and
	// the default GC target makes the collector run very often; a higher
	// target cuts CPU time by about a third (live heap: a log or two per
	// CPU).
	// The soft memory limit keeps that target from multiplying a large
	// live heap (hostile logs near the size limit, MaxInFlightBytes of
	// them at once): past it the collector runs as often as needed.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(mllogMemoryLimit))
	opt := mllog.Options{Benchmark: o.benchmark, Ruleset: o.ruleset, Strict: o.strict}
	home := g.home
	// Options and every path are checked before the run starts: a usage
	// error or a missing log leaves no run folder.
	if err := opt.Check(); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	inputs, err := mllogInputs(paths)
	if err != nil {
		return err
	}
	t := g.term
	var runID string
	err = workload.Do(home, "mllog", versionString(), func(run *workload.Run) error {
		runID = run.ID
		run.Record.Limits = map[string]any{"ruleset": opt.Ruleset, "strict": opt.Strict, "benchmark": opt.Benchmark}
		run.Record.Extra = map[string]any{"logs": inputs}
		rep, err := mllog.VerifyFiles(cmd.Context(), paths, mllog.Limits{}, opt)
		var ie *mllog.InputError
		switch {
		case errors.As(err, &ie):
			return mllogInputFailed(err)
		case err != nil && cmd.Context().Err() != nil:
			return err
		case err != nil:
			return exitcode.New(exitcode.Usage, err)
		}
		if err := run.WriteJSON(mllogReportFile, rep, 0o644); err != nil {
			return err
		}
		run.Record.Summary = mllogSummary(rep)
		if len(rep.Scores) > 0 {
			run.Record.Extra = map[string]any{"logs": inputs, "benchmark": rep.Scores[0].Benchmark}
		}
		if g.json {
			if err := t.Document(rep); err != nil {
				return err
			}
		}
		rep.WriteText(t.Human(), !g.json)
		if !rep.Compliant {
			return exitcode.Errorf(exitcode.Negative, "%d of %d logs are not compliant", mllogNotCompliant(rep), len(rep.Files))
		}
		return nil
	})
	if runID != "" {
		t.Notef("run %s recorded; see it with `repro report %s`", runID, runID)
	}
	return err
}

// mllogReportFile is the verification report a mllog run leaves.
const mllogReportFile = "mllog.json"

// mllogInput is a log as the run record lists it.
type mllogInput struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// mllogInputs checks that every path is a readable regular file and
// digests it (streamed, so a large file costs no memory). The logs are
// read again to be verified; the digests say which bytes were given.
func mllogInputs(paths []string) ([]mllogInput, error) {
	out := make([]mllogInput, 0, len(paths))
	for _, p := range paths {
		f, err := safefile.OpenRegular(p)
		if err != nil {
			return nil, mllogInputFailed(&mllog.InputError{Path: p, Err: err})
		}
		d, n, err := digest.ReaderFrom(f)
		f.Close()
		if err != nil {
			return nil, mllogInputFailed(&mllog.InputError{Path: p, Err: err})
		}
		out = append(out, mllogInput{Path: p, SHA256: d.Hex(), Size: n})
	}
	return out, nil
}

// mllogInputFailed is the error for a log that cannot be read: exit 3,
// nothing was verified.
func mllogInputFailed(err error) error {
	return exitcode.Errorf(exitcode.Precondition, "%v; check the path (nothing was verified)", err)
}

// mllogSummary is the record's summary of a verification: the verdict and
// each benchmark's score.
func mllogSummary(rep *mllog.Report) map[string]any {
	return map[string]any{"compliant": rep.Compliant, "logs": len(rep.Files), "not_compliant": mllogNotCompliant(rep), "scores": rep.Scores}
}

// mllogNotCompliant is how many of rep's logs are not compliant.
func mllogNotCompliant(rep *mllog.Report) int {
	n := 0
	for _, r := range rep.Files {
		if !r.Compliant {
			n++
		}
	}
	return n
}
