package main

import (
	"path/filepath"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/reproduce"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

// runsReproduceOptions are the flags of repro runs reproduce.
type runsReproduceOptions struct {
	parallel int
}

func newRunsReproduceCommand(g *globalOptions) *cobra.Command {
	var o runsReproduceOptions
	cmd := &cobra.Command{
		Use:   "reproduce BUNDLE.tar [--trust FILE]",
		Short: "Re-execute a submitted scoring run and compare it verdict by verdict",
		Long: `reproduce re-executes the HumanEval run in an evidence bundle (made by
'repro runs export' elsewhere) on this machine and compares the verdicts.

The bundle is checked first as 'repro runs verify --bundle' checks it,
against --trust FILE (the submitters' keys; default REPRO_HOME/trust.json),
and the samples copy the run kept in its workspace against the samples
digest its signed record names. Then the samples are scored again in this
machine's sandbox with the reference profile: the dataset's catalog pin,
every task (or the submission's subset where it scored one; a board never
ranks a subset), repro's own engine, the locally pinned evaluator image and
harness under REPRO_HOME/trust.json's image policy, default limits, the
self-check, never --cache and never --base-only. Every verdict (each phase
of each sample) is compared with the submission's eval_results.json.

The re-execution is a run of its own (kind reproduce, signed with the local
run key) whose record names the submission (run id, signer key id, bundle
and record SHA-256) and whose reproduction.json lists the agreements and
the differences, each difference with both measurements where it is a
time-limit case. Boards show its outcome on the submission's row; with
"leaderboard": {"require_reexecution": true} in REPRO_HOME/trust.json an
run not signed with the local run key (a submission) ranks only when its
newest reproduction agrees. See
docs/dashboard.md.

EXIT STATUS
  0 every verdict agrees, 1 a verdict differs, or Ctrl-C or SIGTERM while
  the bundle is checked, 2 unreadable bundle path or a run that cannot be
  re-executed (not a completed HumanEval run of samples), 3 no trust
  file, engine, image or dataset (nothing ran), 4 the bundle does not
  verify or its samples are not those its record names (nothing ran), or
  the re-execution's own integrity failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			defer t.ClearStatus()
			bundle := args[0]
			rep, err := reproduce.ReproduceBundle(cmd.Context(), g.home, g.trust, reproduce.Options{
				Bundle: bundle, Parallel: o.parallel, Version: versionString(),
				Verified: func(s reproduce.Submission) {
					t.Printf("%s: run %s (label %q) verifies, signed by trusted key %q (%s); re-executing its samples\n",
						bundle, s.RunID, s.Label, s.Signer, s.SignerKeyID)
				},
				Warn:     func(w string) { t.Warnf("%s", w) },
				Progress: t.RateProgress(nil),
			})
			if rep == nil {
				return err
			}
			if g.json {
				if jerr := t.Document(rep); jerr != nil && err == nil {
					err = jerr
				}
				return err
			}
			t.ClearStatus()
			writeReproduction(t, rep)
			return err
		},
	}
	g.jsonFlag(cmd, "print one JSON document")
	g.trustFlag(cmd, "trust file with the submitters' keys (default REPRO_HOME/trust.json)")
	cmd.Flags().IntVar(&o.parallel, "parallel", codebench.DefaultParallel(), "sandbox containers at once")
	return cmd
}

// writeReproduction prints a reproduction for people.
func writeReproduction(t *ui.Terminal, rep *reproduce.Report) {
	if rep.Run != nil {
		t.Printf("re-execution: run %s\n", rep.Run.RunID)
	}
	res := rep.Result
	if res == nil {
		if rep.Run != nil && rep.Run.Error != "" {
			t.Printf("the re-execution did not complete: %s\n", rep.Run.Error)
		}
		return
	}
	t.Printf("%s\n", res.Tally())
	for i, d := range res.Differences {
		if i == maxPrintedDifferences {
			t.Printf("  and %d more (every one in %s)\n", len(res.Differences)-i, filepath.Join(rep.Run.RunDir, reproduce.OutputFile))
			break
		}
		t.Printf("  %s\n", d.String())
	}
}

// maxPrintedDifferences is how many differences the text output names.
const maxPrintedDifferences = 20
