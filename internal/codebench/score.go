package codebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/workload"
)

// Engines of a scoring run.
const (
	EngineRepro    = "repro"
	EngineEvalPlus = "evalplus"
)

// Options are the choices of one scoring run (the score command's
// flags) and where it reports.
type Options struct {
	Samples      string // a .jsonl file or a samples folder; empty with Canonical
	Canonical    bool   // score the canonical solutions as candidates
	Dataset      string // a key of DatasetChoices: humanevalplus, humanevalplus-mini, humaneval or mbppplus
	BaseOnly     bool
	Parallel     int
	Tasks        string // task selection, e.g. 0,2,10-12; empty for all
	Limits       RunLimits
	Engine       string // EngineRepro or EngineEvalPlus
	EvalPlusTree string // with EngineEvalPlus: a checkout at the pinned commit
	Version      string // repro's version, for the run record
	// TrustPath is the trust file whose image policy admits the image
	// (imagetrust.Options); empty for REPRO_HOME's default.
	TrustPath string
	Runtime   string // sandbox runtime flag (runc or runsc); "" for the REPRO_HOME setting
	// Subject names what the run scores, for the record and the board;
	// an empty label becomes runlabel.DefaultLabel of the samples.
	Subject runlabel.Subject

	// Resume names a run whose verdict journal (JournalFile) this run
	// continues: only the verdicts missing from it are scored, after the
	// self-check. Options left empty are taken from that run; the run's
	// identity (RunIdentity) must be the same, or the run stops with exit
	// 4 naming what differs. ResumeLatest resumes the latest unfinished run
	// with a journal for the same samples, tasks and dataset if there is
	// one (the shard runner on a requeue).
	Resume       string
	ResumeLatest bool
	// Cache reuses the verdicts of earlier completed runs on this machine
	// that verify against their records, for the same dataset, task,
	// program digest, image, runtime, harness, limits and CPU model.
	Cache bool
	// SelfCheckBaseOnly names tasks, among those scored, whose self-check
	// runs their canonical solution on the base inputs only, because
	// another run of the same sharded run self-checks them in full
	// (internal/shard: the shard holding a task's first sample); every
	// other task is self-checked in full. The run's self-check report
	// lists them (SelfCheckReport.BaseOnlyTasks), and a merge accepts them
	// only against that other run. Only the shard runner sets it.
	SelfCheckBaseOnly []string
	// TruthDigests names tasks, among those scored, whose ground truth's
	// digest the run's report records (TruthReport.TaskDigests): the
	// shard runner names a sharded run's split tasks, so that the merge
	// can tell that a base-only self-check and the full one judged by the
	// same outputs and limits.
	TruthDigests []string

	// Kind is the run's kind; "" is "humaneval". A workload that scores
	// samples as one step of its own (internal/reproduce) names its own
	// kind, so that its run is never taken for a scoring run (the board,
	// --cache and --resume read "humaneval" runs only).
	Kind string
	// Finish, if set, is called once scoring ended, whatever its outcome
	// (err), with the run and its report, before the record is signed: it
	// may write more outputs into the run folder and fill the record, and
	// what it returns is the run's outcome.
	Finish func(run *workload.Run, rep *RunReport, err error) error

	// Warn receives warnings about the samples; Progress receives
	// "stage done/total" counts; Verdicts the candidates' verdicts so far
	// (see StagesConfig.Verdicts; --engine repro only). Any may be nil.
	Warn     func(string)
	Progress func(stage string, done, total int)
	Verdicts func(stage string, passed, failed, samples int)
}

// Validate checks the options before anything runs (exit 2); it makes a
// relative EvalPlusTree absolute. Score and ScoreAt call it once, on the
// options completed from the run they resume, so callers need not.
//
// With Resume set, the options to be taken from the resumed run may be
// empty.
func (o *Options) Validate() error {
	if seen := optionsValidated.Load(); seen != nil {
		(*seen)(o)
	}
	resuming := o.Resume != ""
	if (!resuming || o.Samples != "" || o.Canonical) && (o.Samples == "") == !o.Canonical {
		return exitcode.Errorf(exitcode.Usage, "give exactly one of --samples PATH and --canonical")
	}
	if resuming && o.ResumeLatest {
		return exitcode.Errorf(exitcode.Usage, "resume one run: a run id or the latest, not both")
	}
	if resuming && o.Dataset == "" {
		// taken from the resumed run
	} else if _, err := datasetChoice(o.Dataset); err != nil {
		return err
	}
	if (o.Resume != "" || o.ResumeLatest || o.Cache) && o.Engine == EngineEvalPlus {
		return exitcode.Errorf(exitcode.Usage, "--resume and --cache go with --engine repro")
	}
	if (len(o.SelfCheckBaseOnly) > 0 || len(o.TruthDigests) > 0) && (o.Engine == EngineEvalPlus || o.Canonical) {
		return exitcode.Errorf(exitcode.Usage, "a self-check on base inputs only and ground-truth digests go with --engine repro and candidate samples")
	}
	if o.Parallel < 1 || o.Parallel > 64 {
		return exitcode.Errorf(exitcode.Usage, "--parallel %d: want 1 to 64", o.Parallel)
	}
	switch o.Engine {
	case "":
		if !resuming {
			return exitcode.Errorf(exitcode.Usage, "--engine \"\": want repro or evalplus")
		}
	case EngineRepro:
		if o.EvalPlusTree != "" {
			return exitcode.Errorf(exitcode.Usage, "--evalplus-tree goes with --engine evalplus")
		}
	case EngineEvalPlus:
		if o.EvalPlusTree == "" {
			return exitcode.Errorf(exitcode.Usage, "--engine evalplus needs --evalplus-tree DIR (a checkout of evalplus at 26d6d00)")
		}
		// The tree is mounted into the sandbox, which takes absolute
		// paths only: a relative one is resolved here, against the
		// current folder, and must name a folder.
		abs, err := filepath.Abs(o.EvalPlusTree)
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "--evalplus-tree %s: %v", o.EvalPlusTree, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return exitcode.Errorf(exitcode.Usage, "--evalplus-tree %s: not a folder (%s): give a checkout of evalplus at 26d6d00", o.EvalPlusTree, abs)
		}
		o.EvalPlusTree = abs
	default:
		return exitcode.Errorf(exitcode.Usage, "--engine %q: want repro or evalplus", o.Engine)
	}
	if err := o.Limits.Validate(); err != nil && !(resuming && o.Limits == RunLimits{}) {
		return exitcode.New(exitcode.Usage, err)
	}
	if o.Subject.Label != "" {
		if err := runlabel.CheckLabel(o.Subject.Label); err != nil {
			return err
		}
	}
	if o.Subject.Model != "" {
		if err := runlabel.CheckModel(o.Subject.Model); err != nil {
			return err
		}
	}
	return nil
}

// optionsValidated is nil but in a test of this package: if it holds a
// function, Validate calls it with the options first, so that a test can
// count the calls.
var optionsValidated atomic.Pointer[func(*Options)]

// RunReport is what a scoring run reports: the score command's --json
// document, also kept in the run record.
type RunReport struct {
	RunID       string           `json:"run_id"`
	RunDir      string           `json:"run_dir"`
	ResultsFile string           `json:"results_file,omitempty"`
	Engine      string           `json:"engine"`
	EngineNote  string           `json:"engine_note,omitempty"`
	Dataset     string           `json:"dataset"`
	DatasetMD5  string           `json:"dataset_md5"`
	Tasks       int              `json:"tasks"`
	Samples     *Input           `json:"samples,omitempty"`
	Canonical   bool             `json:"canonical"`
	Summary     *Summary         `json:"summary,omitempty"`
	SelfCheck   *SelfCheckReport `json:"self_check,omitempty"`
	Truth       *TruthReport     `json:"ground_truth,omitempty"`
	Scoring     *ScoreStats      `json:"scoring,omitempty"`
	Journal     *JournalReport   `json:"journal,omitempty"`
	// Recheck lists the time-sensitive verdicts that were run twice.
	Recheck *RecheckReport `json:"recheck,omitempty"`
	// ImageVerification is what the trust file's image policy checked.
	ImageVerification *imagetrust.Verification `json:"image_verification,omitempty"`
	WallSeconds       float64                  `json:"wall_seconds"`
	PeakMemory        int64                    `json:"container_peak_memory_bytes"`
	Error             string                   `json:"error,omitempty"`
	// Reaped are the sandbox containers removed at the start because the
	// repro process that made them is gone (a run killed outright).
	Reaped []sandbox.Reaped `json:"reaped_containers,omitempty"`

	// Subject is the label, model and sampling the run was given.
	runlabel.Subject
}

// Score runs one scoring of samples (or of the canonical solutions) in the
// sandbox as a workload: the options first (taken from the run it resumes
// where empty, then Validate, once), then the other preconditions
// (dataset, samples, engine, image), then a run folder with the harness,
// the samples' workspace copy, ground truth, self-check and scoring,
// eval_results.json, and a signed record whatever the outcome. The samples
// are read once before the run (LoadSamples) and hashed once more at its
// end (Input.Check). The report is nil only when nothing ran.
func Score(ctx context.Context, st *store.Store, o Options) (*RunReport, error) {
	start := time.Now()
	prior, err := settleOptions(st.Home(), &o)
	if err != nil {
		return nil, err
	}
	return scoreIn(ctx, st, o, prior, start)
}

// ScoreAt is Score as `repro score` runs it, for the REPRO_HOME home: the
// options are checked before the store in home is opened (which creates
// its folders), so that refused options leave home as it was.
func ScoreAt(ctx context.Context, home string, o Options) (*RunReport, error) {
	start := time.Now()
	prior, err := settleOptions(home, &o)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		return nil, err
	}
	return scoreIn(ctx, st, o, prior, start)
}

// settleOptions completes o from the run it resumes (openPrior, adopt),
// if any, and validates it: the one call of Validate of a run. A usage
// error in o comes before a difference from the resumed run.
func settleOptions(home string, o *Options) (*priorRun, error) {
	prior, err := openPrior(home, o)
	if err != nil {
		return nil, err
	}
	var differ error
	if prior != nil {
		differ = prior.adopt(o)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if differ != nil {
		return nil, differ
	}
	return prior, nil
}

// scoreIn is Score once the options are settled (settleOptions); start is
// when the run was asked for.
func scoreIn(ctx context.Context, st *store.Store, o Options, prior *priorRun, start time.Time) (*RunReport, error) {
	choice := task.DatasetChoices[o.Dataset]

	// Preconditions: dataset, samples, engine, image. Nothing has run yet.
	d, assets, err := openDataset(ctx, st, choice)
	if err != nil {
		return nil, err
	}
	tasks, err := SelectTasks(d, o.Tasks)
	if err != nil {
		return nil, err
	}
	cacheDir, err := st.StateDir("humaneval")
	if err != nil {
		return nil, err
	}
	var loaded *LoadedSamples
	if o.Samples != "" {
		// The samples' programs wait on disk beside the cache.
		if loaded, err = LoadSamples(o.Samples, d, tasks, cacheDir); err != nil {
			return nil, err
		}
		defer loaded.Close()
	}
	// The image is admitted by the trust file's policy, under the runtime
	// the engine runs containers with, before any container (ground truth,
	// self-check, candidates) starts.
	e, img, admitted, err := imagetrust.Open(ctx, st.Home(), imagetrust.Options{TrustPath: o.TrustPath, Trees: wire.SBOMTrees(), Runtime: o.Runtime})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	facts, err := e.HostFacts(ctx)
	if err != nil {
		return nil, exitcode.New(exitcode.Precondition, err)
	}
	facts.Image = &img
	if _, err := e.Sweep(ctx); err != nil {
		return nil, fmt.Errorf("failed to remove stale sandbox containers: %w", err)
	}
	reaped := e.Reaped()
	for _, r := range reaped {
		if o.Warn != nil {
			o.Warn(r.String())
		}
	}
	kind := o.Kind
	if kind == "" {
		kind = "humaneval"
	}
	run, err := workload.Start(st.Home(), kind, o.Version)
	if err != nil {
		return nil, err
	}
	rec := run.Record
	rec.Assets = assets
	rec.Image = img
	rec.Sandbox = map[string]any{"host": facts, "runtime": e.Runtime(), "supervisor_limits": wire.SupervisorLimits(), "large_supervisor_limits": wire.LargeLimits(),
		"supervisor_pids": sandbox.EnforcePids(e.Runtime(), wire.SupervisorLimits().Pids), "large_supervisor_pids": sandbox.EnforcePids(e.Runtime(), wire.LargeLimits().Pids), "image_verification": admitted}
	rep := &RunReport{RunID: run.ID, RunDir: run.Dir, Engine: o.Engine, Dataset: d.ID, DatasetMD5: d.MD5, Tasks: len(tasks), Canonical: o.Canonical, ImageVerification: admitted, Subject: o.Subject, Reaped: reaped}
	if rep.Label == "" {
		rep.Label = runlabel.DefaultLabel(o.Samples, o.Canonical)
	}
	err = score(ctx, st, o, run, rep, runInputs{dataset: d, datasetID: choice.ID, tasks: tasks, samples: loaded, engine: e, image: img, cacheDir: cacheDir, prior: prior})
	rep.WallSeconds = time.Since(start).Seconds()
	if err != nil {
		rep.Error = err.Error()
	}
	rec.Extra = rep
	if o.Finish != nil {
		err = o.Finish(run, rep, err)
	}
	return rep, run.End(err)
}

// runInputs are what Score opened before the run began.
type runInputs struct {
	dataset   *task.Dataset
	datasetID string
	tasks     []*task.Task
	samples   *LoadedSamples // nil without Options.Samples
	engine    *sandbox.Engine
	image     sandbox.Image
	cacheDir  string
	prior     *priorRun // the run this one resumes, or nil
}

func score(ctx context.Context, st *store.Store, o Options, run *workload.Run, rep *RunReport, in runInputs) (err error) {
	d, tasks, rec := in.dataset, in.tasks, run.Record
	harnessDir, err := wire.WriteHarness(filepath.Join(run.Dir, "harness"))
	if err != nil {
		return err
	}
	rec.Limits = map[string]any{"run": o.Limits, "harness_digest": wire.HarnessDigest, "parallel": o.Parallel, "base_only": o.BaseOnly, "cache": o.Cache}

	var samples []*task.Sample
	if in.samples != nil {
		// Not :=, which would declare an err of this block: the deferred
		// check below must set score's result.
		var input *Input
		if input, err = in.samples.Prepare(filepath.Join(run.Dir, "workspace")); err != nil {
			return err
		}
		rep.Samples = input
		for _, w := range input.Warnings {
			if o.Warn != nil {
				o.Warn(w)
			}
		}
		for _, t := range tasks {
			samples = append(samples, input.Set.ByTask[t.ID]...)
		}
		defer func() {
			// A change to the samples voids the run, also a failed one
			// (and a completed one: this is its last step).
			// Its scores go from the report, the results file and the
			// record alike; a run that had already failed keeps its own
			// error's text.
			if cerr := input.Check(); cerr != nil {
				if err != nil {
					cerr = fmt.Errorf("%w; the run had stopped before: %v", cerr, err)
				}
				err = cerr
				rep.Summary, rep.ResultsFile = nil, ""
				rec.Summary, rec.Tests = nil, nil
				os.Remove(filepath.Join(run.Dir, "eval_results.json"))
			}
		}()
	}

	key := TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: in.image.ID, Harness: wire.HarnessDigest, CPU: runs.CPUModel()}
	truth, err := OpenTruth(in.cacheDir, key)
	if err != nil {
		return err
	}
	var report *StagesReport
	var jr *journalRun
	if o.Engine == EngineRepro {
		if o.Canonical {
			samples = CanonicalSamples(tasks)
		}
		id := RunIdentity{Dataset: d.ID, DatasetSHA256: d.SHA256.Hex(), Samples: absPath(o.Samples), Canonical: o.Canonical, BaseOnly: o.BaseOnly,
			Engine: o.Engine, Image: in.image.ID, Runtime: string(in.engine.Runtime()), Harness: wire.HarnessDigest.String(), Limits: o.Limits,
			CPUModel: key.CPU, Repro: o.Version}
		if o.Samples == "" {
			id.Samples = ""
		} else {
			id.SamplesSHA256 = rep.Samples.SHA256.Hex()
		}
		for _, t := range tasks {
			id.Tasks = append(id.Tasks, t.ID)
		}
		if jr, err = openJournalRun(st.Home(), run, o, id, in.prior, samples, d, truth); err != nil {
			return err
		}
		rep.Journal = &jr.report
		defer func() {
			if cerr := jr.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	if o.Engine == EngineEvalPlus {
		ep, lerr := st.Catalog().Lookup(EvalPlusCatalogID)
		if lerr != nil {
			return lerr
		}
		if err := ep.RequirePinned(); err != nil {
			return err
		}
		dataFile, werr := writeDatasetJSONL(ctx, st, in.datasetID, d, filepath.Join(run.Dir, "evalplus-input"))
		if werr != nil {
			return werr
		}
		rep.EngineNote = EvalPlusWeakness
		run.AddAsset(runs.Asset{ID: ep.ID, SHA256: ep.TreeDigest.Hex(), Tree: true})
		report, err = RunEvalPlus(ctx, EvalPlusConfig{
			Engine: in.engine, Image: in.image, HarnessDir: harnessDir, TreeDir: o.EvalPlusTree, TreeDigest: *ep.TreeDigest,
			DatasetFile: dataFile, Dataset: d, Tasks: tasks, Samples: samples, Canonical: o.Canonical,
			BaseOnly: o.BaseOnly, Parallel: o.Parallel, Limits: o.Limits, Progress: o.Progress,
		})
	} else {
		report, err = RunStages(ctx, StagesConfig{
			Dataset: d, Tasks: tasks, Samples: samples, Canonical: o.Canonical, Truth: truth,
			Launch:      wire.SandboxLauncher(in.engine, in.image, harnessDir, wire.SupervisorLimits()),
			LaunchLarge: wire.SandboxLauncher(in.engine, in.image, harnessDir, wire.LargeLimits()),
			Limits:      o.Limits, BaseOnly: o.BaseOnly, Parallel: o.Parallel, Progress: o.Progress,
			Known: jr.known, Decided: jr.decided, EngineUp: in.engine.Ping, Verdicts: o.Verdicts,
			SpoolDir: run.Dir, SelfCheckBaseOnly: o.SelfCheckBaseOnly, TruthDigests: o.TruthDigests,
		})
		if jerr := jr.failed(); jerr != nil && err == nil {
			err = jerr
		}
	}
	if report != nil {
		if report.Spool != nil {
			defer report.Spool.Close()
		}
		rep.Truth, rep.SelfCheck = &report.Truth, &report.SelfCheck
		rep.PeakMemory = report.PeakMemory()
		rec.SelfCheck = report.SelfCheck
	}
	if err != nil {
		return err
	}
	rep.Scoring = &report.Scoring
	results := report.Source()
	if o.Engine == EngineRepro {
		if rep.Recheck, err = Rechecks(results, o.Limits); err != nil {
			return err
		}
	}
	rep.Summary = &report.Summary
	rec.Summary = report.Summary
	resultsPath := filepath.Join(run.Dir, "eval_results.json")
	if err := WriteResults(resultsPath, d, tasks, results, report.Summary, time.Now()); err != nil {
		return err
	}
	rep.ResultsFile = resultsPath
	rec.Tests, err = TestsOf(results, filepath.Base(resultsPath))
	return err
}

// WriteText writes the report for people.
func (rep *RunReport) WriteText(w io.Writer) {
	s := rep.Summary
	pct := func(p PassAtK) string {
		if v, ok := p["pass@1"]; ok {
			return fmt.Sprintf("%.1f", 100*v)
		}
		return "-"
	}
	what := fmt.Sprintf("%d samples", s.Samples)
	if rep.Canonical {
		what = fmt.Sprintf("%d canonical solutions", s.Samples)
	}
	subset := ""
	if s.Subset {
		subset = " (a subset)"
	}
	ui.Fprintf(w, "%s: %s for %d tasks%s, self-check %d/%d passed\n", rep.Dataset, what, s.Tasks, subset, rep.SelfCheck.Passed, rep.SelfCheck.Tasks)
	ui.Fprintf(w, "label: %q", rep.Label)
	if rep.Model != "" {
		ui.Fprintf(w, ", model %q", rep.Model)
	}
	if rep.Sampling != nil {
		ui.Fprintf(w, ", sampling %s", rep.Sampling)
	}
	ui.Fprintf(w, "\n")
	if s.PlusScored {
		ui.Fprintf(w, "pass@1 (base / plus): %s / %s\n", pct(s.BasePassAtK), pct(s.PlusPassAtK))
		ui.Fprintf(w, "passed: base %d/%d, base and plus %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.PlusPassed, s.Samples, s.Timeouts)
	} else {
		ui.Fprintf(w, "pass@1 (base): %s\n", pct(s.BasePassAtK))
		ui.Fprintf(w, "passed: base %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.Timeouts)
	}
	for _, k := range []string{"pass@10", "pass@100"} {
		if v, ok := s.BasePassAtK[k]; ok {
			ui.Fprintf(w, "%s (base / plus): %.1f / %.1f\n", k, 100*v, 100*s.PlusPassAtK[k])
		}
	}
	if rep.Engine == EngineEvalPlus {
		ui.Fprintf(w, "engine: EvalPlus %s's scoring core in the sandbox; %s\n", EvalPlusCommit[:7], EvalPlusWeakness)
		ui.Fprintf(w, "time: %.1f s (self-check %.1f s, scoring %.1f s, each with EvalPlus's own ground truth)\n",
			rep.WallSeconds, rep.SelfCheck.Stats.Wall.Seconds(), rep.Scoring.Wall.Seconds())
	} else {
		truth := "cached"
		if rep.Truth.Computed > 0 {
			truth = fmt.Sprintf("%d tasks computed in %.1f s", rep.Truth.Computed, rep.Truth.Wall.Seconds())
		}
		ui.Fprintf(w, "time: %.1f s (ground truth %s, self-check %.1f s, scoring %.1f s)\n",
			rep.WallSeconds, truth, rep.SelfCheck.Stats.Wall.Seconds(), rep.Scoring.Wall.Seconds())
	}
	if sc := rep.Scoring; sc != nil && (sc.Shared > 0 || sc.Reused > 0) {
		ui.Fprintf(w, "executions: %d run, %d verdicts shared by equal programs, %d taken from earlier runs\n", sc.Jobs, sc.Shared, sc.Reused)
	}
	if rc := rep.Recheck; rc != nil && len(rc.Rechecked) > 0 {
		changed := 0
		for _, v := range rc.Rechecked {
			if v.DecidedBy == DecidedByRecheck {
				changed++
			}
		}
		ui.Fprintf(w, "time-sensitive verdicts: %d run twice (%s, margin %.0f%%), %d decided by the re-run\n", len(rc.Rechecked), rc.Rule, 100*rc.Margin, changed)
	}
	if sc, rc := rep.Scoring, rep.Recheck; sc != nil && rc != nil && sc.OverrunDecided > 0 {
		ui.Fprintf(w, "timeouts run once: %d, still running at %.2f times their limit\n", sc.OverrunDecided, rc.Overrun)
	}
	if j := rep.Journal; j != nil && j.ResumedFrom != "" {
		ui.Fprintf(w, "resumed run %s: %d verdicts from its journal\n", j.ResumedFrom, j.Resumed)
		if j.Rescored > 0 {
			ui.Fprintf(w, "  %d journaled verdicts decided again: judged against other ground truth than this run's (computed again since), or journaled without naming it\n", j.Rescored)
		}
	}
	ui.Fprintf(w, "results: %q\n", rep.ResultsFile)
}
