package main

import (
	"context"
	"path/filepath"

	"github.com/reprolab/repro/internal/report"
	"github.com/spf13/cobra"
)

func init() { register(newReportCommand) }

// reportOptions are the flags of repro report.
type reportOptions struct {
	format, out, board string
}

func newReportCommand(g *globalOptions) *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report RUN | report --leaderboard DATASET --out DIR",
		Short: "Write a readable report of a run (HTML, Markdown or JSON)",
		Long: `report checks a run folder against its signed record, as ` + "`repro runs verify`" + ` does,
and writes one report of it: the score (pass@k for base and plus) beside the
self-check, a per-task table with the failing input and the reason, charts
as inline SVG, and the provenance with a verified mark. A run that does not
verify still gets a report, marked NOT verified with the reasons.

--format html (default) writes one self-contained file that needs no network
and no JavaScript; md writes Markdown for a paper's appendix; json writes the
same model as one document. --out writes to a file (atomically) instead of
standard output.

--leaderboard DATASET writes the leaderboard of a HumanEval dataset (as
repro serve shows it; DATASET as the runs name it, e.g.
HumanEvalPlus-v0.1.10, in any case) as static HTML into the folder --out:
index.html (the newest verified run of each label, ranked), all.html (every
run), one page per other order the column headings link to, and
<run id>.html, the report of each run. Every run is checked against its
signed record first; one that does not verify is shown greyed, marked NOT
verified, and never ranked. The pages need no network and no JavaScript.
Every verified run is also appended to the board's log, an append-only
history (REPRO_HOME/boardlog, signed with REPRO_HOME/keys/board-log.key,
made on first use), whose checkpoint and tiles are copied into --out/log;
` + "`repro log verify`" + ` checks them (see docs/dashboard.md).

EXIT STATUS
  0 report written (verified or not), 1 interrupted by Ctrl-C or SIGTERM
  while checking the runs (nothing written), 2 unknown run or dataset, or
  bad flag, 4 the record cannot be read, or the board log under REPRO_HOME
  does not check out against its own checkpoint.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.board != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), g, o, args)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "html", "html, md or json")
	cmd.Flags().StringVar(&o.out, "out", "", "write the report to this file (with --leaderboard: this folder)")
	cmd.Flags().StringVar(&o.board, "leaderboard", "", "write the leaderboard of this dataset as static HTML into --out")
	return cmd
}

// runReport writes the report of the run args names, or with --leaderboard
// the pages of a dataset's board, as o says.
func runReport(ctx context.Context, g *globalOptions, o reportOptions, args []string) error {
	t := g.term
	if err := report.CheckFormat(o.format); err != nil {
		return err
	}
	switch {
	case o.board != "":
		pub, err := report.PublishBoardFolder(ctx, g.home, o.board, o.out, func(w string) { t.Warnf("%s", w) })
		if err != nil {
			return err
		}
		t.Notef("leaderboard of %s written to %s (%d pages; open index.html)", o.board, o.out, len(pub.Pages))
		if lg := pub.Log; lg.Checkpoint.Tree.N > 0 {
			t.Notef("its history: %d runs in the board log (%d new), in %s; a reader checks it with:", lg.Checkpoint.Tree.N, lg.Added, filepath.Join(o.out, "log"))
			t.Notef("repro log verify %s --key %s", o.out, lg.VerifierKey)
		} else {
			t.Notef("its history: no run accepted yet, so no board log was written")
		}
		return nil
	case o.out != "":
		rep, err := report.ExportRun(ctx, g.home, args[0], o.format, o.out)
		if err != nil {
			return err
		}
		verified := "verified"
		if !rep.Verified {
			verified = "NOT verified"
		}
		t.Notef("report of run %s (%s) written to %s", rep.Run.ID, verified, o.out)
		return nil
	}
	_, b, err := report.Render(ctx, g.home, args[0], o.format)
	if err != nil {
		return err
	}
	switch o.format {
	case "json":
		return t.JSONText(b)
	case "md":
		_, err = t.Human().Write(b)
	default:
		_, err = t.Stdout().Write(b)
	}
	return err
}
