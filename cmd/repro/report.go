package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() { register(newReportCommand) }

func newReportCommand(g *globalOptions) *cobra.Command {
	var format, out, board string
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
  0 report written (verified or not), 2 unknown run or dataset, or bad flag,
  4 the record cannot be read, or the board log under REPRO_HOME does not
  check out against its own checkpoint.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if board != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			if err := report.CheckFormat(format); err != nil {
				return err
			}
			home := g.home
			if board != "" {
				return writeBoard(cmd.Context(), t, home, board, out)
			}
			if out != "" {
				abs, err := filepath.Abs(out)
				if err != nil {
					return exitcode.Errorf(exitcode.Usage, "--out %q: %v", out, err)
				}
				if within(layout.Home(home).Runs(), abs) {
					return exitcode.Errorf(exitcode.Usage, "--out %q is inside the run folders; a report written there would change the run it describes", out)
				}
			}
			rep, err := report.Build(home, args[0])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := report.Write(&buf, rep, format); err != nil {
				return err
			}
			if out == "" {
				switch format {
				case "json":
					return t.JSONText(buf.Bytes())
				case "md":
					_, err = t.Human().Write(buf.Bytes())
				default:
					_, err = t.Stdout().Write(buf.Bytes())
				}
				return err
			}
			if err := atomicfile.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("cannot write the report to %q: %w", out, err)
			}
			verified := "verified"
			if !rep.Verified {
				verified = "NOT verified"
			}
			t.Notef("report of run %s (%s) written to %s", rep.Run.ID, verified, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "html", "html, md or json")
	cmd.Flags().StringVar(&out, "out", "", "write the report to this file (with --leaderboard: this folder)")
	cmd.Flags().StringVar(&board, "leaderboard", "", "write the leaderboard of this dataset as static HTML into --out")
	return cmd
}

// writeBoard exports the leaderboard of dataset into the folder out, each
// file written atomically; a folder inside the run folders is refused.
func writeBoard(ctx context.Context, t *ui.Terminal, home, dataset, out string) error {
	if out == "" {
		return exitcode.Errorf(exitcode.Usage, "--leaderboard needs --out DIR, the folder to write the pages into")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return exitcode.Errorf(exitcode.Usage, "--out %q: %v", out, err)
	}
	if within(layout.Home(home).Runs(), filepath.Join(abs, "index.html")) {
		return exitcode.Errorf(exitcode.Usage, "--out %q is inside the run folders; pages written there would change the runs they describe", out)
	}
	ids, err := runs.List(home)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot create --out %q: %v", out, err)
	}
	pub, err := report.PublishBoard(ctx, home, dataset, ids, abs, func(name string, data []byte) error {
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("refusing to write %q: not a plain file name", name)
		}
		return atomicfile.WriteFile(filepath.Join(abs, name), data, 0o644)
	})
	if err != nil {
		return err
	}
	t.Notef("leaderboard of %s written to %s (%d pages; open index.html)", dataset, out, len(pub.Pages))
	if lg := pub.Log; lg.Checkpoint.Tree.N > 0 {
		t.Notef("its history: %d runs in the board log (%d new), in %s; a reader checks it with:", lg.Checkpoint.Tree.N, lg.Added, filepath.Join(out, "log"))
		t.Notef("repro log verify %s --key %s", out, lg.VerifierKey)
	} else {
		t.Notef("its history: no run accepted yet, so no board log was written")
	}
	return nil
}

// within reports whether path lies in folder dir, comparing both as
// written and with symbolic links resolved (path's folder must exist for a
// report to be written there, so a link to a run folder is seen through).
func within(dir, path string) bool {
	inside := func(dir, path string) bool {
		rel, err := filepath.Rel(dir, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	if inside(dir, path) {
		return true
	}
	rdir, err1 := filepath.EvalSymlinks(dir)
	rparent, err2 := filepath.EvalSymlinks(filepath.Dir(path))
	return err1 == nil && err2 == nil && inside(rdir, filepath.Join(rparent, filepath.Base(path)))
}
