package codebench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// EstimatePassAtK is the unbiased pass@k estimator of the Codex paper as
// EvalPlus computes it: 1 - C(n-c, k)/C(n, k), taken as
// 1 - prod_{i=n-c+1}^{n} (1 - k/i), and 1 when n - c < k.
func EstimatePassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1.0
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1.0 - float64(k)/float64(i)
	}
	return 1.0 - prod
}

// PassAtK holds pass@k for k in {1, 10, 100} where every task has at least
// k samples, keyed "pass@k" as EvalPlus writes them.
type PassAtK map[string]float64

// passAtK averages the estimator over tasks; counts[i] = (n, c).
func passAtK(counts [][2]int) PassAtK {
	out := PassAtK{}
	if len(counts) == 0 {
		return out
	}
	minN := counts[0][0]
	for _, nc := range counts {
		minN = min(minN, nc[0])
	}
	for _, k := range []int{1, 10, 100} {
		if minN < k {
			continue
		}
		sum := 0.0
		for _, nc := range counts {
			sum += EstimatePassAtK(nc[0], nc[1], k)
		}
		out["pass@"+strconv.Itoa(k)] = sum / float64(len(counts))
	}
	return out
}

// Summary is the outcome of a scoring run.
type Summary struct {
	Tasks       int     `json:"tasks"`
	Samples     int     `json:"samples"`
	BasePassed  int     `json:"base_passed"`
	PlusPassed  int     `json:"plus_passed,omitempty"` // base and plus passed
	Timeouts    int     `json:"timeouts"`
	BasePassAtK PassAtK `json:"base_pass_at_k"`
	PlusPassAtK PassAtK `json:"plus_pass_at_k,omitempty"`
	PlusScored  bool    `json:"plus_scored"`
	Subset      bool    `json:"subset"` // scored on a subset of the dataset's tasks
}

// Summarize computes counts and pass@k over tasks (in order) from results.
func Summarize(tasks []*task.Task, results []*SampleResult, plus, subset bool) Summary {
	s, _ := SummarizeSource(tasks, ResultSlice(results), plus, subset)
	return s
}

// SummarizeSource is Summarize over results read from src, in one pass
// that keeps three counts a task.
func SummarizeSource(tasks []*task.Task, src ResultSource, plus, subset bool) (Summary, error) {
	type counts struct{ n, base, both int }
	byTask := make(map[string]*counts, len(tasks))
	for _, t := range tasks {
		byTask[t.ID] = &counts{}
	}
	s := Summary{Tasks: len(tasks), Samples: src.Len(), PlusScored: plus, Subset: subset}
	err := src.Each(func(r *SampleResult) error {
		c := byTask[r.Sample.TaskID]
		if c == nil {
			return nil
		}
		c.n++
		if r.Base.Status == StatusPass {
			c.base++
		}
		if r.Passed() {
			c.both++
		}
		if r.Base.Status == StatusTimeout || r.Plus != nil && r.Plus.Status == StatusTimeout {
			s.Timeouts++
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	var base, both [][2]int
	for _, t := range tasks {
		c := byTask[t.ID]
		s.BasePassed += c.base
		base = append(base, [2]int{c.n, c.base})
		if plus {
			s.PlusPassed += c.both
			both = append(both, [2]int{c.n, c.both})
		}
	}
	s.BasePassAtK = passAtK(base)
	if plus {
		s.PlusPassAtK = passAtK(both)
	}
	return s, nil
}

// ResultsFile is the part of an EvalPlus-format eval_results.json that
// readers of a run (reports) need: the dataset hash and the entries of
// each task. WriteResults writes the whole file.
type ResultsFile struct {
	Hash string                   `json:"hash"`
	Eval map[string][]ResultEntry `json:"eval"`
}

// MaxResultsFile bounds a results file: WriteResults leaves none larger,
// and OpenResultsFile reads none larger, so that every results file repro
// writes, each of its readers reads. At n = 100 on HumanEval+ the file
// is about 20 MB.
const MaxResultsFile = 1 << 30

// OpenResultsFile opens the results file at path for ReadResults: a
// regular file, opened without following a link, of at most
// MaxResultsFile bytes (a larger one is an error wrapping
// safefile.ErrTooLarge, found before anything is read), and read no
// further than that if it grows meanwhile.
func OpenResultsFile(path string) (io.ReadCloser, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() > MaxResultsFile {
		err = fmt.Errorf("%q: %w (%d bytes)", path, safefile.ErrTooLarge, int64(MaxResultsFile))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{safefile.AtMost(f, path, MaxResultsFile), f}, nil
}

// ResultsHead is what a results file holds besides its entries.
type ResultsHead struct {
	Hash string
	// Eval reports an "eval" object, with tasks or none; false where the
	// member is missing or null, as in no results file repro writes.
	Eval bool
}

// ReadResults reads a results file from r a sample at a time, never the
// whole file (one of 16,400 samples is 20 MB, most of it programs): task
// is called with every task id in the file's order (one whose list is
// empty or null too), then entry with each of its entries, the same
// values strictjson.DecodeOpen gives into a ResultsFile. It returns the
// file's hash and whether it has an "eval" object. A text it accepts is
// one DecodeOpen accepts into a ResultsFile in which every entry names
// the task it is listed under, as EvalPlus and repro write them
// (TestReadResultsAgreesWithDecodeOpen); an entry listed under another
// task is an error naming both. The caller bounds what r yields.
func ReadResults(r io.Reader, task func(id string) error, entry func(id string, e *ResultEntry) error) (head ResultsHead, err error) {
	s := strictjson.NewStream(bufio.NewReaderSize(r, 1<<16))
	err = s.Object(reflect.TypeFor[ResultsFile](), func(name string) error {
		switch name {
		case "hash":
			return s.Decode(&head.Hash)
		case "eval":
			head.Eval = !s.Null()
			return s.Object(reflect.TypeFor[map[string][]ResultEntry](), func(id string) error {
				if err := task(id); err != nil {
					return err
				}
				k := 0
				return s.Array(reflect.TypeFor[[]ResultEntry](), func() error {
					var e ResultEntry
					if err := s.Decode(&e); err != nil {
						return err
					}
					if e.TaskID != id {
						return fmt.Errorf("entry %d of task %q names task %q", k, id, e.TaskID)
					}
					k++
					return entry(id, &e)
				})
			})
		}
		return s.Ignore()
	})
	if err == nil {
		err = s.End()
	}
	return head, err
}

// ResultEntry is one sample in EvalPlus's results file, plus repro's
// reasons and phase times.
type ResultEntry struct {
	TaskID        string            `json:"task_id"`
	Solution      string            `json:"solution"`
	BaseStatus    Status            `json:"base_status"`
	PlusStatus    *Status           `json:"plus_status"`
	BaseFailTests []json.RawMessage `json:"base_fail_tests"`
	PlusFailTests []json.RawMessage `json:"plus_fail_tests"`
	BaseReason    string            `json:"base_reason,omitempty"`
	PlusReason    string            `json:"plus_reason,omitempty"`
	// The times of the run that decided each phase, each named by its
	// clock (PhaseClocks), where measured.
	BaseClocks *PhaseClocks `json:"base_clocks,omitempty"`
	PlusClocks *PhaseClocks `json:"plus_clocks,omitempty"`
	// Results files written before base_clocks held base_elapsed (the
	// deciding run's wall seconds) and base_limit (the list's CPU limit),
	// and the same for plus: read, never written (see Clocks).
	BaseElapsed float64 `json:"base_elapsed,omitempty"`
	BaseLimit   float64 `json:"base_limit,omitempty"`
	PlusElapsed float64 `json:"plus_elapsed,omitempty"`
	PlusLimit   float64 `json:"plus_limit,omitempty"`
	// A phase whose verdict depends on the time limit, with its CPU
	// seconds against the limit (see NearLimit).
	BaseNearLimit *NearLimit `json:"base_near_limit,omitempty"`
	PlusNearLimit *NearLimit `json:"plus_near_limit,omitempty"`
	// A phase decided by a run that released one input at a time
	// (PhaseResult.Exact).
	BaseExactRun bool `json:"base_exact_run,omitempty"`
	PlusExactRun bool `json:"plus_exact_run,omitempty"`
}

// Clocks returns the times of phase p's deciding run: the entry's
// base_clocks or plus_clocks, or, in a file written before those, the
// figures it held (the wall seconds as Wall, the limit as CPULimit, the
// run unknown); nil where none was recorded.
func (e *ResultEntry) Clocks(p task.Phase) *PhaseClocks {
	c, wall, limit := e.BaseClocks, e.BaseElapsed, e.BaseLimit
	if p == task.Plus {
		c, wall, limit = e.PlusClocks, e.PlusElapsed, e.PlusLimit
	}
	if c != nil || (wall == 0 && limit == 0) {
		return c
	}
	return &PhaseClocks{Wall: wall, CPULimit: limit}
}

// checkClocks refuses an entry that records a pass over its limits.
func (e *ResultEntry) checkClocks() error {
	for _, ph := range []struct {
		name   string
		status *Status
		c      *PhaseClocks
	}{{"base", &e.BaseStatus, e.BaseClocks}, {"plus", e.PlusStatus, e.PlusClocks}} {
		if ph.status != nil && *ph.status == StatusPass {
			if why := ph.c.overLimit(); why != "" {
				return fmt.Errorf("%s: a %s pass over its limit cannot be recorded: %s", e.TaskID, ph.name, why)
			}
		}
	}
	return nil
}

// WriteResults writes an EvalPlus-compatible results file (the format of
// evalplus.evaluate at 26d6d00: date, hash, eval per task in completion
// order, pass_at_k for base and plus) atomically at path. Each entry also
// carries base_reason and plus_reason when the sample did not pass,
// base_clocks and plus_clocks (the deciding run and its times, each named
// by its clock: PhaseClocks) where they were measured, base_near_limit and
// plus_near_limit where the phase's verdict depends on the time limit, and
// base_exact_run and plus_exact_run where a run with one input at a time
// decided it. An entry whose pass is over its limits is refused (an
// error; nothing is written).
//
// The tasks' entries are written in the order of tasks, each task's in the
// order of results. A ResultSlice may hold them in any order; any other
// source is read once, as a stream, and must give each task's samples
// together, tasks in the order of tasks (as a run's samples are).
func WriteResults(path string, d *task.Dataset, tasks []*task.Task, results ResultSource, sum Summary, when time.Time) error {
	order := make(map[string]int, len(tasks))
	for i, t := range tasks {
		order[t.ID] = i
	}
	if rs, ok := results.(ResultSlice); ok {
		rs = slices.Clone(rs)
		slices.SortStableFunc(rs, func(a, b *SampleResult) int {
			return cmp.Compare(order[a.Sample.TaskID], order[b.Sample.TaskID])
		})
		results = rs
	}
	return writeResultsFile(path, d.MD5, sum, when, func(w *entryWriter) error {
		last := -1
		return results.Each(func(r *SampleResult) error {
			k, ok := order[r.Sample.TaskID]
			if !ok {
				return nil
			}
			if k < last {
				return fmt.Errorf("results file: the samples of %s come after those of %s", r.Sample.TaskID, tasks[last].ID)
			}
			last = k
			e, err := resultEntry(tasks[k], r)
			if err != nil {
				return err
			}
			if err := e.checkClocks(); err != nil {
				return exitcode.New(exitcode.Integrity, err)
			}
			return w.add(e)
		})
	})
}

// resultEntry is r's entry in the results file; r belongs to t. Its
// solution is the program read back (Sample.Program).
func resultEntry(t *task.Task, r *SampleResult) (ResultEntry, error) {
	prog, err := r.Sample.Program()
	if err != nil {
		return ResultEntry{}, err
	}
	e := ResultEntry{
		TaskID: t.ID, Solution: string(prog), BaseStatus: r.Base.Status,
		BaseFailTests: failTests(t, task.Base, &r.Base), PlusFailTests: []json.RawMessage{},
		BaseClocks: r.Base.Clocks, BaseNearLimit: r.Base.Near, BaseExactRun: r.Base.Exact,
	}
	if r.Base.Status != StatusPass {
		e.BaseReason = r.Base.Reason
	}
	if r.Plus != nil {
		st := r.Plus.Status
		e.PlusStatus = &st
		e.PlusFailTests = failTests(t, task.Plus, r.Plus)
		e.PlusClocks, e.PlusNearLimit, e.PlusExactRun = r.Plus.Clocks, r.Plus.Near, r.Plus.Exact
		if st != StatusPass {
			e.PlusReason = r.Plus.Reason
		}
	}
	return e, nil
}

// WriteResultEntries writes a results file in WriteResults's format from
// entries already built: eval's entries of each task, tasks in the order
// given (tasks without entries are left out), the date formatted from
// when as given (no time zone conversion), pass_at_k from sum. The file
// is written atomically and must parse back as one JSON document. An
// entry whose pass is over its limits is refused, and nothing written.
func WriteResultEntries(path, hash string, tasks []*task.Task, eval map[string][]ResultEntry, sum Summary, when time.Time) error {
	for _, t := range tasks {
		for i := range eval[t.ID] {
			if err := eval[t.ID][i].checkClocks(); err != nil {
				return exitcode.New(exitcode.Integrity, err)
			}
		}
	}
	return writeResultsFile(path, hash, sum, when, func(w *entryWriter) error {
		for _, t := range tasks {
			for i := range eval[t.ID] {
				if err := w.add(eval[t.ID][i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// entryWriter writes the eval object of a results file entry by entry:
// the entries of a task must come together.
type entryWriter struct {
	bw   *bufio.Writer
	task string // the task whose list is open; "" before the first
}

func (w *entryWriter) json(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.bw.Write(b)
	return err
}

// add writes e, opening its task's list (and closing the one before)
// where e's task differs from the last entry's.
func (w *entryWriter) add(e ResultEntry) error {
	if e.TaskID != w.task {
		if w.task != "" {
			w.bw.WriteString("],")
		}
		w.task = e.TaskID
		if err := w.json(e.TaskID); err != nil {
			return err
		}
		w.bw.WriteString(":[")
	} else {
		w.bw.WriteByte(',')
	}
	return w.json(e)
}

// writeResultsFile writes a results file atomically at path: the date
// formatted from when as given (no time zone conversion), hash, the
// entries fill adds, pass_at_k from sum. An error from fill leaves
// nothing written; the file must parse back as one JSON document.
func writeResultsFile(path, hash string, sum Summary, when time.Time, fill func(*entryWriter) error) error {
	return atomicfile.Write(path, 0o644, func(f io.Writer) error {
		w := &entryWriter{bw: bufio.NewWriterSize(f, 1<<16)}
		fmt.Fprintf(w.bw, "{\"date\":%q,\"hash\":%q,\"eval\":{", when.Format("2006-01-02 15:04"), hash)
		if err := fill(w); err != nil {
			return err
		}
		if w.task != "" {
			w.bw.WriteByte(']')
		}
		w.bw.WriteString("},\"pass_at_k\":")
		pk := map[string]PassAtK{"base": sum.BasePassAtK}
		if sum.PlusScored {
			pk["plus"] = sum.PlusPassAtK
		}
		if err := w.json(pk); err != nil {
			return err
		}
		w.bw.WriteString("}\n")
		return w.bw.Flush()
	}, func(f *os.File) error {
		return readable(f, MaxResultsFile)
	})
}

// readable reports whether the results file f, as written, is one its
// readers take: at most max bytes, one JSON object.
func readable(f *os.File, max int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > max {
		return exitcode.Errorf(exitcode.Usage, "the results file would be %d bytes, more than the %d its readers take: score the samples in shards (repro shard)", fi.Size(), max)
	}
	return oneJSONObject(f)
}

// oneJSONObject reports whether r holds one JSON object and nothing after
// it but white space. It reads r as a stream of tokens, holding one value
// at a time (at most a program and its verdict), never the document: a
// results file of 16,400 samples is 20 MB.
func oneJSONObject(r io.Reader) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not a JSON object: it starts with %v", tok)
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more than one JSON value (%v)", err)
	}
	return nil
}

// TestsOf names the samples of results that passed and failed, for the
// run's Test Result attestation, with the results file (a path in the run
// folder) that holds the details: a task with one sample is named by its
// task id ("HumanEval/0"), the samples of a task with several by task id
// and completion id, their order in the samples file ("HumanEval/0#1").
// It reads results once.
func TestsOf(results ResultSource, resultsFile string) (*runs.Tests, error) {
	type outcome struct {
		task   string
		id     int
		passed bool
	}
	n := map[string]int{}
	all := make([]outcome, 0, results.Len())
	err := results.Each(func(r *SampleResult) error {
		n[r.Sample.TaskID]++
		all = append(all, outcome{r.Sample.TaskID, r.Sample.ID, r.Passed()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := &runs.Tests{Results: resultsFile}
	for _, o := range all {
		name := o.task
		if n[name] > 1 {
			name = fmt.Sprintf("%s#%d", name, o.id)
		}
		if o.passed {
			t.Passed = append(t.Passed, name)
		} else {
			t.Failed = append(t.Failed, name)
		}
	}
	return t, nil
}
