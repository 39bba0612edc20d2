package codebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/journal"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/testenv"
)

// countSampleOpens counts, until the test ends, the opens of each of
// paths through openSample (every read of the user's samples). Opens of
// other paths, by tests running beside this one, are not counted.
func countSampleOpens(t *testing.T, paths ...string) func(path string) int {
	t.Helper()
	var mu sync.Mutex
	n := map[string]int{}
	for _, p := range paths {
		n[p] = 0
	}
	hook := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := n[path]; ok {
			n[path]++
		}
	}
	if !sampleOpened.CompareAndSwap(nil, &hook) {
		t.Fatal("another test counts the samples' opens")
	}
	t.Cleanup(func() { sampleOpened.Store(nil) })
	return func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return n[path]
	}
}

// countValidations counts, until the test ends, the calls of Validate on
// options whose Samples is one of samples.
func countValidations(t *testing.T, samples ...string) func() int {
	t.Helper()
	var mu sync.Mutex
	n := 0
	hook := func(o *Options) {
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(samples, o.Samples) {
			n++
		}
	}
	if !optionsValidated.CompareAndSwap(nil, &hook) {
		t.Fatal("another test counts the validations")
	}
	t.Cleanup(func() { optionsValidated.Store(nil) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// miniTasks returns HumanEval+ Mini and its tasks that sel selects.
func miniTasks(t *testing.T, sel string) (*task.Dataset, []*task.Task) {
	t.Helper()
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	tasks, err := SelectTasks(d, sel)
	if err != nil {
		t.Fatal(err)
	}
	return d, tasks
}

// TestLoadSamplesReadsOnce: a samples file, or each program of a samples
// folder, is read once by LoadSamples and not at all by Prepare, whose
// workspace copy is what was read even if the original changed since;
// Input.Check reads it once more and reports that change.
func TestLoadSamplesReadsOnce(t *testing.T) {
	d, tasks := miniTasks(t, "0-1")
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	orig := []byte(`{"task_id": "HumanEval/0", "solution": "a = 0\n"}` + "\n" + `{"task_id": "HumanEval/1", "solution": "b = 1\n"}` + "\n")
	folder := filepath.Join(dir, "folder")
	progs := map[string]string{filepath.Join(folder, "HumanEval_0", "0.py"): "a = 0\n", filepath.Join(folder, "HumanEval_1", "0.py"): "b = 1\n"}
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, orig)
	var originals []string
	for p, s := range progs {
		write(p, []byte(s))
		originals = append(originals, p)
	}
	opens := countSampleOpens(t, append(originals, file)...)

	for _, c := range []struct {
		name, path string
		files      []string // what is read of the samples
		change     string   // the file changed between LoadSamples and Prepare
	}{
		{"jsonl", file, []string{file}, file},
		{"folder", folder, originals, originals[0]},
	} {
		before := map[string]int{}
		for _, f := range c.files {
			before[f] = opens(f)
		}
		reads := func(when string, want int) {
			t.Helper()
			for _, f := range c.files {
				if got := opens(f) - before[f]; got != want {
					t.Errorf("%s: %s: %q opened %d times, want %d", c.name, when, f, got, want)
				}
			}
		}
		s, err := LoadSamples(c.path, d, tasks, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		reads("after LoadSamples", 1)
		kept, err := os.ReadFile(c.change)
		if err != nil {
			t.Fatal(err)
		}
		write(c.change, []byte("changed = 1\n"))
		in, err := s.Prepare(filepath.Join(t.TempDir(), "workspace"))
		if err != nil {
			t.Fatalf("%s: Prepare: %v", c.name, err)
		}
		reads("after Prepare", 1)
		if c.name == "jsonl" {
			// The file's bytes were let go: a second copy is refused.
			if _, err := s.Prepare(filepath.Join(t.TempDir(), "workspace")); err == nil {
				t.Errorf("a second Prepare of a samples file succeeded: the bytes read are still held")
			}
		}
		if in.Set != s.Set || in.Samples != 2 || in.SHA256 != s.SHA256 || in.Format != c.name {
			t.Errorf("%s: the input %+v is not what was read (%d samples, %s)", c.name, in, s.Set.Count, s.SHA256)
		}
		copied := filepath.Join(in.Workspace, filepath.Base(file))
		if c.name == "folder" {
			copied = filepath.Join(in.Workspace, filepath.Base(filepath.Dir(c.change))+"-0.py")
		}
		if b, err := os.ReadFile(copied); err != nil || string(b) != string(kept) {
			t.Errorf("%s: the workspace holds %q (%v), want the bytes read, %q", c.name, b, err, kept)
		}
		if err := in.Check(); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "changed during the run") {
			t.Errorf("%s: Check after a change: %v, want exit 4", c.name, err)
		}
		reads("after Check", 2)
		write(c.change, kept)
		if err := in.Check(); err != nil {
			t.Errorf("%s: Check once restored: %v", c.name, err)
		}
	}
	if c := opens(file); c != 3 {
		t.Errorf("the file was opened %d times in all, want 3", c)
	}
	if s, err := LoadSamples(file, d, nil, t.TempDir()); exitcode.Of(err) != exitcode.Usage || s != nil ||
		!strings.Contains(err.Error(), "have no sample for 162 tasks: HumanEval/2, ") || !strings.HasSuffix(err.Error(), "(every task needs one, or name a subset with --tasks)") {
		t.Errorf("all tasks: %v, want a usage error naming the 162 tasks without a sample", err)
	}
	if s, err := LoadSamples(file, d, tasks, t.TempDir()); err != nil || s.SHA256 != digest.Of(orig) {
		t.Errorf("the digest of the file is not that of its bytes: %v", err)
	}
}

// TestOversizedProgramNamedOnce: a program of a samples folder over the
// size a program may have is refused before anything is made, naming its
// file once and the limit.
func TestOversizedProgramNamedOnce(t *testing.T) {
	d, tasks := miniTasks(t, "0")
	dir := t.TempDir()
	prog := filepath.Join(dir, "HumanEval_0", "0.py")
	if err := os.Mkdir(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte(strings.Repeat("#", task.MaxProgram+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSamples(dir, d, tasks, t.TempDir())
	want := fmt.Sprintf("sample %q: larger than the %d bytes a program may have", prog, task.MaxProgram)
	if exitcode.Of(err) != exitcode.Usage || err.Error() != want {
		t.Errorf("LoadSamples of a folder with a program of %d bytes: %v, want exit 2 and %q", task.MaxProgram+1, err, want)
	}
}

// TestSamplesFolderLinkSwapRefused: a task folder swapped for a link
// between the folder's listing and the read of its programs (a writer
// racing the run) makes LoadSamples fail naming the program; it never
// reads the program the link leads to.
func TestSamplesFolderLinkSwapRefused(t *testing.T) {
	d, tasks := miniTasks(t, "0-1")
	dir, elsewhere := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(dir, "HumanEval_0", "0.py"), filepath.Join(dir, "HumanEval_1", "0.py"), filepath.Join(elsewhere, "HumanEval_1", "0.py")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(dir, "HumanEval_1", "0.py")
	var swapped error
	hook := func(path string) {
		if path != target || swapped != nil {
			return
		}
		swapped = os.Rename(filepath.Join(dir, "HumanEval_1"), filepath.Join(dir, "aside"))
		if swapped == nil {
			swapped = os.Symlink(filepath.Join(elsewhere, "HumanEval_1"), filepath.Join(dir, "HumanEval_1"))
		}
		if swapped == nil {
			swapped = errors.New("swapped")
		}
	}
	if !sampleOpened.CompareAndSwap(nil, &hook) {
		t.Fatal("another test counts the samples' opens")
	}
	t.Cleanup(func() { sampleOpened.Store(nil) })
	s, err := LoadSamples(dir, d, tasks, t.TempDir())
	if swapped == nil || swapped.Error() != "swapped" {
		t.Fatalf("the folder was not swapped before its program was read: %v", swapped)
	}
	if err == nil {
		t.Fatalf("LoadSamples read %d samples through a task folder swapped for a link; want an error", s.Set.Count)
	}
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), fmt.Sprintf("sample %q", target)) {
		t.Errorf("LoadSamples through a swapped task folder: %v; want exit 2 naming %s", err, target)
	}
}

// TestSamplesFolderBoundedInAll: a samples folder's programs together
// hold no more than a samples file may (64 MiB), each within its own
// bound.
func TestSamplesFolderBoundedInAll(t *testing.T) {
	d, tasks := miniTasks(t, "0")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "HumanEval_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := []byte(strings.Repeat("#", task.MaxProgram))
	for k := range maxSamplesFile/task.MaxProgram + 1 {
		if err := os.WriteFile(filepath.Join(dir, "HumanEval_0", fmt.Sprintf("%d.py", k)), prog, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := LoadSamples(dir, d, tasks, t.TempDir())
	if want := fmt.Sprintf("samples folder %q: its programs are over the limit of %d bytes in all", dir, maxSamplesFile); exitcode.Of(err) != exitcode.Usage || err.Error() != want {
		t.Errorf("LoadSamples of %d programs of %d bytes: %v, want exit 2 and %q", maxSamplesFile/task.MaxProgram+1, task.MaxProgram, err, want)
	}
}

// TestPrepareNamesTheUserFile: a samples file the workspace cannot hold
// under its name is refused naming the file, not its staged copy.
func TestPrepareNamesTheUserFile(t *testing.T) {
	d, tasks := miniTasks(t, "0")
	file := filepath.Join(t.TempDir(), "a:b.jsonl")
	if err := os.WriteFile(file, []byte(`{"task_id": "HumanEval/0", "solution": "a = 0\n"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSamples(file, d, tasks, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Prepare(filepath.Join(t.TempDir(), "workspace"))
	if want := "sample " + file + ": unusable file name"; exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ".staging-") {
		t.Errorf("Prepare of %q: %v, want a usage error with %q", file, err, want)
	}
}

// writeResumable makes a stopped run under home whose journal header
// names samples, for a resume to take its options from.
func writeResumable(t *testing.T, home, samples string) string {
	t.Helper()
	r, err := runs.Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	id := RunIdentity{Dataset: "humanevalplus-mini-v0.1.10", Samples: samples, Engine: EngineRepro, Limits: DefaultRunLimits()}
	w, err := journal.Create(filepath.Join(r.Dir, JournalFile), journalHeader{Type: "header", RunID: r.ID, Identity: id, TaskSpec: "0", DatasetChoice: "humanevalplus-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// TestScoreValidatesOnce: Score and ScoreAt validate the options once,
// also those a resume takes from the run it resumes, before any other
// precondition; ScoreAt does so before it creates the store, and a
// usage error in what a resume was given comes before a difference from
// the run.
func TestScoreValidatesOnce(t *testing.T) {
	ctx := context.Background()
	// No dataset is stored: nothing reads the samples.
	samples := filepath.Join(t.TempDir(), "s.jsonl")
	other := filepath.Join(filepath.Dir(samples), "other.jsonl")
	validations := countValidations(t, samples, other)
	opts := func() Options {
		return Options{Samples: samples, Dataset: "humanevalplus-mini", Parallel: 1, Engine: EngineRepro, Limits: DefaultRunLimits(), Version: "test"}
	}

	// ScoreAt: bad options leave the home as it was.
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	bad := opts()
	bad.Parallel = 0
	n := validations()
	_, err := ScoreAt(ctx, home, bad)
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--parallel 0") || validations()-n != 1 {
		t.Errorf("ScoreAt with --parallel 0: %v, %d validations; want one and a usage error", err, validations()-n)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("ScoreAt refused the options but made %v in the home", ents)
	}
	n = validations()
	if _, err = ScoreAt(ctx, home, opts()); exitcode.Of(err) != exitcode.Precondition || validations()-n != 1 {
		t.Errorf("ScoreAt without the dataset: %v, %d validations; want one and exit 3", err, validations()-n)
	}

	st, err := store.Open(home, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	n = validations()
	if _, err = Score(ctx, st, opts()); exitcode.Of(err) != exitcode.Precondition || validations()-n != 1 {
		t.Errorf("Score without the dataset: %v, %d validations; want one and exit 3", err, validations()-n)
	}

	// A resume: the options are validated once they are taken from the run.
	id := writeResumable(t, home, samples)
	n = validations()
	if _, err = Score(ctx, st, Options{Resume: id, Parallel: 1, Version: "test"}); exitcode.Of(err) != exitcode.Precondition || validations()-n != 1 {
		t.Errorf("a resume: %v, %d validations; want one and exit 3", err, validations()-n)
	}
	for _, c := range []struct {
		parallel int
		code     exitcode.Code
		msg      string
	}{{0, exitcode.Usage, "--parallel 0"}, {1, exitcode.Integrity, "samples differ"}} {
		n = validations()
		o := Options{Resume: id, Samples: other, Parallel: c.parallel, Version: "test"}
		_, err := Score(ctx, st, o)
		if exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.msg) || validations()-n != 1 {
			t.Errorf("a resume given other samples and --parallel %d: %v, %d validations; want one and exit %d with %q", c.parallel, err, validations()-n, c.code, c.msg)
		}
	}
}

// scoreStore returns a store in a new home with the evaluator image pinned
// and HumanEval+ Mini imported, and a samples file of two passing
// samples of its task 53.
func scoreStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	testenv.Heavy(t, "the Docker engine")
	home := t.TempDir()
	sandboxtest.PinInto(t, home)
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Import(context.Background(), "humanevalplus-mini-v0.1.10", filepath.Join(sharedData(t), miniPin.File), nil); err != nil {
		t.Fatal(err)
	}
	samples := filepath.Join(t.TempDir(), "samples.jsonl")
	line := `{"task_id": "HumanEval/53", "solution": "def add(x, y):\n    return x + y\n"}` + "\n"
	if err := os.WriteFile(samples, []byte(line+line), 0o644); err != nil {
		t.Fatal(err)
	}
	return st, samples
}

// scoreTask53 scores samples on task 53 of HumanEval+ Mini.
func scoreTask53(st *store.Store, samples string) (*RunReport, error) {
	return Score(context.Background(), st, Options{Samples: samples, Dataset: "humanevalplus-mini", Tasks: "53", Parallel: 1,
		Engine: EngineRepro, Limits: DefaultRunLimits(), Version: "test"})
}

// TestScoreReadsTheSamplesOnce: a scoring run, from Score to its
// verdicts, opens the samples file twice: once to read it before the run
// and once to hash it again at its end; and validates its options once.
func TestScoreReadsTheSamplesOnce(t *testing.T) {
	st, samples := scoreStore(t)
	opens := countSampleOpens(t, samples)
	validations := countValidations(t, samples)
	rep, err := scoreTask53(st, samples)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	if rep.Summary == nil || rep.Summary.Samples != 2 || rep.Summary.PlusPassed != 2 {
		t.Fatalf("summary %+v, want 2 samples that pass", rep.Summary)
	}
	if n := opens(samples); n != 2 {
		t.Errorf("the samples file was opened %d times, want 2 (read before the run, hashed again at its end)", n)
	}
	if n := validations(); n != 1 {
		t.Errorf("the options were validated %d times, want once", n)
	}
}

// TestScoreVoidsARunWhoseSamplesChanged: a samples file that changes
// before its final re-hash (the second open) voids a run that otherwise
// completed: exit 4, no summary, no results file.
func TestScoreVoidsARunWhoseSamplesChanged(t *testing.T) {
	st, samples := scoreStore(t)
	var mu sync.Mutex
	opens := 0
	hook := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if path != samples {
			return
		}
		if opens++; opens == 2 {
			if err := os.WriteFile(samples, []byte(`{"task_id": "HumanEval/53", "solution": "add = max\n"}`+"\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	if !sampleOpened.CompareAndSwap(nil, &hook) {
		t.Fatal("another test counts the samples' opens")
	}
	t.Cleanup(func() { sampleOpened.Store(nil) })
	rep, err := scoreTask53(st, samples)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "changed during the run") {
		t.Fatalf("score: %v, want exit 4: the samples changed", err)
	}
	if rep == nil || rep.Summary != nil || rep.ResultsFile != "" {
		t.Fatalf("the report of a void run: %+v, want one without a summary or results", rep)
	}
	if _, err := os.Stat(filepath.Join(rep.RunDir, "eval_results.json")); !os.IsNotExist(err) {
		t.Errorf("the void run kept its results file: %v", err)
	}
	// Nor does its signed record keep its scores: no summary in
	// record.json, no passed or failed tests in its statement.
	var rec map[string]json.RawMessage
	if b, err := os.ReadFile(filepath.Join(rep.RunDir, "record.json")); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("the void run's record: %v", err)
	}
	if _, ok := rec["summary"]; ok {
		t.Errorf("the void run's record keeps a summary: %s", rec["summary"])
	}
	var env struct{ Payload []byte }
	if b, err := os.ReadFile(filepath.Join(rep.RunDir, "record.dsse.json")); err != nil || json.Unmarshal(b, &env) != nil || len(env.Payload) == 0 {
		t.Fatalf("the void run's envelope: %v", err)
	}
	if st := string(env.Payload); strings.Contains(st, "passedTests") || strings.Contains(st, "failedTests") || strings.Contains(st, "pass@") {
		t.Errorf("the void run's statement keeps its tests or scores: %s", st)
	}
}

// TestSamplesFileThatGrowsIsNamedOverTheLimit: a samples file that grows
// past the limit between its listing and its reading is refused as a file
// over the limit, whatever the bytes it grew by would parse to (lines too
// long, too many samples).
func TestSamplesFileThatGrowsIsNamedOverTheLimit(t *testing.T) {
	d, tasks := miniTasks(t, "0")
	for _, c := range []struct{ name, unit string }{
		{"one long line", strings.Repeat("x", 1<<16)},
		{"valid lines", strings.Repeat(`{"task_id": "HumanEval/0", "solution": "x"}`+"\n", 1<<10)},
	} {
		file := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(file, []byte(`{"task_id": "HumanEval/0", "solution": "x"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		hook := func(path string) {
			if path != file {
				return
			}
			once.Do(func() {
				f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				for n := 0; n <= maxSamplesFile; n += len(c.unit) {
					if _, err := f.WriteString(c.unit); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		if !sampleOpened.CompareAndSwap(nil, &hook) {
			t.Fatal("another test counts the samples' opens")
		}
		s, err := LoadSamples(file, d, tasks, t.TempDir())
		sampleOpened.Store(nil)
		want := fmt.Sprintf("samples %q: over the limit of %d bytes", file, maxSamplesFile)
		if s != nil || exitcode.Of(err) != exitcode.Usage || err.Error() != want {
			t.Errorf("%s: a file grown past the limit while it is read: %v; want exit 2 and %q", c.name, err, want)
		}
	}
}
