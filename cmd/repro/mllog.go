package main

import (
	"runtime/debug"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/handoff"
	"github.com/reprolab/repro/internal/mllog"
	"github.com/reprolab/repro/internal/ui"
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
	return noHome(cmd)
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
	rep, runID, err := handoff.VerifyLogs(cmd.Context(), g.home, versionString(), paths, opt)
	t := g.term
	if rep != nil {
		if werr := writeMllogReport(t, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if runID != "" {
		t.Notef("run %s recorded; see it with `repro report %s`", runID, runID)
	}
	return err
}

// writeMllogReport prints rep: one JSON document on stdout under --json,
// and its text (on stdout, or on stderr beside the document).
func writeMllogReport(t *ui.Terminal, rep *mllog.Report) error {
	if t.JSON() {
		if err := t.Document(rep); err != nil {
			return err
		}
	}
	rep.WriteText(t.Human(), !t.JSON())
	return nil
}
