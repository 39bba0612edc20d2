package main

import (
	"fmt"
	"os"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/shard"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() { register(newShardCommand) }

func newShardCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shard",
		Short: "Spread one scoring run over a Slurm job array and merge it back",
		Long: `shard scores one samples file on a Slurm cluster: the samples are split into
shards balanced by the ground truth's measured time (a task's samples split
over shards where the balance needs it), and each
shard runs as one task of a Slurm job array through the normal sandboxed
scoring path (self-check included: a task split over shards is self-checked
in full by the shard holding its first sample, and on its base inputs by the
others). The merge verifies every shard and writes
one eval_results.json and one signed run record, with the verdicts a
single-machine run gives.

  repro shard plan --samples X --shards N --out BUNDLE [--dataset D] [--partition P]
      writes the bundle: the plan (signed), the shards' samples, the dataset,
      the evaluator image as a tarball, this repro binary, an sbatch script
  repro shard submit BUNDLE [--wait]   submits the job array (sbatch); with
      --wait, waits for it and merges
  repro shard run BUNDLE --index K [--full-self-check]
      one array task (what the script runs)
  repro shard merge BUNDLE             verifies every shard and writes the run

The bundle folder must be readable and writable from every node (a shared
file system); each node needs the Docker engine.

EXIT STATUS
  0 done, 2 bad flags, 3 no engine, image, dataset or Slurm (nothing ran),
  4 a shard that is missing, failed, duplicated or changed, or a bundle that
  changed after the plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newShardPlanCommand(g), newShardSubmitCommand(g), newShardRunCommand(g), newShardMergeCommand(g))
	return noHome(cmd)
}

func newShardPlanCommand(g *globalOptions) *cobra.Command {
	o := shard.PlanOptions{Limits: codebench.DefaultRunLimits()}
	cmd := &cobra.Command{
		Use:   "plan --samples PATH --shards N --out BUNDLE",
		Short: "Split samples into shards and write a Slurm bundle",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			defer t.ClearStatus()
			o.Progress = func(s string) { t.Status(s) }
			p, err := shard.WritePlanAt(cmd.Context(), g.home, o)
			if err != nil {
				return err
			}
			t.ClearStatus()
			if g.json {
				return t.Document(p)
			}
			ui.Fprintf(t.Human(), "bundle %q: %d samples of %d tasks in %d shards\n", o.Out, p.Samples.Count, len(p.Tasks), len(p.Shards))
			for _, s := range p.Shards {
				ui.Fprintf(t.Human(), "  shard %d: %d tasks, %d samples, estimated %.1f s of CPU\n", s.Index, len(s.Parts), s.Samples, s.Cost)
			}
			ui.Fprintf(t.Human(), "next: repro shard submit %q\n", o.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Samples, "samples", "", "samples: a .jsonl file or a folder NAME/TASK_N/K.py")
	f.StringVar(&o.Dataset, "dataset", "humanevalplus", "the dataset, as humaneval --dataset")
	f.StringVar(&o.Tasks, "tasks", "", "score only these tasks, as humaneval --tasks")
	f.IntVar(&o.Shards, "shards", 0, "number of shards (array tasks)")
	f.StringVar(&o.Out, "out", "", "bundle folder to create (on a file system every node sees)")
	f.BoolVar(&o.BaseOnly, "base-only", false, "score the base inputs only")
	f.Float64Var(&o.Limits.MinTimeLimit, "min-time-limit", o.Limits.MinTimeLimit, "least CPU seconds per input")
	f.Float64Var(&o.Limits.TimeFactor, "gt-time-limit-factor", o.Limits.TimeFactor, "per-input limit as a multiple of the canonical solution's time")
	f.Float64Var(&o.Limits.NearLimitMargin, "near-limit-margin", o.Limits.NearLimitMargin, "share of its limit within which a pass, like a timeout, is re-run once before it is final")
	f.StringVar(&o.Partition, "partition", "", "Slurm partition (default: the cluster's)")
	f.IntVar(&o.CPUs, "cpus-per-task", 0, "CPUs per array task (default: Slurm's)")
	f.StringVar(&o.Time, "time", "", "Slurm time limit per array task, e.g. 2:00:00")
	g.jsonFlag(cmd, "print the plan as one JSON document")
	return cmd
}

// shardSubmitOptions are the flags of repro shard submit.
type shardSubmitOptions struct {
	wait bool
}

func newShardSubmitCommand(g *globalOptions) *cobra.Command {
	var o shardSubmitOptions
	cmd := &cobra.Command{
		Use:   "submit BUNDLE [--wait]",
		Short: "Submit a bundle's job array to Slurm",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			s, err := shard.SubmitBundle(cmd.Context(), shard.SubmitRequest{
				Bundle: args[0], Wait: o.wait, Home: g.home, Version: versionString(),
				Status: func(s string) { t.Status(s) },
				Ended:  func(job string) { t.Notef("job array %s ended; merging", job) },
			})
			if s == nil {
				return err
			}
			if !o.wait {
				if g.json {
					return t.Document(map[string]string{"job_id": s.Job, "bundle": s.Dir})
				}
				ui.Fprintf(t.Human(), "submitted job array %s; when it has ended: repro shard merge %q\n", s.Job, s.Dir)
				return nil
			}
			return writeMerge(g, s.Merged, err)
		},
	}
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait for the job array to end (polling squeue), then merge")
	g.jsonFlag(cmd, "print one JSON document")
	return cmd
}

// shardRunOptions are the flags of repro shard run.
type shardRunOptions struct {
	index, parallel int
	fullSelfCheck   bool
}

func newShardRunCommand(g *globalOptions) *cobra.Command {
	var o shardRunOptions
	cmd := &cobra.Command{
		Use:   "run BUNDLE --index K",
		Short: "Score one shard of a bundle (one array task)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			defer t.ClearStatus()
			rep, err := shard.RunShardAt(cmd.Context(), args[0], shard.RunOptions{
				Index: o.index, Parallel: o.parallel, Version: versionString(), FullSelfCheck: o.fullSelfCheck,
				Warn: func(w string) { t.Warnf("%s", w) }, Progress: t.RateProgress(nil),
			})
			t.ClearStatus()
			if rep != nil && g.json {
				if jerr := t.Document(rep); jerr != nil && err == nil {
					err = jerr
				}
			} else if rep != nil && err == nil {
				base := ""
				if n := len(rep.SelfCheck.BaseOnlyTasks); n > 0 {
					base = fmt.Sprintf(" (%d on base inputs: the shard holding their first sample checks them in full)", n)
				}
				ui.Fprintf(t.Human(), "shard %d: run %s, %d samples, self-check %d/%d passed%s\n", o.index, rep.RunID, rep.Summary.Samples, rep.SelfCheck.Passed, rep.SelfCheck.Tasks, base)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&o.index, "index", -1, "the shard (default: $SLURM_ARRAY_TASK_ID)")
	cmd.Flags().IntVar(&o.parallel, "parallel", 0, "sandbox containers at once (default: what this node holds)")
	cmd.Flags().BoolVar(&o.fullSelfCheck, "full-self-check", false, "self-check every task on all its inputs, also those whose first sample another shard holds (for a node whose CPU model differs from that shard's)")
	g.jsonFlag(cmd, "print the shard's scoring report as one JSON document")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("index") {
			return nil
		}
		v := os.Getenv("SLURM_ARRAY_TASK_ID")
		if _, err := fmt.Sscanf(v, "%d", &o.index); err != nil || v == "" {
			return exitcode.Errorf(exitcode.Usage, "give --index K (or run as a Slurm array task)")
		}
		return nil
	}
	return noHome(cmd)
}

func newShardMergeCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge BUNDLE",
		Short: "Verify every shard of a bundle and write one scoring run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := shard.MergeAt(cmd.Context(), args[0], g.home, versionString())
			return writeMerge(g, rep, err)
		},
	}
	g.jsonFlag(cmd, "print one JSON document")
	return cmd
}

// writeMerge prints the merge's report, rep, and returns its error err:
// under --json the report whenever there is one, else its text when the
// merge succeeded.
func writeMerge(g *globalOptions, rep *shard.MergeReport, err error) error {
	t := g.term
	switch {
	case rep != nil && g.json:
		if jerr := t.Document(rep); jerr != nil && err == nil {
			err = jerr
		}
	case err == nil:
		s := rep.Summary
		ui.Fprintf(t.Human(), "%s: %d samples for %d tasks from %d shards, self-check %d/%d passed\n", rep.Dataset, s.Samples, s.Tasks, len(rep.Shards), rep.SelfCheck.Passed, rep.SelfCheck.Tasks)
		if s.PlusScored {
			ui.Fprintf(t.Human(), "passed: base %d/%d, base and plus %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.PlusPassed, s.Samples, s.Timeouts)
		} else {
			ui.Fprintf(t.Human(), "passed: base %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.Timeouts)
		}
		ui.Fprintf(t.Human(), "results: %q\n", rep.ResultsFile)
	}
	return err
}
