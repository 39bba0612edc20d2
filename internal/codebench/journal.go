package codebench

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/journal"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/workload"
)

// JournalFile is the verdict journal in a run folder: every candidate
// verdict as it was decided, hash-chained and fsynced in batches
// (internal/journal), so that a run stopped at any point can be resumed
// (Options.Resume) without scoring again what it had decided. Its first
// entry is the run's identity (RunIdentity); a resumed run's journal is
// the journal it resumed, byte for byte, then a resume entry, then its own
// verdicts. The record signs it with every other file of the folder.
const JournalFile = runs.JournalFile

// RunIdentity is what a run's verdicts depend on. A run resumes another
// only when the two are equal, field for field.
type RunIdentity struct {
	Dataset       string    `json:"dataset"`
	DatasetSHA256 string    `json:"dataset_sha256"`
	Tasks         []string  `json:"tasks"`
	Samples       string    `json:"samples,omitempty"` // the samples path as given, absolute
	SamplesSHA256 string    `json:"samples_sha256,omitempty"`
	Canonical     bool      `json:"canonical"`
	BaseOnly      bool      `json:"base_only"`
	Engine        string    `json:"engine"`
	Image         string    `json:"image"`
	Runtime       string    `json:"runtime"`
	Harness       string    `json:"harness"`
	Limits        RunLimits `json:"limits"`
	CPUModel      string    `json:"cpu_model"`
	Repro         string    `json:"repro_version"`
	// Build is the SHA-256 of the repro binary that scored (ReproBuild):
	// the judge, the supervisor and everything else repro decides a
	// verdict with. Empty in journals written before it was recorded.
	Build string `json:"repro_build,omitempty"`
}

// differs names the fields in which id and o differ, by their JSON names.
func (id RunIdentity) differs(o RunIdentity) []string {
	var out []string
	a, b := reflect.ValueOf(id), reflect.ValueOf(o)
	for i := 0; i < a.NumField(); i++ {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
	}
	return out
}

// Journal entries, told apart by Type.
type (
	journalHeader struct {
		Type     string      `json:"type"` // "header"
		RunID    string      `json:"run_id"`
		Identity RunIdentity `json:"identity"`
		// The options as given (the dataset's name and the task
		// selection), which a resume without flags takes over.
		DatasetChoice string `json:"dataset_choice"`
		TaskSpec      string `json:"task_spec"`
		// Subject is the label, model and sampling given, for the
		// resumed run's record.
		Subject runlabel.Subject `json:"subject"`
	}
	journalResume struct {
		Type        string    `json:"type"` // "resume"
		RunID       string    `json:"run_id"`
		ResumedFrom string    `json:"resumed_from"`
		At          time.Time `json:"at"`
	}
	journalVerdict struct {
		Type       string      `json:"type"` // "verdict"
		Sample     int         `json:"sample"`
		Task       string      `json:"task"`
		Completion int         `json:"completion_id"`
		Program    string      `json:"program_sha256"`
		Phase      string      `json:"phase"`
		Result     PhaseResult `json:"result"`
		// Shared: decided by the execution of an equal program of
		// another sample; Reused: taken from the journal of that
		// earlier verified run (Options.Cache).
		Shared bool   `json:"shared,omitempty"`
		Reused string `json:"reused_from,omitempty"`
		// Truth is the digest of the task's ground truth the verdict
		// was judged against (Truth.TaskDigest): its expected outputs
		// and the per-input times its limits follow from. A resume and
		// the cache reuse a verdict only under an equal digest. Empty in
		// journals written before it was recorded, which matches none.
		Truth string `json:"ground_truth_sha256,omitempty"`
	}
)

func programDigest(s *task.Sample) string { return s.ProgramSum().Hex() }

func newVerdict(i int, smp *task.Sample, p task.Phase, pr PhaseResult, truth string) journalVerdict {
	return journalVerdict{Type: "verdict", Sample: i, Task: smp.TaskID, Completion: smp.ID, Program: programDigest(smp), Phase: p.String(), Result: pr, Truth: truth}
}

// JournalReport is what a run's journal holds, for the record.
type JournalReport struct {
	File    string `json:"file"`
	Entries int    `json:"entries"`
	Head    string `json:"head_sha256"`
	// ResumedFrom is the run this one resumed; Resumed the verdicts it
	// took from that run's journal.
	ResumedFrom string `json:"resumed_from,omitempty"`
	Resumed     int    `json:"resumed_verdicts,omitempty"`
	// Rescored counts the verdicts of the resumed run's journal that
	// were judged against another ground truth of their task than this
	// run's (it was computed again in between), or journaled without
	// naming theirs, and that this run decided again (none the cache
	// held under this run's ground truth).
	Rescored int `json:"rescored_verdicts,omitempty"`
	// Cache: verdicts of earlier verified runs were reused (--cache);
	// Cached counts them, CacheRuns names the runs looked in.
	Cache     bool     `json:"cache"`
	Cached    int      `json:"cached_verdicts,omitempty"`
	CacheRuns []string `json:"cache_runs,omitempty"`
}

// priorRun is a run's journal as read back: its header and verdicts,
// and the chain they were read from (not its entries: a resume copies
// them from the file, see journal.Continue).
type priorRun struct {
	id       string
	path     string
	chain    *journal.Summary
	header   journalHeader
	verdicts []journalVerdict
}

// readJournal reads and checks the journal of run id under home entry by
// entry, and decodes its entries.
func readJournal(home, id string) (*priorRun, error) {
	r, err := runs.Open(home, id)
	if err != nil {
		return nil, err
	}
	p := &priorRun{id: r.ID, path: filepath.Join(r.Dir, JournalFile)}
	k := 0
	p.chain, err = journal.ScanFile(p.path, func(e journal.Entry) error {
		k++
		return p.decode(k-1, e.Body)
	})
	if os.IsNotExist(err) {
		return nil, exitcode.Errorf(exitcode.Usage, "run %s has no verdict journal to resume (%s)", r.ID, JournalFile)
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s: %v", r.ID, err)
	}
	// A run still writing its journal is not stopped: resuming it would
	// score its samples twice, side by side.
	if held, err := journal.Held(p.path); err != nil || held {
		if err == nil {
			err = fmt.Errorf("run %s is still running in another repro process (it holds its %s); stop it, or wait for it, before resuming it", r.ID, JournalFile)
		}
		return nil, exitcode.Errorf(exitcode.Precondition, "%v", err)
	}
	if p.chain.Entries == 0 {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s: %s holds no header", r.ID, JournalFile)
	}
	return p, nil
}

// decode takes entry k of the journal: the header first, then verdicts
// and the resumes that continued it.
func (p *priorRun) decode(k int, body []byte) error {
	var t struct {
		Type string `json:"type"`
	}
	err := strictjson.DecodeOpen(body, &t)
	switch {
	case err != nil:
	case k == 0 && t.Type == "header":
		err = strictjson.Decode(body, &p.header)
	case k > 0 && t.Type == "resume":
		var rs journalResume
		err = strictjson.Decode(body, &rs)
	case k > 0 && t.Type == "verdict":
		var v journalVerdict
		if err = strictjson.Decode(body, &v); err == nil {
			p.verdicts = append(p.verdicts, v)
		}
	default:
		err = fmt.Errorf("unexpected entry type %q", t.Type)
	}
	if err != nil {
		return fmt.Errorf("entry %d: %v", k, err)
	}
	return nil
}

// openPrior finds the run a new run resumes: the run o.Resume names, or
// with o.ResumeLatest the latest unfinished run under home whose
// journal was made for the same samples and tasks (nil when there is
// none). A run that completed is not resumed.
func openPrior(home string, o *Options) (*priorRun, error) {
	if o.Resume != "" {
		p, err := readJournal(home, o.Resume)
		if err != nil {
			return nil, err
		}
		if r, _ := runs.Open(home, p.id); r != nil {
			if rec, _, err := r.ReadRecord(); err == nil && rec.ExitCode == 0 {
				return nil, exitcode.Errorf(exitcode.Usage, "run %s completed; there is nothing to resume", p.id)
			}
		}
		return p, nil
	}
	if !o.ResumeLatest {
		return nil, nil
	}
	abs, err := filepath.Abs(o.Samples)
	if err != nil {
		return nil, err
	}
	ids, err := runs.List(home)
	if err != nil {
		return nil, err
	}
	for k := len(ids) - 1; k >= 0; k-- {
		id := ids[k]
		if !strings.HasPrefix(id, "humaneval-") {
			continue
		}
		r, err := runs.Open(home, id)
		if err != nil {
			continue
		}
		if rec, _, err := r.ReadRecord(); err == nil && rec.ExitCode == 0 {
			continue
		}
		// No journal (Held's error) or one still held by a running repro:
		// not a stopped run.
		if held, err := journal.Held(filepath.Join(r.Dir, JournalFile)); err != nil || held {
			continue
		}
		p, err := readJournal(home, id)
		if err != nil {
			return nil, err
		}
		if p.header.Identity.Samples == abs && p.header.TaskSpec == o.Tasks && p.header.DatasetChoice == o.Dataset {
			return p, nil
		}
	}
	return nil, nil
}

// adopt fills the options a resume was not given from the journal's
// header, and refuses those given that differ (exit 4, naming them). When
// it refuses, it changes nothing in o, so that o can still be validated
// as it was given.
func (p *priorRun) adopt(o *Options) error {
	h := p.header
	if h.Identity.Limits.NearLimitMargin == 0 {
		return exitcode.Errorf(exitcode.Integrity, "cannot resume run %s: it was scored before time-sensitive verdicts were run twice (its limits have no near_limit_margin); score its samples again", p.id)
	}
	var differ []string
	var apply []func()
	take := func(name string, set bool, same bool, fill func()) {
		if !set {
			apply = append(apply, fill)
		} else if !same {
			differ = append(differ, name)
		}
	}
	take("dataset", o.Dataset != "", o.Dataset == h.DatasetChoice, func() { o.Dataset = h.DatasetChoice })
	take("tasks", o.Tasks != "", o.Tasks == h.TaskSpec, func() { o.Tasks = h.TaskSpec })
	take("samples", o.Samples != "", absPath(o.Samples) == h.Identity.Samples, func() { o.Samples = h.Identity.Samples })
	take("canonical", o.Canonical, h.Identity.Canonical, func() { o.Canonical = h.Identity.Canonical })
	take("base_only", o.BaseOnly, h.Identity.BaseOnly, func() { o.BaseOnly = h.Identity.BaseOnly })
	take("engine", o.Engine != "", o.Engine == h.Identity.Engine, func() { o.Engine = h.Identity.Engine })
	take("limits", o.Limits != RunLimits{}, o.Limits == h.Identity.Limits, func() { o.Limits = h.Identity.Limits })
	if len(differ) > 0 {
		return exitcode.Errorf(exitcode.Integrity, "cannot resume run %s: %s differ from the run's", p.id, strings.Join(differ, ", "))
	}
	for _, fill := range apply {
		fill()
	}
	if o.Subject.Label == "" && o.Subject.Model == "" && o.Subject.Sampling == nil {
		o.Subject = h.Subject
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// known maps the verdicts of a prior run to the samples of this one,
// checking that each names the same task, completion and program (exit 4
// otherwise). A later verdict of a sample and phase (decided again after
// a resume) takes the place of an earlier one.
func (p *priorRun) known(samples []*task.Sample) (map[[2]int]journalVerdict, error) {
	out := map[[2]int]journalVerdict{}
	for _, v := range p.verdicts {
		ph := task.Base
		if v.Phase == "plus" {
			ph = task.Plus
		} else if v.Phase != "base" {
			return nil, exitcode.Errorf(exitcode.Integrity, "run %s: %s names phase %q", p.id, JournalFile, v.Phase)
		}
		if v.Sample < 0 || v.Sample >= len(samples) {
			return nil, exitcode.Errorf(exitcode.Integrity, "run %s: %s names sample %d of %d", p.id, JournalFile, v.Sample, len(samples))
		}
		s := samples[v.Sample]
		if s.TaskID != v.Task || s.ID != v.Completion || programDigest(s) != v.Program {
			return nil, exitcode.Errorf(exitcode.Integrity, "run %s: %s: sample %d is %s#%d with another program in this run", p.id, JournalFile, v.Sample, v.Task, v.Completion)
		}
		out[[2]int{v.Sample, int(ph)}] = v
	}
	return out, nil
}

// journalRun is the journal of a run in progress and the verdicts it
// starts from.
type journalRun struct {
	w      *journal.Writer
	report JournalReport
	prior  map[[2]int]journalVerdict
	cache  map[cacheKey]cached
	truth  func(taskID string) string // see truthDigests
	mu     sync.Mutex
	err    error // the first failed write; it voids the run
}

// openJournalRun creates the run's journal: a new one with id as its
// header, or, resuming prior, prior's journal continued (after checking
// that id is prior's identity, exit 4 naming what differs). With
// o.Cache it gathers the reusable verdicts of earlier runs. Verdicts are
// journaled, and reused, with the digest of their task's ground truth in
// truth (truthDigests), which the run's ground-truth stage must have
// covered before the first verdict.
func openJournalRun(home string, run *workload.Run, o Options, id RunIdentity, prior *priorRun, samples []*task.Sample, d *task.Dataset, truth *Truth) (*journalRun, error) {
	path := filepath.Join(run.Dir, JournalFile)
	jr := &journalRun{report: JournalReport{File: JournalFile, Cache: o.Cache}, truth: truthDigests(d, truth)}
	// The binary that scores is part of the identity: a resume, and the
	// verdict cache, never mix the verdicts of two builds.
	if err := stampBuild(&id); err != nil {
		return nil, err
	}
	var err error
	if prior != nil {
		if d := prior.header.Identity.differs(id); len(d) > 0 {
			return nil, exitcode.Errorf(exitcode.Integrity, "cannot resume run %s: its %s differ from this run's", prior.id, strings.Join(d, ", "))
		}
		if jr.prior, err = prior.known(samples); err != nil {
			return nil, err
		}
		jr.report.ResumedFrom = prior.id
		jr.w, err = journal.Continue(path, prior.path, prior.chain, journalResume{Type: "resume", RunID: run.ID, ResumedFrom: prior.id, At: time.Now().UTC()})
	} else {
		jr.w, err = journal.Create(path, journalHeader{Type: "header", RunID: run.ID, Identity: id, DatasetChoice: o.Dataset, TaskSpec: o.Tasks, Subject: o.Subject})
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write the verdict journal: %w", err)
	}
	if o.Cache {
		if jr.cache, jr.report.CacheRuns, err = verdictCache(home, id, run.ID); err != nil {
			jr.w.Close()
			return nil, err
		}
	}
	return jr, nil
}

// truthDigests returns the digest of a task's ground truth in truth as
// its hex (Truth.TaskDigest), each computed once; "" where truth has none
// for the task, which no journaled verdict matches.
func truthDigests(d *task.Dataset, truth *Truth) func(taskID string) string {
	var mu sync.Mutex
	memo := map[string]string{}
	return func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		if h, ok := memo[id]; ok {
			return h
		}
		h := ""
		if tk := d.Task(id); tk != nil {
			if sum, err := truth.TaskDigest(tk); err == nil {
				h = sum.Hex()
			}
		}
		memo[id] = h
		return h
	}
}

// known is the Scorer's Known: a verdict of the resumed run, or one the
// cache holds (which is journaled as this run's, naming its run), in
// either case only one judged against the ground truth this run judges
// the task by. A resumed verdict judged against another, or naming none,
// is counted (Rescored) where the cache does not serve it, and decided
// again.
func (jr *journalRun) known(i int, smp *task.Sample, p task.Phase) (PhaseResult, bool) {
	truth := jr.truth(smp.TaskID)
	jr.mu.Lock()
	defer jr.mu.Unlock()
	pv, stale := jr.prior[[2]int{i, int(p)}]
	if stale && truth != "" && pv.Truth == truth {
		jr.report.Resumed++
		return pv.Result, true
	}
	c, ok := jr.cache[cacheKey{smp.TaskID, programDigest(smp), p.String(), truth}]
	if !ok || truth == "" {
		if stale {
			jr.report.Rescored++
		}
		return PhaseResult{}, false
	}
	v := newVerdict(i, smp, p, c.res, truth)
	v.Reused = c.from
	if err := jr.w.Add(v); err != nil && jr.err == nil {
		jr.err = err
	}
	jr.report.Cached++
	return c.res, true
}

// decided is the Scorer's Decided: it journals the verdict.
func (jr *journalRun) decided(i int, smp *task.Sample, p task.Phase, pr PhaseResult, shared bool) error {
	v := newVerdict(i, smp, p, pr, jr.truth(smp.TaskID))
	v.Shared = shared
	if err := jr.w.Add(v); err != nil {
		return fmt.Errorf("cannot write the verdict journal: %w", err)
	}
	return nil
}

// failed is the first journal write that failed in known.
func (jr *journalRun) failed() error {
	jr.mu.Lock()
	defer jr.mu.Unlock()
	if jr.err != nil {
		return fmt.Errorf("cannot write the verdict journal: %w", jr.err)
	}
	return nil
}

// close syncs and closes the journal and notes its head for the record.
func (jr *journalRun) close() error {
	err := jr.w.Close()
	jr.report.Head, jr.report.Entries = jr.w.Head()
	return err
}
