package task

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

// Sample is one program to score for one task.
type Sample struct {
	TaskID string
	ID     int // completion id: order of appearance within the task
	// Solution is the program that runs (a solution, or prompt +
	// completion) of a sample held in memory; it is empty for a sample
	// whose program a ProgramFile keeps. Read a sample's program with
	// Program, and key on it with ProgramSum.
	Solution string
	Origin   string // where it came from, for messages: "file":line or "path", quoted

	kept *keptProgram // where a ProgramFile keeps the program; nil: Solution
}

// MaxProgram is the longest program, in bytes, that a sample may be: a
// longer one is not a plausible HumanEval solution and is refused rather
// than run.
const MaxProgram = 1 << 20

// Limits on samples files.
const (
	maxSampleLine   = 8 << 20
	maxSamplesBytes = 512 << 20
	maxSamples      = 200000
)

// MaxWarnings is how many skipped lines or folder entries a SampleSet
// (or a listing) names one by one; the rest are counted in one more
// warning, so that a file of skipped lines cannot swell what a run keeps
// of them.
const MaxWarnings = 100

// SampleSet is the samples of a run, grouped by task in dataset order.
type SampleSet struct {
	ByTask map[string][]*Sample
	// Warnings names the samples skipped (lines for tasks the dataset
	// does not have), the first MaxWarnings one by one, then how many
	// more; Skipped counts them all.
	Warnings []string
	Skipped  int
	Count    int
	// Programs, if set, keeps the programs of the samples added to the
	// set on disk (ProgramFile); nil keeps them in memory.
	Programs *ProgramFile
}

// warnings keeps the first MaxWarnings of what was skipped and counts
// the rest.
type warnings struct {
	list []string
	n    int
}

func (w *warnings) add(msg string) {
	if w.n++; w.n <= MaxWarnings {
		w.list = append(w.list, msg)
	}
}

// done returns the warnings kept, with one that counts the rest.
func (w *warnings) done(what string) []string {
	if w.n > MaxWarnings {
		return append(w.list, fmt.Sprintf("%d more %s skipped", w.n-MaxWarnings, what))
	}
	return w.list
}

func badSamples(format string, args ...any) error {
	return exitcode.Errorf(exitcode.Usage, format, args...)
}

func (s *SampleSet) add(smp *Sample) error {
	if s.Count >= maxSamples {
		return badSamples("more than %d samples", maxSamples)
	}
	if s.Programs != nil {
		if err := s.Programs.keep(smp); err != nil {
			return err
		}
	}
	smp.ID = len(s.ByTask[smp.TaskID])
	s.ByTask[smp.TaskID] = append(s.ByTask[smp.TaskID], smp)
	s.Count++
	return nil
}

// Missing returns the dataset tasks (among want, or all when want is nil)
// that have no sample.
func (s *SampleSet) Missing(d *Dataset, want []*Task) []string {
	if want == nil {
		want = d.Tasks
	}
	var miss []string
	for _, t := range want {
		if len(s.ByTask[t.ID]) == 0 {
			miss = append(miss, t.ID)
		}
	}
	return miss
}

// jsonSample is one line of a samples file; extra keys are ignored. The
// three are kept raw so that null is told from absent: EvalPlus refuses a
// null solution or completion where encoding/json would drop it.
type jsonSample struct {
	TaskID     json.RawMessage `json:"task_id"`
	Solution   json.RawMessage `json:"solution"`
	Completion json.RawMessage `json:"completion"`
}

// ReadSamplesJSONL parses a samples file in EvalPlus's JSON lines format:
// one object per line with task_id and either solution (a whole program)
// or completion (appended to the task's prompt with no separator);
// solution wins if both are present. The file is read as EvalPlus reads
// it (Python's text mode and json.loads, line by line): lines end at \n,
// \r\n or \r; a line of nothing but Python's white space is skipped;
// members are matched by exact name (strictjson), so a text that Python
// and repro could read differently (a duplicate key, a key that differs
// from task_id, solution or completion only in case) is refused. Samples
// for tasks the dataset does not have are skipped with a warning, as
// EvalPlus does. name is used in messages. Every error is a usage error
// naming the file and line. keep, if not nil, keeps the programs on disk
// (SampleSet.Programs).
func ReadSamplesJSONL(r io.Reader, name string, d *Dataset, keep *ProgramFile) (*SampleSet, error) {
	set := &SampleSet{ByTask: map[string][]*Sample{}, Programs: keep}
	lr := &io.LimitedReader{R: r, N: maxSamplesBytes + 1}
	br := bufio.NewReaderSize(lr, 1<<20)
	lineNo := 0
	var skipped warnings
	for {
		chunk, err := readLine(br, maxSampleLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, badSamples("samples %q:%d: %v", name, lineNo+1, err)
		}
		// A lone \r ends a line too; \r\n ends one line.
		for _, line := range bytes.Split(bytes.TrimSuffix(chunk, []byte("\r")), []byte("\r")) {
			lineNo++
			where := fmt.Sprintf("%q:%d", name, lineNo)
			if !utf8.Valid(line) {
				return nil, badSamples("samples %s: not valid UTF-8", where)
			}
			if pythonBlank(line) {
				continue
			}
			smp, warn, err := parseSampleLine(line, where, d)
			switch {
			case err != nil:
				return nil, err
			case warn != "":
				skipped.add(warn)
			default:
				if err := set.add(smp); err != nil {
					return nil, err
				}
			}
		}
	}
	if lr.N <= 0 {
		return nil, badSamples("samples %q: larger than %d bytes", name, maxSamplesBytes)
	}
	set.Warnings, set.Skipped = skipped.done("lines"), skipped.n
	return set, nil
}

// parseSampleLine reads one line that is not blank: a sample, or a
// warning for a sample of a task d does not have.
func parseSampleLine(line []byte, where string, d *Dataset) (*Sample, string, error) {
	var js jsonSample
	if err := strictjson.DecodeOpen(line, &js); err != nil {
		return nil, "", badSamples("samples %s: not a JSON object as EvalPlus reads it: %v", where, err)
	}
	if js.Solution == nil && js.Completion == nil {
		return nil, "", badSamples("samples %s: neither solution nor completion", where)
	}
	solution, err := sampleString(js.Solution, "solution", where)
	if err != nil {
		return nil, "", err
	}
	completion, err := sampleString(js.Completion, "completion", where)
	if err != nil {
		return nil, "", err
	}
	if js.TaskID == nil {
		return nil, "", badSamples("samples %s: no task_id", where)
	}
	taskID, err := sampleString(js.TaskID, "task_id", where)
	if err != nil {
		return nil, "", err
	}
	t := d.Task(*taskID)
	if t == nil || t.ID != *taskID {
		return nil, fmt.Sprintf("%s: task %q is not in dataset %s; skipped", where, Clip(*taskID), d.ID), nil
	}
	var prog string
	if solution != nil {
		prog = *solution
	} else {
		prog = t.Prompt + *completion
	}
	if len(prog) > MaxProgram {
		return nil, "", badSamples("samples %s: program of %d bytes is over the limit of %d", where, len(prog), MaxProgram)
	}
	return &Sample{TaskID: t.ID, Solution: prog, Origin: where}, "", nil
}

// sampleString reads a member that, when present, must be a JSON string
// (EvalPlus asserts it for solution and completion, and fails on any
// other task_id); nil when absent.
func sampleString(raw json.RawMessage, key, where string) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	var s string
	if raw[0] != '"' || strictjson.Decode(raw, &s) != nil {
		return nil, badSamples("samples %s: %s must be a string, not %s", where, key, Clip(string(raw)))
	}
	return &s, nil
}

// pythonBlank reports whether every character of line is white space to
// Python's str.isspace, which is how EvalPlus skips a line.
func pythonBlank(line []byte) bool {
	for _, r := range string(line) {
		switch {
		case r >= '\t' && r <= '\r', r >= 0x1c && r <= ' ', r == 0x85, r == 0xa0:
		case r > 0xff && unicode.Is(unicode.White_Space, r):
		default:
			return false
		}
	}
	return true
}

// SampleFile is one file of a samples folder.
type SampleFile struct {
	TaskID string
	K      int    // the number in K.py
	Path   string // host path
	Flat   string // a flat file name: HumanEval_N-K.py, Mbpp_N-K.py
}

// maxFolderEntries bounds the entries of one folder of a samples folder
// (its task folders, the programs of one task), whatever they are, so that
// listing one holds no more than this many names. (A variable for the
// tests.)
var maxFolderEntries = maxSamples

// readDir is os.ReadDir of at most maxFolderEntries entries, read in
// batches: a folder with more is an error before more are held.
func readDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ents []os.DirEntry
	for {
		batch, err := f.ReadDir(1024)
		ents = append(ents, batch...)
		if len(ents) > maxFolderEntries {
			return nil, fmt.Errorf("more than %d entries", maxFolderEntries)
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// ListSamplesDir lists a samples folder in EvalPlus's layout,
// DIR/HumanEval_N/K.py (DIR/Mbpp_N/K.py), each file a whole program. Entries that are not
// task folders or .py files are skipped with a warning, as EvalPlus skips
// them; a .py file not named by a number, a link or a special file is an
// error. Files come sorted by task and K.
func ListSamplesDir(dir string, d *Dataset) ([]SampleFile, []string, error) {
	ents, err := readDir(dir)
	if err != nil {
		return nil, nil, badSamples("samples folder %q: %v", dir, err)
	}
	var files []SampleFile
	var warn warnings
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			return nil, nil, badSamples("samples folder: %q is a link; links are not followed", p)
		}
		if !e.IsDir() {
			continue // eval_results.json and the like, as EvalPlus does
		}
		id := strings.Replace(e.Name(), "_", "/", 1)
		t := d.Task(id)
		if t == nil || strings.ReplaceAll(t.ID, "/", "_") != e.Name() {
			warn.add(fmt.Sprintf("%q: not a task of dataset %s; skipped", p, d.ID))
			continue
		}
		sub, err := readDir(p)
		if err != nil {
			return nil, nil, badSamples("samples folder %q: %v", p, err)
		}
		for _, f := range sub {
			fp := filepath.Join(p, f.Name())
			if !strings.HasSuffix(f.Name(), ".py") {
				continue
			}
			if !f.Type().IsRegular() {
				return nil, nil, badSamples("sample %q is not a regular file", fp)
			}
			k, err := strconv.Atoi(strings.TrimSuffix(f.Name(), ".py"))
			if err != nil || k < 0 || strconv.Itoa(k) != strings.TrimSuffix(f.Name(), ".py") {
				return nil, nil, badSamples("sample %q: the file name must be a number followed by .py", fp)
			}
			files = append(files, SampleFile{TaskID: t.ID, K: k, Path: fp, Flat: fmt.Sprintf("%s-%d.py", e.Name(), k)})
			if len(files) > maxSamples {
				return nil, nil, badSamples("samples folder %q: more than %d samples", dir, maxSamples)
			}
		}
	}
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		ia, ib := d.Task(a.TaskID).Index, d.Task(b.TaskID).Index
		if ia != ib {
			return ia < ib
		}
		return a.K < b.K
	})
	return files, warn.done("folder entries"), nil
}

// AddProgram adds b, the program of f as read by the caller, to the set
// and returns its sample. b must be UTF-8; an error is a usage error
// naming f.
func (s *SampleSet) AddProgram(f SampleFile, b []byte) (*Sample, error) {
	if !utf8.Valid(b) {
		return nil, badSamples("sample %q: not valid UTF-8", f.Path)
	}
	smp := &Sample{TaskID: f.TaskID, Solution: string(b), Origin: strconv.Quote(f.Path)}
	if err := s.add(smp); err != nil {
		return nil, err
	}
	return smp, nil
}
