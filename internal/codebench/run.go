package codebench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// StagesConfig is what RunStages runs: the dataset's tasks, the
// candidates, the sandbox and the limits of a scoring run's three stages.
type StagesConfig struct {
	Dataset   *task.Dataset
	Tasks     []*task.Task   // the tasks to score, in dataset order
	Samples   []*task.Sample // the candidates; ignored when Canonical is set
	Canonical bool           // score the canonical solutions as if they were candidates
	Launch    wire.Launcher
	// LaunchLarge starts supervisors in the large sandbox (wire.LargeLimits)
	// for what the ordinary one cannot hold; nil means none.
	LaunchLarge wire.Launcher
	Truth       *Truth
	Limits      RunLimits
	BaseOnly    bool
	Parallel    int
	// Progress, if set, is told the stage ("ground truth", "self-check",
	// "scoring") and how many of its jobs are done.
	Progress func(stage string, done, total int)
	// Known and Decided are the candidates' Scorer hooks (see Scorer):
	// verdicts decided before (never for the self-check, which runs in
	// full in every process) and each verdict as it is decided.
	Known   func(i int, smp *task.Sample, p task.Phase) (PhaseResult, bool)
	Decided func(i int, smp *task.Sample, p task.Phase, pr PhaseResult, shared bool) error
	// EngineUp is the Scorer's (see Scorer), for the self-check and the
	// candidates.
	EngineUp func(ctx context.Context) error
	// Verdicts, if set, is told, each time a candidate sample has all its
	// verdicts (resumed or decided), how many have: passed and failed, of
	// samples in all; stage is "scoring".
	Verdicts func(stage string, passed, failed, samples int)
	// SpoolDir, if set, is where the candidates' verdicts are kept while
	// they are scored (a VerdictSpool, StagesReport.Spool) rather than in
	// memory (StagesReport.Results).
	SpoolDir string
	// SelfCheckBaseOnly names tasks of Tasks whose self-check runs on the
	// base inputs only (Options.SelfCheckBaseOnly); it changes nothing
	// where the run has no plus inputs. TruthDigests names tasks of Tasks
	// whose ground truth's digest the report records
	// (TruthReport.TaskDigests; Options.TruthDigests).
	SelfCheckBaseOnly []string
	TruthDigests      []string
}

// TruthReport describes the ground truth a run used.
type TruthReport struct {
	Key      TruthKey      `json:"key"`
	Dir      string        `json:"dir"`
	Computed int           `json:"computed_tasks"`
	Cached   int           `json:"cached_tasks"`
	Failed   []string      `json:"failed_tasks,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
	Stats    TruthStats    `json:"stats"`
	// TaskDigests are, for the tasks StagesConfig.TruthDigests names,
	// the digest of the ground truth this run judged them by
	// (Truth.TaskDigest).
	TaskDigests map[string]digest.SHA256 `json:"task_digests,omitempty"`
}

// SelfCheckFailure is a task whose canonical solution did not pass.
type SelfCheckFailure struct {
	Task   string `json:"task"`
	Phase  string `json:"phase"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
	// Flaky: the ground truth ran this canonical solution without error,
	// but the self-check did not pass it.
	Flaky bool `json:"flaky"`
}

// SelfCheckReport is the result of the canonical-solution self-check.
type SelfCheckReport struct {
	Tasks  int `json:"tasks"`
	Passed int `json:"passed"`
	// BaseOnlyTasks are the tasks whose canonical solution ran on the
	// base inputs only (StagesConfig.SelfCheckBaseOnly), in task order;
	// every other task ran on all the run's inputs.
	BaseOnlyTasks []string           `json:"base_only_tasks,omitempty"`
	Failures      []SelfCheckFailure `json:"failures,omitempty"`
	Stats         ScoreStats         `json:"stats"`
}

// OK reports whether every task passed.
func (s *SelfCheckReport) OK() bool {
	return s.Tasks > 0 && s.Passed == s.Tasks && len(s.Failures) == 0
}

// tally records the canonical results of a self-check over tasks tasks.
// flaky, when not nil, reports whether the ground truth ran a task's
// canonical solution without error, which makes its failure flaky.
func (s *SelfCheckReport) tally(tasks int, canon []*SampleResult, flaky func(taskID string) bool) {
	s.Tasks = tasks
	for _, r := range canon {
		if r.Passed() {
			s.Passed++
			continue
		}
		ph, pr := "base", &r.Base
		if r.Base.Status == StatusPass && r.Plus != nil {
			ph, pr = "plus", r.Plus
		}
		f := SelfCheckFailure{Task: r.Sample.TaskID, Phase: ph, Status: pr.Status, Reason: pr.Reason}
		if flaky != nil {
			f.Flaky = flaky(r.Sample.TaskID)
		}
		s.Failures = append(s.Failures, f)
	}
}

// Err is the exit-4 error that stops a run whose self-check failed, naming
// the tasks (nil when every task passed). path says whose code ran the
// canonical solutions, for the message.
func (s *SelfCheckReport) Err(path string) error {
	if s.OK() {
		return nil
	}
	var names []string
	for _, f := range s.Failures {
		n := f.Task
		if f.Flaky {
			n += " (flaky)"
		}
		names = append(names, n)
	}
	return exitcode.Errorf(exitcode.Integrity,
		"self-check failed: %sthe canonical solutions of %d of %d tasks did not pass (%s); no candidate was scored",
		path, len(s.Failures), s.Tasks, strings.Join(names, ", "))
}

// StagesReport is what RunStages found, stage by stage.
type StagesReport struct {
	Truth     TruthReport     `json:"ground_truth"`
	SelfCheck SelfCheckReport `json:"self_check"`
	// The candidates' results, in the order of the samples: in Results, or,
	// with StagesConfig.SpoolDir, in Spool, which the caller must Close.
	Results []*SampleResult `json:"-"`
	Spool   *VerdictSpool   `json:"-"`
	Summary Summary         `json:"summary"`
	Scoring ScoreStats      `json:"scoring"`
}

// Source returns the candidates' results, wherever they are kept.
func (r *StagesReport) Source() ResultSource {
	if r.Spool != nil {
		return r.Spool
	}
	return ResultSlice(r.Results)
}

// PeakMemory is the highest container peak memory seen in any stage.
func (r *StagesReport) PeakMemory() int64 {
	return max(r.Truth.Stats.PeakMemory, r.SelfCheck.Stats.PeakMemory, r.Scoring.PeakMemory)
}

// scored records the scoring stage's outcome in r: its statistics always,
// the summary of its results over tasks (a subset of d's when fewer) when
// it completed.
func (r *StagesReport) scored(st ScoreStats, err error, tasks []*task.Task, d *task.Dataset, plus bool) (*StagesReport, error) {
	r.Scoring = st
	if err != nil {
		return r, err
	}
	r.Summary, err = SummarizeSource(tasks, r.Source(), plus, len(tasks) != len(d.Tasks))
	return r, err
}

// CanonicalSamples returns the canonical program of each task as a sample.
func CanonicalSamples(tasks []*task.Task) []*task.Sample {
	out := make([]*task.Sample, len(tasks))
	for i, t := range tasks {
		out[i] = &task.Sample{TaskID: t.ID, Solution: t.Program(), Origin: "canonical solution of " + t.ID}
	}
	return out
}

// splitSelfCheck divides tasks into those self-checked in full and those
// on their base inputs only (the ids baseOnly names, where the run has
// plus inputs), each in task order. An id that is not among tasks, or
// twice, is a usage error.
func splitSelfCheck(tasks []*task.Task, baseOnly []string, plus bool) (full, base []*task.Task, err error) {
	picked, err := pickTasks(tasks, baseOnly)
	if err != nil {
		return nil, nil, fmt.Errorf("self-check on base inputs only: %w", err)
	}
	if !plus {
		return tasks, nil, nil
	}
	for _, t := range tasks {
		if len(picked) > 0 && picked[0] == t {
			base, picked = append(base, t), picked[1:]
		} else {
			full = append(full, t)
		}
	}
	return full, base, nil
}

// pickTasks returns the tasks ids names, in the order of tasks. An id
// that is not among tasks, or twice, is a usage error.
func pickTasks(tasks []*task.Task, ids []string) ([]*task.Task, error) {
	named := make(map[string]bool, len(ids))
	for _, id := range ids {
		if named[id] {
			return nil, exitcode.Errorf(exitcode.Usage, "task %s named twice", id)
		}
		named[id] = true
	}
	var out []*task.Task
	for _, t := range tasks {
		if named[t.ID] {
			out = append(out, t)
			delete(named, t.ID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(named)) {
		return nil, exitcode.Errorf(exitcode.Usage, "task %s is not scored in this run", id)
	}
	return out, nil
}

// RunStages runs a scoring run's three stages: it computes missing ground
// truth, runs the self-check and, if every canonical solution passed it,
// scores the candidates. A failed self-check returns the report so far
// with an integrity error naming the tasks; no candidate has run then.
func RunStages(ctx context.Context, cfg StagesConfig) (*StagesReport, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	if len(cfg.Tasks) == 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "no tasks to score")
	}
	plus := !cfg.BaseOnly && cfg.Dataset.HasPlus
	rep := &StagesReport{Truth: TruthReport{Key: cfg.Truth.Key, Dir: cfg.Truth.Dir()}}
	progress := func(stage string) func(int, int) {
		if cfg.Progress == nil {
			return nil
		}
		return func(d, t int) { cfg.Progress(stage, d, t) }
	}

	full, baseOnly, err := splitSelfCheck(cfg.Tasks, cfg.SelfCheckBaseOnly, plus)
	if err != nil {
		return rep, err
	}
	recorded, err := pickTasks(cfg.Tasks, cfg.TruthDigests)
	if err != nil {
		return rep, err
	}

	// Ground truth.
	start := time.Now()
	missing := cfg.Truth.Missing(cfg.Tasks, plus)
	rep.Truth.Computed, rep.Truth.Cached = len(missing), len(cfg.Tasks)-len(missing)
	if len(missing) > 0 {
		if cfg.Progress != nil {
			cfg.Progress("ground truth", 0, len(missing))
		}
		cfg.Truth.Large = cfg.LaunchLarge
		st, err := cfg.Truth.Compute(ctx, cfg.Launch, missing, plus, cfg.Parallel, cfg.Limits)
		rep.Truth.Stats = st
		if err != nil {
			return rep, err
		}
	}
	for _, t := range cfg.Tasks {
		tt, err := cfg.Truth.Get(t)
		if err != nil {
			return rep, err
		}
		if tt.Error != "" {
			rep.Truth.Failed = append(rep.Truth.Failed, t.ID)
		}
	}
	rep.Truth.Wall = time.Since(start)
	if len(recorded) > 0 {
		rep.Truth.TaskDigests = make(map[string]digest.SHA256, len(recorded))
	}
	for _, t := range recorded {
		if rep.Truth.TaskDigests[t.ID], err = cfg.Truth.TaskDigest(t); err != nil {
			return rep, err
		}
	}

	// Self-check: the canonical solutions through exactly the candidate path.
	sc := &Scorer{Launch: cfg.Launch, LaunchLarge: cfg.LaunchLarge, Dataset: cfg.Dataset, Truth: cfg.Truth, Limits: cfg.Limits,
		BaseOnly: !plus, Parallel: cfg.Parallel, Progress: progress("self-check"), Keep: true, EngineUp: cfg.EngineUp}
	defer func() {
		peak := sc.Release(ctx)
		rep.Scoring.PeakMemory = max(rep.Scoring.PeakMemory, peak)
	}()
	var canon []*SampleResult
	for _, pass := range []struct {
		tasks    []*task.Task
		baseOnly bool
	}{{full, !plus}, {baseOnly, true}} {
		if len(pass.tasks) == 0 {
			continue
		}
		sc.BaseOnly = pass.baseOnly
		got, st, err := sc.Score(ctx, CanonicalSamples(pass.tasks))
		rep.SelfCheck.Stats.add(st)
		if err != nil {
			return rep, err
		}
		canon = append(canon, got...)
	}
	sc.BaseOnly = !plus
	for _, t := range baseOnly {
		rep.SelfCheck.BaseOnlyTasks = append(rep.SelfCheck.BaseOnlyTasks, t.ID)
	}
	rep.SelfCheck.tally(len(cfg.Tasks), canon, func(id string) bool {
		tt, _ := cfg.Truth.Get(cfg.Dataset.Task(id))
		return tt != nil && tt.Error == ""
	})
	if err := rep.SelfCheck.Err(""); err != nil {
		return rep, err
	}

	// Candidates.
	samples := cfg.Samples
	if cfg.Canonical {
		samples = CanonicalSamples(cfg.Tasks)
	}
	if len(samples) == 0 {
		return rep, fmt.Errorf("no samples to score")
	}
	sc.Progress = progress("scoring")
	sc.Known, sc.Decided = cfg.Known, cfg.Decided
	if cfg.Verdicts != nil {
		report := func(p, f, n int) { cfg.Verdicts("scoring", p, f, n) }
		sc.Known, sc.Decided = newVerdictTally(len(samples), sc.phases(), report).wrap(sc.Known, sc.Decided)
	}
	var st ScoreStats
	if cfg.SpoolDir == "" {
		rep.Results, st, err = sc.Score(ctx, samples)
		return rep.scored(st, err, cfg.Tasks, cfg.Dataset, plus)
	}
	if rep.Spool, err = NewVerdictSpool(cfg.SpoolDir, samples, sc.phases()); err != nil {
		return rep, err
	}
	st, err = sc.ScoreTo(ctx, samples, rep.Spool)
	return rep.scored(st, err, cfg.Tasks, cfg.Dataset, plus)
}
