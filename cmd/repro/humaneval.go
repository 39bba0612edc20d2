package main

import (
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/humaneval"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
	"github.com/spf13/cobra"
)

func init() { register(newHumanEvalCommand) }

// humanevalDatasets maps --dataset to catalog ids: the dataset, and the
// dataset its inputs come from when that is another one.
var humanevalDatasets = map[string][2]string{
	"humanevalplus":      {"humanevalplus-v0.1.10", ""},
	"humanevalplus-mini": {"humanevalplus-mini-v0.1.10", ""},
	"humaneval":          {"humaneval", "humanevalplus-v0.1.10"},
}

type humanevalOptions struct {
	samples     string
	canonical   bool
	dataset     string
	baseOnly    bool
	parallel    int
	tasks       string
	minTime     float64
	factor      float64
	asJSON      bool
	engine      string
	evalplusDir string
}

func newHumanEvalCommand() *cobra.Command {
	o := humanevalOptions{}
	cmd := &cobra.Command{
		Use:   "humaneval (--samples PATH | --canonical)",
		Short: "Score HumanEval+ samples in the sandbox",
		Long: `humaneval scores code samples on HumanEval+ (or its Mini variant, or the
original HumanEval) the way EvalPlus does, but with every sample run in the
Docker sandbox and every verdict decided on the host.

Samples come in EvalPlus's formats: a .jsonl file with task_id and solution
(a whole program) or completion (appended to the prompt), several lines per
task for pass@k; or a folder NAME/HumanEval_N/K.py. Every task must have a
sample unless --tasks names a subset. The samples are copied into the run's
workspace and run from there; a change to the copy or to the original during
the run stops it with exit 4 and no score.

Each run: ground truth (the canonical solutions on every input, in the
sandbox; cached per dataset, image, harness and CPU model), then a self-check
that scores the canonical solutions exactly as candidates are scored (every
task must pass, or the run stops with exit 4 before any candidate runs), then
the candidates. Results go to an EvalPlus-compatible eval_results.json in the
run folder, with a signed run record.

--canonical scores the canonical solutions as if they were candidates.

EXIT STATUS
  0 scoring completed (whatever the scores), 2 bad flags or samples,
  3 no engine, image or dataset (nothing ran), 4 failed self-check, changed
  samples, or a corrupt ground-truth cache or harness.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHumanEval(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.samples, "samples", "", "samples: a .jsonl file or a folder NAME/HumanEval_N/K.py")
	f.BoolVar(&o.canonical, "canonical", false, "score the canonical solutions as candidates")
	f.StringVar(&o.dataset, "dataset", "humanevalplus", "humanevalplus, humanevalplus-mini or humaneval")
	f.BoolVar(&o.baseOnly, "base-only", false, "score the base inputs only")
	f.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "sandbox containers at once")
	f.StringVar(&o.tasks, "tasks", "", "score only these tasks: numbers or ids, with ranges, e.g. 0,2,10-12")
	f.Float64Var(&o.minTime, "min-time-limit", humaneval.DefaultRunLimits().MinTimeLimit, "least CPU seconds per input")
	f.Float64Var(&o.factor, "gt-time-limit-factor", humaneval.DefaultRunLimits().TimeFactor, "per-input limit as a multiple of the canonical solution's time")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON document")
	f.StringVar(&o.engine, "engine", "repro", "scoring engine: repro, or evalplus (EvalPlus's own code, in the sandbox)")
	f.StringVar(&o.evalplusDir, "evalplus-tree", "", "with --engine evalplus: a checkout of evalplus at the pinned commit")
	return cmd
}

// humanevalReport is the --json document.
type humanevalReport struct {
	RunID       string                     `json:"run_id"`
	RunDir      string                     `json:"run_dir"`
	ResultsFile string                     `json:"results_file,omitempty"`
	Engine      string                     `json:"engine"`
	EngineNote  string                     `json:"engine_note,omitempty"`
	Dataset     string                     `json:"dataset"`
	DatasetMD5  string                     `json:"dataset_md5"`
	Tasks       int                        `json:"tasks"`
	Samples     *humaneval.Input           `json:"samples,omitempty"`
	Canonical   bool                       `json:"canonical"`
	Summary     *humaneval.Summary         `json:"summary,omitempty"`
	SelfCheck   *humaneval.SelfCheckReport `json:"self_check,omitempty"`
	Truth       *humaneval.TruthReport     `json:"ground_truth,omitempty"`
	Scoring     *humaneval.ScoreStats      `json:"scoring,omitempty"`
	WallSeconds float64                    `json:"wall_seconds"`
	PeakMemory  int64                      `json:"container_peak_memory_bytes"`
	Error       string                     `json:"error,omitempty"`
}

func runHumanEval(cmd *cobra.Command, o humanevalOptions) (err error) {
	ctx := cmd.Context()
	start := time.Now()
	if (o.samples == "") == !o.canonical {
		return exitcode.Errorf(exitcode.Usage, "give exactly one of --samples PATH and --canonical")
	}
	ids, ok := humanevalDatasets[o.dataset]
	if !ok {
		return exitcode.Errorf(exitcode.Usage, "--dataset %q: want humanevalplus, humanevalplus-mini or humaneval", o.dataset)
	}
	if o.parallel < 1 || o.parallel > 64 {
		return exitcode.Errorf(exitcode.Usage, "--parallel %d: want 1 to 64", o.parallel)
	}
	switch o.engine {
	case "repro":
		if o.evalplusDir != "" {
			return exitcode.Errorf(exitcode.Usage, "--evalplus-tree goes with --engine evalplus")
		}
	case "evalplus":
		if o.evalplusDir == "" {
			return exitcode.Errorf(exitcode.Usage, "--engine evalplus needs --evalplus-tree DIR (a checkout of evalplus at 26d6d00)")
		}
	default:
		return exitcode.Errorf(exitcode.Usage, "--engine %q: want repro or evalplus", o.engine)
	}
	limits := humaneval.DefaultRunLimits()
	limits.MinTimeLimit, limits.TimeFactor = o.minTime, o.factor
	if err := limits.Validate(); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	t := terminal(cmd, o.asJSON)

	// Preconditions: dataset, engine, image. Nothing has run yet.
	st, err := openStore()
	if err != nil {
		return err
	}
	d, assets, err := openHumanEvalDataset(st, ids)
	if err != nil {
		return err
	}
	tasks, err := selectTasks(d, o.tasks)
	if err != nil {
		return err
	}
	e, img, err := openPinnedSandbox(ctx, st.Home())
	if err != nil {
		return err
	}
	defer e.Close()
	facts, err := e.HostFacts(ctx)
	if err != nil {
		return exitcode.New(exitcode.Precondition, err)
	}
	facts.Image = &img
	if _, err := e.Sweep(ctx); err != nil {
		return fmt.Errorf("failed to remove stale sandbox containers: %w", err)
	}
	cacheDir, err := st.StateDir("humaneval")
	if err != nil {
		return err
	}

	// The run folder, its record, and everything that ran.
	run, err := runs.Create(st.Home(), "humaneval")
	if err != nil {
		return err
	}
	rec := run.NewRecord(versionString())
	rec.Assets = assets
	rec.Image = img
	rec.Sandbox = map[string]any{"host": facts, "supervisor_limits": humaneval.SupervisorLimits()}
	rep := &humanevalReport{RunID: run.ID, RunDir: run.Dir, Engine: o.engine, Dataset: d.ID, DatasetMD5: d.MD5, Tasks: len(tasks), Canonical: o.canonical}
	defer func() {
		rep.WallSeconds = time.Since(start).Seconds()
		if err != nil {
			rep.Error = err.Error()
		}
		rec.Extra = rep
		if ferr := run.Finish(rec, int(exitcode.Of(err))); ferr != nil && err == nil {
			err = ferr
		}
		if o.asJSON {
			if jerr := t.Document(rep); jerr != nil && err == nil {
				err = jerr
			}
		}
	}()

	harnessDir, err := humaneval.WriteHarness(filepath.Join(run.Dir, "harness"))
	if err != nil {
		return err
	}
	rec.Limits = map[string]any{"run": limits, "harness_digest": humaneval.HarnessDigest, "parallel": o.parallel, "base_only": o.baseOnly}

	var samples []*humaneval.Sample
	if o.samples != "" {
		in, err := humaneval.PrepareSamples(o.samples, filepath.Join(run.Dir, "workspace"), d)
		if err != nil {
			return err
		}
		rep.Samples = in
		for _, w := range in.Warnings {
			t.Warnf("%s", w)
		}
		if miss := in.Set.Missing(d, tasks); len(miss) > 0 {
			return exitcode.Errorf(exitcode.Usage, "samples %q have no sample for %d tasks: %s (every task needs one, or name a subset with --tasks)",
				o.samples, len(miss), strings.Join(miss, ", "))
		}
		for _, t := range tasks {
			samples = append(samples, in.Set.ByTask[t.ID]...)
		}
		defer func() {
			// A change to the samples voids the run, also a failed one.
			if cerr := in.Check(); cerr != nil {
				err = cerr
				rep.Summary, rep.ResultsFile = nil, ""
				os.Remove(filepath.Join(run.Dir, "eval_results.json"))
			}
		}()
	}

	key := humaneval.TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: img.ID, Harness: humaneval.HarnessDigest, CPU: runs.CPUModel()}
	truth, err := humaneval.OpenTruth(cacheDir, key)
	if err != nil {
		return err
	}
	launch := humaneval.SandboxLauncher(e, img, harnessDir, humaneval.SupervisorLimits())
	progress := t.StageProgress()
	defer t.ClearStatus()

	var report *humaneval.Report
	if o.engine == "evalplus" {
		ep, lerr := st.Catalog().Lookup(humaneval.EvalPlusCatalogID)
		if lerr != nil {
			return lerr
		}
		if err := ep.RequirePinned(); err != nil {
			return err
		}
		dataFile, werr := writeDatasetJSONL(st, ids[0], d, filepath.Join(run.Dir, "evalplus-input"))
		if werr != nil {
			return werr
		}
		rep.EngineNote = humaneval.EvalPlusWeakness
		rec.Assets = append(rec.Assets, runs.Asset{ID: ep.ID, SHA256: ep.TreeDigest.Hex()})
		report, err = humaneval.RunEvalPlus(ctx, humaneval.EvalPlusConfig{
			Engine: e, Image: img, HarnessDir: harnessDir, TreeDir: o.evalplusDir, TreeDigest: *ep.TreeDigest,
			DatasetFile: dataFile, Dataset: d, Tasks: tasks, Samples: samples, Canonical: o.canonical,
			BaseOnly: o.baseOnly, Parallel: o.parallel, Limits: limits, Progress: progress,
		})
	} else {
		report, err = humaneval.Run(ctx, humaneval.Config{
			Dataset: d, Tasks: tasks, Samples: samples, Canonical: o.canonical, Launch: launch, Truth: truth,
			Limits: limits, BaseOnly: o.baseOnly, Parallel: o.parallel, Progress: progress,
		})
	}
	if report != nil {
		rep.Truth, rep.SelfCheck = &report.Truth, &report.SelfCheck
		rep.PeakMemory = report.PeakMemory()
		rec.SelfCheck = report.SelfCheck
	}
	if err != nil {
		return err
	}
	t.ClearStatus()
	rep.Scoring = &report.Scoring
	rep.Summary = &report.Summary
	rec.Summary = report.Summary
	resultsPath := filepath.Join(run.Dir, "eval_results.json")
	if err := humaneval.WriteResults(resultsPath, d, tasks, report.Results, report.Summary, time.Now()); err != nil {
		return err
	}
	rep.ResultsFile = resultsPath
	if o.samples != "" {
		if err := rep.Samples.Check(); err != nil {
			return err
		}
	}
	if !o.asJSON {
		printHumanEvalSummary(t.Human(), rep, report, time.Since(start))
	}
	return nil
}

// writeDatasetJSONL writes the decompressed dataset from the store into
// dir for EvalPlus's code (which hashes the JSON lines) and checks it is the
// dataset that was parsed.
func writeDatasetJSONL(st *store.Store, id string, d *humaneval.Dataset, dir string) (string, error) {
	f, err := st.OpenVerified(id)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "HumanEvalPlus.jsonl")
	h := md5.New()
	err = atomicfile.Write(p, 0o444, func(w io.Writer) error {
		_, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(zr, 64<<20))
		return err
	}, nil)
	if err != nil {
		return "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.MD5 {
		return "", exitcode.Errorf(exitcode.Integrity, "dataset %s decompressed to md5 %s, not %s", id, got, d.MD5)
	}
	return p, nil
}

// openHumanEvalDataset opens the dataset (and its inputs' dataset) from the
// store, verified against the catalog pins.
func openHumanEvalDataset(st *store.Store, ids [2]string) (*humaneval.Dataset, []runs.Asset, error) {
	load := func(id string, inputs *humaneval.Dataset) (*humaneval.Dataset, runs.Asset, error) {
		e, err := st.Catalog().Lookup(id)
		if err != nil {
			return nil, runs.Asset{}, err
		}
		if err := e.RequirePinned(); err != nil {
			return nil, runs.Asset{}, err
		}
		f, err := st.OpenVerified(id)
		if err != nil {
			return nil, runs.Asset{}, err
		}
		defer f.Close()
		var d *humaneval.Dataset
		if inputs != nil {
			d, err = humaneval.LoadOriginal(f, id, e.Size, *e.SHA256, inputs)
		} else {
			d, err = humaneval.LoadPlus(f, id, e.Size, *e.SHA256)
		}
		if err != nil {
			var mm *digest.MismatchError
			if errors.As(err, &mm) {
				return nil, runs.Asset{}, exitcode.New(exitcode.Integrity, err)
			}
			return nil, runs.Asset{}, err
		}
		return d, runs.Asset{ID: id, SHA256: e.SHA256.Hex(), Size: e.Size}, nil
	}
	if ids[1] == "" {
		d, a, err := load(ids[0], nil)
		if err != nil {
			return nil, nil, err
		}
		return d, []runs.Asset{a}, nil
	}
	in, a1, err := load(ids[1], nil)
	if err != nil {
		return nil, nil, err
	}
	d, a0, err := load(ids[0], in)
	if err != nil {
		return nil, nil, err
	}
	return d, []runs.Asset{a0, a1}, nil
}

// selectTasks parses --tasks: comma-separated task numbers or ids, and
// ranges N-M. Empty means every task.
func selectTasks(d *humaneval.Dataset, spec string) ([]*humaneval.Task, error) {
	if strings.TrimSpace(spec) == "" {
		return d.Tasks, nil
	}
	want := map[int]bool{}
	num := func(s string) (int, error) {
		s = strings.TrimPrefix(strings.TrimSpace(s), "HumanEval/")
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n >= len(d.Tasks) {
			return 0, exitcode.Errorf(exitcode.Usage, "--tasks: %q is not a task of %s (0 to %d)", s, d.ID, len(d.Tasks)-1)
		}
		return n, nil
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = num(hi); err != nil {
				return nil, err
			}
		}
		if b < a {
			return nil, exitcode.Errorf(exitcode.Usage, "--tasks: empty range %q", part)
		}
		for i := a; i <= b; i++ {
			want[i] = true
		}
	}
	var out []*humaneval.Task
	for _, t := range d.Tasks {
		if want[t.Index] {
			out = append(out, t)
		}
	}
	return out, nil
}

func printHumanEvalSummary(w io.Writer, rep *humanevalReport, r *humaneval.Report, wall time.Duration) {
	s := r.Summary
	pct := func(p humaneval.PassAtK) string {
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
	fmt.Fprintf(w, "%s: %s for %d tasks%s, self-check %d/%d passed\n", rep.Dataset, what, s.Tasks, subset, r.SelfCheck.Passed, r.SelfCheck.Tasks)
	if s.PlusScored {
		fmt.Fprintf(w, "pass@1 (base / plus): %s / %s\n", pct(s.BasePassAtK), pct(s.PlusPassAtK))
		fmt.Fprintf(w, "passed: base %d/%d, base and plus %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.PlusPassed, s.Samples, s.Timeouts)
	} else {
		fmt.Fprintf(w, "pass@1 (base): %s\n", pct(s.BasePassAtK))
		fmt.Fprintf(w, "passed: base %d/%d, %d timeouts\n", s.BasePassed, s.Samples, s.Timeouts)
	}
	for _, k := range []string{"pass@10", "pass@100"} {
		if v, ok := s.BasePassAtK[k]; ok {
			fmt.Fprintf(w, "%s (base / plus): %.1f / %.1f\n", k, 100*v, 100*s.PlusPassAtK[k])
		}
	}
	if rep.Engine == "evalplus" {
		fmt.Fprintf(w, "engine: EvalPlus %s's scoring core in the sandbox; %s\n", humaneval.EvalPlusCommit[:7], humaneval.EvalPlusWeakness)
		fmt.Fprintf(w, "time: %.1f s (self-check %.1f s, scoring %.1f s, each with EvalPlus's own ground truth)\n",
			wall.Seconds(), r.SelfCheck.Stats.Wall.Seconds(), r.Scoring.Wall.Seconds())
	} else {
		truth := "cached"
		if r.Truth.Computed > 0 {
			truth = fmt.Sprintf("%d tasks computed in %.1f s", r.Truth.Computed, r.Truth.Wall.Seconds())
		}
		fmt.Fprintf(w, "time: %.1f s (ground truth %s, self-check %.1f s, scoring %.1f s)\n",
			wall.Seconds(), truth, r.SelfCheck.Stats.Wall.Seconds(), r.Scoring.Wall.Seconds())
	}
	fmt.Fprintf(w, "results: %s\n", rep.ResultsFile)
}
