package humaneval

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
	"unicode/utf8"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// Sample is one program to score for one task.
type Sample struct {
	TaskID   string
	ID       int    // completion id: order of appearance within the task
	Solution string // the program that runs: a solution, or prompt + completion
	Origin   string // where it came from, for messages: "file":line or "path", quoted
}

// Limits on samples. A program longer than maxProgram is not a plausible
// HumanEval solution and is refused rather than run.
const (
	maxProgram      = 1 << 20
	maxSampleLine   = 8 << 20
	maxSamplesBytes = 512 << 20
	maxSamples      = 200000
)

// SampleSet is the samples of a run, grouped by task in dataset order.
type SampleSet struct {
	ByTask   map[string][]*Sample
	Warnings []string // samples skipped: unknown tasks, files that are not samples
	Count    int
}

func badSamples(format string, args ...any) error {
	return exitcode.Errorf(exitcode.Usage, format, args...)
}

func (s *SampleSet) add(smp *Sample) error {
	if s.Count >= maxSamples {
		return badSamples("more than %d samples", maxSamples)
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

// jsonSample is one line of a samples file; extra keys are ignored.
type jsonSample struct {
	TaskID     *string `json:"task_id"`
	Solution   *string `json:"solution"`
	Completion *string `json:"completion"`
}

// ReadSamplesJSONL parses a samples file in EvalPlus's JSON lines format:
// one object per line with task_id and either solution (a whole program)
// or completion (appended to the task's prompt with no separator);
// solution wins if both are present. Blank lines are skipped. Samples for
// tasks the dataset does not have are skipped with a warning, as EvalPlus
// does. name is used in messages. Every error is a usage error naming the
// file and line.
func ReadSamplesJSONL(r io.Reader, name string, d *Dataset) (*SampleSet, error) {
	set := &SampleSet{ByTask: map[string][]*Sample{}}
	lr := &io.LimitedReader{R: r, N: maxSamplesBytes + 1}
	br := bufio.NewReaderSize(lr, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br, maxSampleLine)
		if err == io.EOF {
			break
		}
		where := fmt.Sprintf("%q:%d", name, lineNo)
		if err != nil {
			return nil, badSamples("samples %s: %v", where, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			return nil, badSamples("samples %s: not valid UTF-8", where)
		}
		if err := checkSurrogates(line); err != nil {
			return nil, badSamples("samples %s: %v", where, err)
		}
		var js jsonSample
		if err := json.Unmarshal(line, &js); err != nil {
			return nil, badSamples("samples %s: not a JSON object: %v", where, err)
		}
		if js.TaskID == nil {
			return nil, badSamples("samples %s: no task_id", where)
		}
		if js.Solution == nil && js.Completion == nil {
			return nil, badSamples("samples %s: neither solution nor completion", where)
		}
		t := d.Task(*js.TaskID)
		if t == nil || t.ID != *js.TaskID {
			set.Warnings = append(set.Warnings, fmt.Sprintf("%s: task %q is not in dataset %s; skipped", where, clipString(*js.TaskID), d.ID))
			continue
		}
		var prog string
		if js.Solution != nil {
			prog = *js.Solution
		} else {
			prog = t.Prompt + *js.Completion
		}
		if len(prog) > maxProgram {
			return nil, badSamples("samples %s: program of %d bytes is over the limit of %d", where, len(prog), maxProgram)
		}
		if err := set.add(&Sample{TaskID: t.ID, Solution: prog, Origin: where}); err != nil {
			return nil, err
		}
	}
	if lr.N <= 0 {
		return nil, badSamples("samples %q: larger than %d bytes", name, maxSamplesBytes)
	}
	return set, nil
}

// checkSurrogates refuses \u escapes that name a lone UTF-16 surrogate:
// Python would keep them in the program, Go's decoder would silently
// replace them, and the program that runs must be the one in the file.
func checkSurrogates(line []byte) error {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[:4]), 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(line); i++ {
		if line[i] != '\\' || i+1 >= len(line) {
			continue
		}
		if line[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(line[i+2:])
		if !ok {
			continue // json.Unmarshal reports it
		}
		switch {
		case 0xd800 <= r && r < 0xdc00:
			if i+8 <= len(line) && line[i+6] == '\\' && line[i+7] == 'u' {
				if r2, ok := hex4(line[i+8:]); ok && 0xdc00 <= r2 && r2 < 0xe000 {
					i += 11
					continue
				}
			}
			return fmt.Errorf("lone UTF-16 surrogate \\u%04x in a string", r)
		case 0xdc00 <= r && r < 0xe000:
			return fmt.Errorf("lone UTF-16 surrogate \\u%04x in a string", r)
		}
		i += 5
	}
	return nil
}

// SampleFile is one file of a samples folder.
type SampleFile struct {
	TaskID string
	K      int    // the number in K.py
	Path   string // host path
	Flat   string // a flat file name: HumanEval_N-K.py, Mbpp_N-K.py
}

// ListSamplesDir lists a samples folder in EvalPlus's layout,
// DIR/HumanEval_N/K.py (DIR/Mbpp_N/K.py), each file a whole program. Entries that are not
// task folders or .py files are skipped with a warning, as EvalPlus skips
// them; a .py file not named by a number, a link or a special file is an
// error. Files come sorted by task and K.
func ListSamplesDir(dir string, d *Dataset) ([]SampleFile, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, badSamples("samples folder %q: %v", dir, err)
	}
	var files []SampleFile
	var warn []string
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
			warn = append(warn, fmt.Sprintf("%q: not a task of dataset %s; skipped", p, d.ID))
			continue
		}
		sub, err := os.ReadDir(p)
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
	return files, warn, nil
}

// ReadSampleFile reads one program of a samples folder (from its
// workspace copy) into set.
func ReadSampleFile(set *SampleSet, f SampleFile, path string) error {
	b, err := safefile.ReadFile(path, maxProgram)
	if err != nil {
		return badSamples("sample %q: %v", f.Path, err)
	}
	if !utf8.Valid(b) {
		return badSamples("sample %q: not valid UTF-8", f.Path)
	}
	return set.add(&Sample{TaskID: f.TaskID, Solution: string(b), Origin: strconv.Quote(f.Path)})
}
