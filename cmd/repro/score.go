package main

import (
	"context"
	"errors"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/spf13/cobra"
)

func init() { register(newScoreCommand) }

// scoreOptions are the flags of repro score (alias repro humaneval).
type scoreOptions struct {
	samples     string
	canonical   bool
	dataset     string
	baseOnly    bool
	parallel    int
	tasks       string
	minTime     float64
	factor      float64
	margin      float64
	engine      string
	evalplusDir string
	runtime     string
	label       string
	model       string
	sampling    string
	resume      string
	cache       bool
}

func newScoreCommand(g *globalOptions) *cobra.Command {
	o := scoreOptions{}
	cmd := &cobra.Command{
		Use:     "score (--samples PATH | --canonical | --resume RUN_ID)",
		Aliases: []string{"humaneval"},
		Short:   "Score HumanEval+ or MBPP+ samples in the sandbox",
		Long: `score scores code samples on EvalPlus's code benchmarks, HumanEval+ (or
its Mini variant, or the original HumanEval) and MBPP+ (--dataset mbppplus),
the way EvalPlus does, but with every sample run in the Docker sandbox and
every verdict decided on the host. repro humaneval, its first name, is the
same command (an alias, so that what was written for it still runs); its
runs are of kind "humaneval" (runs list --kind humaneval).

Samples come in EvalPlus's formats: a .jsonl file with task_id and solution
(a whole program) or completion (appended to the prompt), several lines per
task for pass@k; or a folder NAME/HumanEval_N/K.py (NAME/Mbpp_N/K.py). Every
task must have a sample unless --tasks names a subset. The samples are copied into the run's
workspace and run from there; a change to the copy or to the original during
the run stops it with exit 4 and no score.

Each run: ground truth (the canonical solutions on every input, in the
sandbox; cached per dataset, image, harness and CPU model), then a self-check
that scores the canonical solutions exactly as candidates are scored (every
task must pass, or the run stops with exit 4 before any candidate runs), then
the candidates. Results go to an EvalPlus-compatible eval_results.json in the
run folder, with a signed run record.

--canonical scores the canonical solutions as if they were candidates.

Every verdict is journaled in the run folder (journal.jsonl, hash-chained,
fsynced in batches) as it is decided. --resume RUN_ID continues a run that
was stopped (Ctrl-C, a kill, a reboot, a lost engine) in a new run: after
its own self-check it scores only the samples the journal has no verdict
for. It takes the samples, dataset, tasks and limits from that run; flags
given must agree, and the dataset, samples digest, image, runtime,
harness, limits, CPU model and repro version must be the same, or it stops
with exit 4 naming what differs.

Samples of a task whose programs are byte for byte equal (EvalPlus applies
no normalisation) share one execution; the results file still lists every
sample. --cache (off by default, recorded) also reuses verdicts of earlier
completed runs of this REPRO_HOME, signed with its own run key (never an
imported run, nor one signed by another key trust.json lists), when task,
program digest, dataset, engine, image, runtime, harness, limits, CPU model,
repro version and the repro binary's digest all match; where two such runs
disagree on a verdict, it is scored again.

EXIT STATUS
  0 scoring completed (whatever the scores), 2 bad flags or samples,
  3 no engine, image or dataset, or an image the trust file's policy does
  not admit for want of a fresh scan or the required runtime (nothing ran),
  4 failed self-check, changed samples, a corrupt ground-truth cache or
  harness, or a missing or bad image signature where the policy requires one.

Before any container starts, the image is checked against the trust file
(--trust, default REPRO_HOME/trust.json; see docs/supply-chain.md); the run
record states what was verified.

--label names the run's row on the leaderboard (repro serve, repro report
--leaderboard; default: the samples file's base name, "canonical" with
--canonical); --model and --sampling (temperature, n, top-p) are recorded
beside it. They are the scorer's claims, signed with the record; runs list
filters by them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScore(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.samples, "samples", "", "samples: a .jsonl file or a folder NAME/HumanEval_N/K.py or NAME/Mbpp_N/K.py")
	f.BoolVar(&o.canonical, "canonical", false, "score the canonical solutions as candidates")
	f.StringVar(&o.dataset, "dataset", "humanevalplus", task.DatasetNames)
	f.BoolVar(&o.baseOnly, "base-only", false, "score the base inputs only")
	f.IntVar(&o.parallel, "parallel", codebench.DefaultParallel(), "sandbox containers at once (default: what this machine holds: cores, and memory at the per-container limit)")
	f.StringVar(&o.tasks, "tasks", "", "score only these tasks: numbers or ids, with ranges, e.g. 0,2,10-12 (Mbpp/2 or 2 with mbppplus)")
	f.Float64Var(&o.minTime, "min-time-limit", codebench.DefaultRunLimits().MinTimeLimit, "least CPU seconds per input")
	f.Float64Var(&o.factor, "gt-time-limit-factor", codebench.DefaultRunLimits().TimeFactor, "per-input limit as a multiple of the canonical solution's time")
	f.Float64Var(&o.margin, "near-limit-margin", codebench.DefaultRunLimits().NearLimitMargin, "share of its limit within which a pass, like a timeout, is re-run once before it is final")
	g.jsonFlag(cmd, "print one JSON document")
	f.StringVar(&o.engine, "engine", "repro", "scoring engine: repro, or evalplus (EvalPlus's own code, in the sandbox)")
	g.trustFlag(cmd, trustFlagHelp)
	f.StringVar(&o.runtime, "runtime", "", runtimeFlagUsage)
	f.StringVar(&o.evalplusDir, "evalplus-tree", "", "with --engine evalplus: a checkout of evalplus at the pinned commit")
	f.StringVar(&o.label, "label", "", "the board row this run belongs to (default: the samples file's base name)")
	f.StringVar(&o.model, "model", "", "the model that wrote the samples, for the record")
	f.StringVar(&o.sampling, "sampling", "", "how the samples were drawn, e.g. temperature=0.8,n=200,top-p=0.95")
	f.StringVar(&o.resume, "resume", "", "continue the stopped run RUN_ID: score only what its journal has no verdict for")
	f.BoolVar(&o.cache, "cache", false, "reuse verdicts of this home's own earlier runs (its run key, not imported) with the same task, program, dataset, engine, image, runtime, harness, limits, CPU and repro binary")
	return cmd
}

func runScore(cmd *cobra.Command, g *globalOptions, o scoreOptions) error {
	limits := codebench.DefaultRunLimits()
	limits.MinTimeLimit, limits.TimeFactor, limits.NearLimitMargin = o.minTime, o.factor, o.margin
	opts := codebench.Options{
		Samples: o.samples, Canonical: o.canonical, Dataset: o.dataset, BaseOnly: o.baseOnly,
		Parallel: o.parallel, Tasks: o.tasks, Limits: limits, Engine: o.engine, EvalPlusTree: o.evalplusDir,
		Version: versionString(), TrustPath: g.trust, Runtime: o.runtime,
		Subject: runlabel.Subject{Label: o.label, Model: o.model},
	}
	opts.Cache = o.cache
	if o.resume != "" {
		// What was not given is taken from the resumed run.
		opts.Resume = o.resume
		changed := cmd.Flags().Changed
		if !changed("dataset") {
			opts.Dataset = ""
		}
		if !changed("engine") {
			opts.Engine = ""
		}
		if !changed("min-time-limit") && !changed("gt-time-limit-factor") && !changed("near-limit-margin") {
			opts.Limits = codebench.RunLimits{}
		}
	}
	sampling, err := runlabel.ParseSampling(o.sampling)
	if err != nil {
		return err
	}
	opts.Subject.Sampling = sampling
	t := g.term
	defer t.ClearStatus()
	opts.Warn = func(w string) { t.Warnf("%s", w) }
	rate := t.NewRate(nil)
	opts.Progress, opts.Verdicts = rate.Count, rate.Verdicts
	// ScoreAt validates the options before it opens the store.
	rep, err := codebench.ScoreAt(cmd.Context(), g.home, opts)
	if errors.Is(err, context.Canceled) && rep != nil && rep.Journal != nil {
		err = exitcode.Errorf(exitcode.Negative, "interrupted: run %s keeps its verdicts so far in its journal; continue it with repro score --resume %s", rep.RunID, rep.RunID)
	}
	switch {
	case rep != nil && g.json:
		if jerr := t.Document(rep); jerr != nil && err == nil {
			err = jerr
		}
	case err == nil:
		t.ClearStatus()
		rep.WriteText(t.Human())
	}
	return err
}
