package codebench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/workpool"
)

// Status is a sample's verdict on one phase, named as EvalPlus names it.
type Status string

// The statuses a PhaseResult can hold.
const (
	StatusPass    Status = "pass"
	StatusFail    Status = "fail"
	StatusTimeout Status = "timeout"
)

// RunLimits are the limits of a scoring run.
type RunLimits struct {
	// MinTimeLimit and TimeFactor give each input the limit
	// max(MinTimeLimit, TimeFactor × ground-truth time), as EvalPlus's
	// --min-time-limit and --gt-time-limit-factor do, but in seconds of CPU
	// time of all the program's processes (EvalPlus counts wall-clock
	// seconds), so that a loaded host does not turn correct programs into
	// timeouts.
	MinTimeLimit float64 `json:"min_time_limit"`
	TimeFactor   float64 `json:"gt_time_limit_factor"`
	// TaskTimeout caps one program's run over one input list, as EvalPlus's
	// EVALPLUS_TIMEOUT_PER_TASK: min(TaskTimeout, sum of limits) + 1 s.
	TaskTimeout float64 `json:"task_timeout"`
	// ImportAllowance is added to the first input's limit for loading the
	// program (EvalPlus has no separate limit for it).
	ImportAllowance float64 `json:"import_allowance"`
	// WallFactor sets the backstop for a program that uses no CPU time
	// (it sleeps, or it blocks): it is stopped once it has been idle, that
	// is using no CPU while none of its processes is running or waiting for
	// a CPU, for WallFactor times its CPU limit. Time spent waiting for a
	// CPU on a loaded host never counts.
	WallFactor  float64 `json:"wall_factor"`
	ChildMemory int64   `json:"child_address_space_bytes"` // RLIMIT_AS of each program's process
	ChildFSize  int64   `json:"child_file_size_bytes"`     // RLIMIT_FSIZE of each program's process
	// NearLimitMargin is the share of its limit within which a pass is
	// time-sensitive (see NearLimit): such a pass, and a timeout, is run
	// once more in a fresh process before it is final (RecheckRule).
	NearLimitMargin float64 `json:"near_limit_margin"`
}

// maxOverrun is the largest overrun the supervisor takes.
const maxOverrun = 16

// Overrun is how far past its limit an input's call that struck it runs
// on, as a multiple of the limit: 1/(1 - NearLimitMargin), at most
// maxOverrun. The verdict is the timeout the limit decided; a call still
// running there is as far past its limit as a pass that used
// 1 - NearLimitMargin of it or less is within it, so its timeout is not
// time-sensitive and runs once (NearLimit).
func (rl RunLimits) Overrun() float64 {
	return min(maxOverrun, 1/(1-rl.NearLimitMargin))
}

// DefaultRunLimits are EvalPlus's current defaults (evalplus@26d6d00,
// evalplus/config.py and eval/__init__.py) plus the process limits.
func DefaultRunLimits() RunLimits {
	return RunLimits{
		MinTimeLimit: 4.0, TimeFactor: 4.0, TaskTimeout: 60, ImportAllowance: 4.0, WallFactor: 3,
		ChildMemory: 448 << 20, ChildFSize: 1 << 20, NearLimitMargin: DefaultNearLimitMargin,
	}
}

// Validate reports a limit that makes no sense.
func (rl RunLimits) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"min time limit", rl.MinTimeLimit}, {"time limit factor", rl.TimeFactor}, {"task timeout", rl.TaskTimeout}, {"import allowance", rl.ImportAllowance}, {"wall factor", rl.WallFactor}} {
		if !(f.v > 0 && f.v <= 3600) || math.IsNaN(f.v) {
			return fmt.Errorf("%s %v: want a number of seconds above 0 and at most 3600", f.name, f.v)
		}
	}
	if rl.ChildMemory < 64<<20 || rl.ChildFSize < 1 {
		return fmt.Errorf("child memory %d or file size %d too small", rl.ChildMemory, rl.ChildFSize)
	}
	if !(rl.NearLimitMargin > 0 && rl.NearLimitMargin < 1) {
		return fmt.Errorf("near-limit margin %v: want a share of the limit above 0 and below 1, e.g. 0.2", rl.NearLimitMargin)
	}
	return nil
}

// PhaseResult is the verdict of one program on one input list.
type PhaseResult struct {
	Status    Status `json:"status"`
	FailInput int    `json:"fail_input"` // the input EvalPlus lists as failing (listedInput); -1 for none
	Reason    string `json:"reason,omitempty"`
	Records   int    `json:"records"`
	// Elapsed is the deciding run's wall seconds (Clocks.Wall; kept under
	// its old name for the verdicts stored before Clocks).
	Elapsed float64 `json:"elapsed"`
	// Limit is the phase's CPU time limit in seconds (PhaseLimit), 0 where
	// none applied (no ground truth, or EvalPlus's engine).
	Limit float64 `json:"limit,omitempty"`
	// Clocks are the deciding run's times, each named by its clock; nil
	// for a verdict with no run of its own to time (no ground truth,
	// EvalPlus's engine) or stored before they were recorded.
	Clocks *PhaseClocks `json:"clocks,omitempty"`
	// Near names a verdict that depends on the time limit (see NearLimit);
	// nil where it does not.
	Near *NearLimit `json:"near_limit,omitempty"`
	// Exact: a result came within its own limit but not within the limit
	// of the time since its window of inputs was released, and a second
	// run that released one input at a time decided.
	Exact bool `json:"exact_run,omitempty"`
}

// SampleResult is the verdict of one sample.
type SampleResult struct {
	Sample *task.Sample
	Base   PhaseResult
	Plus   *PhaseResult // nil with base-only scoring
}

// phase returns the result of phase p (Plus only where scored).
func (r *SampleResult) phase(p task.Phase) *PhaseResult {
	if p == task.Plus {
		return r.Plus
	}
	return &r.Base
}

// Passed reports whether the sample passed base and, if scored, plus.
func (r *SampleResult) Passed() bool {
	return r.Base.Status == StatusPass && (r.Plus == nil || r.Plus.Status == StatusPass)
}

// ScoreStats describes a scoring pass.
type ScoreStats struct {
	// Jobs is the number of executions that ran: one per program and
	// phase of a task, shared by every sample of the task whose program
	// bytes are equal (Shared counts the verdicts so served beyond the
	// first), and none for a verdict Known beforehand (Reused). The
	// second runs of time-sensitive verdicts are counted apart
	// (Rechecked).
	Jobs        int           `json:"jobs"`
	Shared      int           `json:"shared_executions"`
	Reused      int           `json:"reused_verdicts,omitempty"`
	Wall        time.Duration `json:"wall_ns"`
	PeakMemory  int64         `json:"container_peak_memory_bytes"` // highest peak of one container
	Supervisors int           `json:"supervisors"`
	// Rechecked counts the time-sensitive verdicts run a second time
	// (RecheckRule), RecheckChanged those the re-run decided.
	Rechecked      int `json:"rechecked"`
	RecheckChanged int `json:"recheck_changed"`
	// OverrunDecided counts the timeouts that were not time-sensitive by
	// their overrun (RunLimits.Overrun): the input was still running at
	// that many times its limit, so they ran once.
	OverrunDecided int `json:"overrun_decided"`
	// ExactRuns counts the verdicts decided by a run that released one
	// input at a time (PhaseResult.Exact).
	ExactRuns int `json:"exact_runs"`
	// Retired counts the jobs after which the container was replaced
	// because the job left it other than it was before the first job
	// (unix sockets, memory charge; with --engine evalplus also any job
	// that was its supervisor's last). With --engine evalplus, Outlived
	// counts the samples whose job left processes alive after EvalPlus's
	// driver ended (the sweep killed them).
	Outlived int `json:"outlived_jobs,omitempty"`
	Retired  int `json:"retired_containers,omitempty"`
	// Busy is the slot time the workers spent on jobs, from taking a job
	// to having recorded its verdict (journal included): every run of it,
	// the supervisors started for it, and the re-run of a time-sensitive
	// verdict with the fresh container it needs. Wall × Supervisors − Busy
	// is the slot time without a job: at the end, while the last jobs run.
	Busy time.Duration `json:"busy_ns,omitempty"`
	// JobWall is, of Busy, the wall time of the runs before any re-run as
	// the supervisors measured them, each from its child's start (after
	// the fork) to the job's end, an overrun included.
	JobWall time.Duration `json:"job_wall_ns,omitempty"`
	// Starting is, of Busy, the wall time spent starting supervisors for
	// those runs (a worker's first job, a rotation, a container a job left
	// changed), the re-runs' apart.
	Starting time.Duration `json:"starting_ns,omitempty"`
	// Recheck is, of Busy, the re-runs of time-sensitive verdicts, each
	// with the fresh container it starts in. Busy − JobWall − Starting −
	// Recheck is what the jobs cost beyond their own runs: the child's
	// fork, the checks after each job, the frames between host and
	// supervisor, and the host's turn-around and recording.
	Recheck time.Duration `json:"recheck_ns,omitempty"`
}

// add counts the pass o into s, as one pass of both: its counts and wall
// summed, the supervisors and the peak memory the larger of the two (a
// second pass of a Scorer that keeps its supervisors reuses them).
func (s *ScoreStats) add(o ScoreStats) {
	s.Jobs += o.Jobs
	s.Shared += o.Shared
	s.Reused += o.Reused
	s.Wall += o.Wall
	s.PeakMemory = max(s.PeakMemory, o.PeakMemory)
	s.Supervisors = max(s.Supervisors, o.Supervisors)
	s.Rechecked += o.Rechecked
	s.RecheckChanged += o.RecheckChanged
	s.OverrunDecided += o.OverrunDecided
	s.ExactRuns += o.ExactRuns
	s.Outlived += o.Outlived
	s.Retired += o.Retired
	s.Busy += o.Busy
	s.JobWall += o.JobWall
	s.Starting += o.Starting
	s.Recheck += o.Recheck
}

// freshRecheckContainer: a time-sensitive verdict's re-run gets a
// container no earlier job touched. Only TestStateControlsAreNeeded turns
// it off, to show that the state suite needs it.
var freshRecheckContainer = true

// overrunOn: an input's call that struck its limit runs on to its
// overrun (RunLimits.Overrun). Only TestOverrunKeepsTheVerdict turns it
// off, to compare the verdicts without it.
var overrunOn = true

// Scorer runs samples in the sandbox and judges them against ground truth.
type Scorer struct {
	Launch wire.Launcher
	// LaunchLarge starts supervisors in the large sandbox (wire.LargeLimits),
	// where the phases whose ground truth was computed there run.
	LaunchLarge wire.Launcher
	Dataset     *task.Dataset
	Truth       *Truth
	Limits      RunLimits
	BaseOnly    bool
	Parallel    int
	// Progress, if set, is called after each finished job.
	Progress func(done, total int)
	// Known, if set, gives the verdicts decided before this pass (a
	// resumed run's journal, verdicts reused from earlier runs), by the
	// sample's index in the samples given to Score; those are not run.
	Known func(i int, smp *task.Sample, p task.Phase) (PhaseResult, bool)
	// Decided, if set, is told every verdict this pass decides, of every
	// sample (shared: served by the execution of another sample's equal
	// program), as it is decided; an error stops the pass.
	Decided func(i int, smp *task.Sample, p task.Phase, pr PhaseResult, shared bool) error
	// EngineUp, if set, is asked whether the container engine still
	// answers when a job loses its supervisor: with the engine gone the
	// loss is the run's failure (which a resume continues), not the
	// sample's verdict.
	EngineUp func(ctx context.Context) error
	// Keep keeps the supervisors between calls of Score (until Close), so
	// that a second pass does not wait for new containers. Nothing of a
	// job is left for the next but in the supervisor's memory, which no
	// program can read: the program ran in a child of a clean zygote, that
	// child and all it forked are gone, /tmp is emptied, and a container
	// whose unix sockets or memory a job left changed is replaced. (Kernel
	// counters a job moved, such as the last pid or /tmp's inode numbers,
	// remain: see the invariants table of docs/humaneval.md, its row
	// "Not held".)
	Keep bool

	mu   sync.Mutex
	idle []*wire.Worker
}

// take returns a kept supervisor, or a new worker.
func (s *Scorer) take() *wire.Worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.idle); n > 0 {
		w := s.idle[n-1]
		s.idle = s.idle[:n-1]
		return w
	}
	return wire.NewWorker(s.Launch)
}

// give keeps w if s.Keep is set and the run goes on, or releases it
// (wire.Worker.Release: closed, or discarded once ctx is done); it returns
// the highest container peak memory w has seen so far.
func (s *Scorer) give(ctx context.Context, w *wire.Worker) int64 {
	if !s.Keep || ctx.Err() != nil {
		return w.Release(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = append(s.idle, w)
	return w.Peak()
}

// Release ends the kept supervisors side by side and returns their highest
// peak memory; once ctx is done (the run was stopped) it discards them
// (wire.Worker.Release).
func (s *Scorer) Release(ctx context.Context) int64 {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	// Side by side: each ends a container, and an interrupted run waits
	// for all of them before it exits.
	var (
		peak peakMemory
		wg   sync.WaitGroup
	)
	for _, w := range idle {
		wg.Add(1)
		go func() { defer wg.Done(); peak.note(w.Release(ctx)) }()
	}
	wg.Wait()
	return peak.max()
}

type scoreJob struct {
	smp   *task.Sample
	task  *task.Task
	phase task.Phase
	cost  float64
	// index is smp's index in the samples; also are the other samples of
	// the task with the same program, which this job's verdict serves.
	index int
	also  []int
}

// shareKey names one execution: a task's phase run on a program's bytes,
// known by their SHA-256.
// EvalPlus runs the program as the sample gives it (its solution, or
// prompt + completion) with no normalisation (evalplus@26d6d00,
// evalplus/evaluate.py), so equal bytes are the only sharing.
type shareKey struct {
	task    string
	phase   task.Phase
	program digest.SHA256
}

// Score scores every sample; samples must belong to tasks of s.Dataset
// with ground truth in s.Truth. The results are in the order of samples.
// An error means the run cannot be trusted (a corrupt ground truth, a
// sandbox that cannot start) and no result may be reported.
func (s *Scorer) Score(ctx context.Context, samples []*task.Sample) ([]*SampleResult, ScoreStats, error) {
	results := make([]*SampleResult, len(samples))
	for i, smp := range samples {
		results[i] = &SampleResult{Sample: smp}
		if s.phases() == 2 {
			results[i].Plus = &PhaseResult{}
		}
	}
	st, err := s.score(ctx, samples, func(i int, p task.Phase, pr *PhaseResult, also []int) error {
		*results[i].phase(p) = *pr
		for _, k := range also {
			*results[k].phase(p) = *pr
		}
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	return results, st, nil
}

// ScoreTo scores every sample as Score does, but keeps the results in sp
// (made for samples with s's phases) rather than in memory.
func (s *Scorer) ScoreTo(ctx context.Context, samples []*task.Sample, sp *VerdictSpool) (ScoreStats, error) {
	if sp.Len() != len(samples) || sp.phases != s.phases() {
		return ScoreStats{}, fmt.Errorf("verdict spool: made for %d samples and %d phases, the pass has %d and %d", sp.Len(), sp.phases, len(samples), s.phases())
	}
	return s.score(ctx, samples, sp.put)
}

// phases is the number of phases each sample is scored on.
func (s *Scorer) phases() int {
	if !s.BaseOnly && s.Dataset.HasPlus {
		return 2
	}
	return 1
}

// score runs the pass and gives each verdict to put once: for sample i's
// phase p and the samples also whose equal program it serves.
func (s *Scorer) score(ctx context.Context, samples []*task.Sample, put func(i int, p task.Phase, pr *PhaseResult, also []int) error) (ScoreStats, error) {
	start := time.Now()
	var jobs []*scoreJob
	shared := map[shareKey]*scoreJob{}
	reused := 0
	phases := []task.Phase{task.Base}
	if s.phases() == 2 {
		phases = append(phases, task.Plus)
	}
	for i, smp := range samples {
		tk := s.Dataset.Task(smp.TaskID)
		if tk == nil {
			return ScoreStats{}, fmt.Errorf("sample %s: task %s is not in dataset %s", smp.Origin, smp.TaskID, s.Dataset.ID)
		}
		tt, err := s.Truth.Get(tk)
		if err != nil {
			return ScoreStats{}, err
		}
		for _, p := range phases {
			if s.Known != nil {
				if pr, ok := s.Known(i, smp, p); ok {
					if err := put(i, p, &pr, nil); err != nil {
						return ScoreStats{}, err
					}
					reused++
					continue
				}
			}
			k := shareKey{tk.ID, p, smp.ProgramSum()}
			if j := shared[k]; j != nil {
				j.also = append(j.also, i)
				continue
			}
			j := &scoreJob{smp: smp, task: tk, phase: p, cost: tt.phase(p).seconds(), index: i}
			shared[k] = j
			jobs = append(jobs, j)
		}
	}
	shared = nil
	// Longest first, so that the slowest tasks do not finish last alone.
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].cost > jobs[j].cost })

	var (
		mu   sync.Mutex
		peak peakMemory
		done int
		st   = ScoreStats{Jobs: len(jobs), Reused: reused, Supervisors: workpool.Size(s.Parallel, len(jobs))}
	)
	for _, j := range jobs {
		st.Shared += len(j.also)
	}
	err := workpool.Run(ctx, s.Parallel, jobs, workpool.Worker[*wire.Worker, *scoreJob]{
		Start: s.take,
		Do: func(ctx context.Context, w *wire.Worker, j *scoreJob) error {
			took, started := time.Now(), w.StartWall()
			var ran float64
			var recheck time.Duration
			defer func() {
				mu.Lock()
				st.Busy += time.Since(took)
				st.JobWall += time.Duration(ran * float64(time.Second))
				st.Starting += w.StartWall() - started
				st.Recheck += recheck
				mu.Unlock()
			}()
			retired := w.RetiredCount()
			pr, _, err := s.runPhase(ctx, w, j.smp, j.task, j.phase, &ran)
			if err != nil {
				return err
			}
			rechecked := pr.Near != nil && pr.Limit > 0
			if rechecked {
				from, fromStarted := time.Now(), w.StartWall()
				// A time-sensitive verdict is final only after a second
				// run, as a new job in a container that no job has
				// touched (RecheckRule): whatever the first run left in
				// the container, kernel counters included, the re-run
				// cannot find. (A large phase's container is never kept.)
				if freshRecheckContainer {
					w.End(false)
				}
				again, m, err := s.runPhase(ctx, w, j.smp, j.task, j.phase, nil)
				if err != nil {
					return err
				}
				pr = combineRecheck(pr, again, m)
				recheck = time.Since(from)
				started += w.StartWall() - fromStarted // the re-run's container is the recheck's
			}
			pr.Reason = jsonText(pr.Reason)
			mu.Lock()
			st.Retired += w.RetiredCount() - retired
			if pr.Exact {
				st.ExactRuns++
			}
			if pr.Near == nil && pr.Clocks.OverrunDecided() {
				st.OverrunDecided++
			}
			if rechecked {
				st.Rechecked++
				if pr.Near.DecidedBy == DecidedByRecheck {
					st.RecheckChanged++
				}
			}
			err = put(j.index, j.phase, &pr, j.also)
			done++
			d := done
			mu.Unlock()
			if err != nil {
				return err
			}
			if s.Decided != nil {
				if err := s.Decided(j.index, j.smp, j.phase, pr, false); err != nil {
					return err
				}
				for _, i := range j.also {
					if err := s.Decided(i, samples[i], j.phase, pr, true); err != nil {
						return err
					}
				}
			}
			if s.Progress != nil {
				s.Progress(d, len(jobs))
			}
			return nil
		},
		Stop: func(w *wire.Worker) { peak.note(s.give(ctx, w)) },
	})
	st.Wall, st.PeakMemory = time.Since(start), peak.max()
	return st, err
}

// peakMemory keeps the largest container peak memory that workers report
// as they stop.
type peakMemory struct {
	mu sync.Mutex
	n  int64
}

func (p *peakMemory) note(n int64) {
	p.mu.Lock()
	p.n = max(p.n, n)
	p.mu.Unlock()
}

func (p *peakMemory) max() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// InputLimits returns the per-input time limits of a phase:
// max(MinTimeLimit, TimeFactor × ground-truth time).
func (rl RunLimits) InputLimits(times []float64) []float64 {
	out := make([]float64, len(times))
	for i, t := range times {
		out[i] = math.Max(rl.MinTimeLimit, rl.TimeFactor*t)
	}
	return out
}

// PhaseLimit is EvalPlus's limit of one run over an input list:
// min(TaskTimeout, sum of the input limits) + 1 s.
func (rl RunLimits) PhaseLimit(limits []float64) float64 {
	sum := 0.0
	for _, l := range limits {
		sum += l
	}
	return math.Min(rl.TaskTimeout, sum) + 1
}

// runPhase runs one sample on one input list and judges it. An error is
// returned only for what voids the run (corrupt ground truth, a sandbox
// that does not start); anything the sample does is a verdict.
//
// The measurement is the CPU time of the input (or list) that came nearest
// its limit, or the limit a timeout exceeded, whether or not the verdict
// is time-sensitive. ran, if not nil, gains the supervisors' wall seconds
// of every run made (a setup retried, an inexact run before its exact
// one), for the scorer's account (ScoreStats.JobWall).
func (s *Scorer) runPhase(ctx context.Context, w *wire.Worker, smp *task.Sample, tk *task.Task, p task.Phase, ran *float64) (PhaseResult, NearLimit, error) {
	tt, err := s.Truth.Get(tk)
	if err != nil {
		return PhaseResult{}, NearLimit{}, err
	}
	if tt.Error != "" {
		return PhaseResult{Status: StatusFail, FailInput: -1, Reason: "no ground truth: " + tt.Error}, NearLimit{}, nil
	}
	pt := tt.phase(p)
	inputs := tk.Inputs(p)
	limits := s.Limits.InputLimits(pt.Times)
	phaseLimit := s.Limits.PhaseLimit(limits)
	// Turning an output into plain data is repro's work, not the program's
	// (EvalPlus compares in the process, outside its per-input timer): each
	// input gets TimeFactor times what encoding the canonical output took,
	// on top of its limit, and the list the sum of these.
	expect := make([]float64, len(limits))
	for i, e := range pt.Encode {
		a := s.Limits.TimeFactor * e
		limits[i] += a
		phaseLimit += a
		expect[i] = math.Round((pt.Times[i]+e)*1e6) / 1e6 // to the µs: ~10 bytes of header each
	}
	// Outputs of a correct program are about as large as the expected ones;
	// the caps leave wide room and stop floods early.
	recordCap := max(4*pt.MaxRecord+64, 1<<20)
	prog, err := smp.Program()
	if err != nil {
		return PhaseResult{}, NearLimit{}, err
	}
	j := &wire.Job{
		ID: nextJobID(), EntryPoint: tk.EntryPoint, Program: prog,
		Inputs: inputs, Rebuild: tk.Rules.Inputs, Limits: limits, Expect: expect, FirstExtra: s.Limits.ImportAllowance,
		PhaseLimit: phaseLimit, WallFactor: s.Limits.WallFactor, RecordCap: recordCap,
		ByteCap: 2*pt.Size + int64(len(inputs))*64 + 1<<20, Memory: s.Limits.ChildMemory, FSize: s.Limits.ChildFSize,
	}
	if overrunOn {
		j.Overrun = s.Limits.Overrun()
	}
	run := w.Run
	if pt.Large {
		lw := w.LargeWorker(s.LaunchLarge)
		if lw == nil {
			return PhaseResult{}, NearLimit{}, exitcode.Errorf(exitcode.Precondition, "%s %s inputs need the large sandbox, which this run has not", tk.ID, p)
		}
		j.Memory = largeChildMemory(pt.PeakKB, s.Limits.ChildMemory)
		run = func(ctx context.Context, j *wire.Job, onRecord func(int, wire.Record) bool) (wire.JobEnd, error) {
			return w.RunLarge(ctx, lw, j, onRecord)
		}
	}
	exp, err := s.Truth.open(tk, p)
	if err != nil {
		return PhaseResult{}, NearLimit{}, err
	}
	defer func() { exp.close() }()
	orc := judge.NewOracle(tk.Atol, tk.Rules.Oracle)
	res := PhaseResult{FailInput: -1, Limit: j.PhaseLimit}
	var m NearLimit
	var fatal error
	tally := newCPUTally(j)
	decide := func(k int, r wire.Record) bool {
		if r.Kind != 'M' {
			tally.add(k, r.Gap)
		}
		switch r.Kind {
		case 'M':
			res.Status, res.Reason = StatusFail, "the program failed before the first call: "+task.Clip(string(r.Data))
			return false
		case 'X':
			res.Status, res.FailInput, res.Reason = StatusFail, k, "raised "+task.Clip(string(r.Data))
			return false
		case 'U':
			if !tk.Rules.NotNone {
				res.Status, res.FailInput, res.Reason = StatusFail, k, "output is not plain data: "+task.Clip(string(r.Data))
				return false
			}
		}
		want, err := exp.next()
		if err != nil {
			fatal = err
			return false
		}
		var got judge.Value
		if r.Kind == 'U' {
			// Not None (None always encodes): all the not-None oracle asks.
			got = judge.UnknownObject()
		} else if got, err = judge.ParseValue(r.Data, judge.DefaultBounds); err != nil {
			res.Status, res.FailInput, res.Reason = StatusFail, k, "malformed output: "+err.Error()
			return false
		}
		if got.IsOther() && !tk.Rules.NotNone {
			res.Status, res.FailInput, res.Reason = StatusFail, k, fmt.Sprintf("output of type %s is not plain data", got.Kind())
			return false
		}
		tracePath("judge")
		if ok, why := orc.Check(inputs[k], got, want); !ok {
			res.Status, res.FailInput, res.Reason = StatusFail, k, why
			return false
		}
		return true
	}
	// again starts the job afresh: a new job, judged from its first record.
	again := func() error {
		exp.close()
		var err error
		if exp, err = s.Truth.open(tk, p); err != nil {
			return err
		}
		orc = judge.NewOracle(tk.Atol, tk.Rules.Oracle)
		tally = newCPUTally(j)
		res = PhaseResult{FailInput: -1, Limit: j.PhaseLimit, Exact: res.Exact}
		j.ID = nextJobID()
		return nil
	}
	setups := 0
	for {
		tracePath("job")
		end, err := run(ctx, j, decide)
		if err != nil {
			return PhaseResult{}, NearLimit{}, err
		}
		if ran != nil {
			*ran += end.Elapsed
		}
		if fatal != nil {
			return PhaseResult{}, NearLimit{}, fatal
		}
		res.Records, res.Elapsed = end.Records, end.Elapsed
		run := RunFirst
		if res.Exact {
			run = RunExact
		}
		res.Clocks = clocksOf(run, end, j.PhaseLimit)
		if res.Status != "" {
			m = tally.measure(res, end, j.PhaseLimit)
			break
		}
		switch end.Status {
		case wire.EndDone:
			if end.Records == len(inputs) {
				res.Status = StatusPass
				if tally.over != "" {
					// The supervisor stops a job at its limits; a record
					// over one is never a pass.
					res.Status, res.Reason = StatusTimeout, tally.over
				}
				settlePass(&res)
			} else {
				res.Status, res.Reason = StatusFail, fmt.Sprintf("%d results for %d inputs", end.Records, len(inputs))
			}
		case wire.EndTimeout:
			res.Status, res.Reason = timeoutStatus(end), end.Detail
			res.FailInput = listedInput(res.Status, end.Records)
		case wire.EndSetup:
			// The sandbox failed before the program ran: nothing the sample
			// did. Try once more in a fresh supervisor.
			if setups == 0 {
				setups++
				if err := again(); err != nil {
					return PhaseResult{}, NearLimit{}, err
				}
				continue
			}
			return PhaseResult{}, NearLimit{}, fmt.Errorf("the sandbox could not start %s on %s: %s", smp.Origin, tk.ID, end.Detail)
		case wire.EndInexact:
			// A result within its own limit, but not within the limit of
			// the time since its window was released: the program may
			// have held it back or run ahead. Run the job again, from a
			// fresh process, with one input per window, where each
			// result's charge is exact; that run decides.
			if !j.Exact {
				j.Exact = true
				if err := again(); err != nil {
					return PhaseResult{}, NearLimit{}, err
				}
				res.Exact = true
				continue
			}
			res.Status, res.FailInput, res.Reason = StatusFail, end.Records, "the supervisor found a window open in an exact run: "+end.Detail
		case wire.EndLost:
			if s.EngineUp != nil {
				if err := s.EngineUp(ctx); err != nil {
					return PhaseResult{}, NearLimit{}, exitcode.Errorf(exitcode.Precondition, "%s on %s lost its supervisor (%s): %v", smp.Origin, tk.ID, end.Detail, err)
				}
			}
			if end.Detail == "the supervisor did not finish the job in time" {
				res.Status = StatusTimeout
			} else {
				res.Status = StatusFail
			}
			res.FailInput, res.Reason = listedInput(res.Status, end.Records), end.Detail
		default:
			res.Status, res.FailInput, res.Reason = StatusFail, end.Records, end.Detail
			if tail := strings.TrimSpace(end.Stderr); tail != "" {
				res.Reason += "; stderr: " + task.Clip(tail)
			}
		}
		res.Near = tally.near(res, end, j.PhaseLimit, 1-s.Limits.NearLimitMargin)
		m = tally.measure(res, end, j.PhaseLimit)
		break
	}
	if res.FailInput >= len(inputs) {
		res.FailInput = -1
	}
	if err := exp.finish(); err != nil {
		return PhaseResult{}, NearLimit{}, err
	}
	return res, m, nil
}

// timeoutStatus is EvalPlus's status for a job stopped at a time limit.
// EvalPlus's per-input alarm raises inside the call, which fails the input
// (fast_check then ends the run as "fail"); only its whole-run limit, which
// alone covers a hang while the program loads (exec runs under no alarm),
// gives "timeout". The supervisor names a per-input limit "input N ...".
// Input 0's limit also covers loading the program: it is a fail only when
// the child said the program had run and input 0's call began
// (end.Called). A program can send that mark itself, at load; it then
// turns its own timeout into a fail and never into a pass, so the mark
// needs no trust.
func timeoutStatus(end wire.JobEnd) Status {
	if !strings.HasPrefix(end.Detail, fmt.Sprintf("input %d ", end.Records)) {
		return StatusTimeout
	}
	if end.Records > 0 || end.Called {
		return StatusFail
	}
	return StatusTimeout
}

// listedInput is the input EvalPlus lists as failing for a job that ended
// while input k ran (k results recorded). For a fail it is input k, which
// EvalPlus's per-input alarm or a wrong output fails. For a timeout it is
// the last input that completed, k-1, or none (-1) when none did: EvalPlus
// lists the last input its run got through ("the only and the last fail
// test" of evaluate's get_failed_tests), and a timeout stops the run before
// input k records anything. The reason names the input that was running.
func listedInput(st Status, k int) int {
	if st == StatusTimeout {
		return k - 1
	}
	return k
}

// failTests returns the failing inputs of a phase for the results file.
func failTests(tk *task.Task, p task.Phase, pr *PhaseResult) []json.RawMessage {
	if pr == nil || pr.Status == StatusPass || pr.FailInput < 0 {
		return []json.RawMessage{}
	}
	return []json.RawMessage{tk.Inputs(p)[pr.FailInput]}
}

// jsonText is s as a JSON round trip gives it back: each byte that is not
// part of valid UTF-8 replaced by U+FFFD, as encoding/json writes it. A
// reason holds text the program chose (an exception's message, cut at a
// byte limit); made valid once, where the verdict is decided, it reads the
// same from memory, the spool, the journal and the verdict cache.
func jsonText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	// strings.Map writes U+FFFD for each invalid byte.
	return strings.Map(func(r rune) rune { return r }, s)
}
