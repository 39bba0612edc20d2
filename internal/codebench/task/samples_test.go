package task_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/exitcode"
)

func TestReadSamplesJSONL(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	text := strings.Join([]string{
		`{"task_id": "HumanEval/0", "solution": "def has_close_elements(n, t):\n    return False\n"}`,
		`{"task_id": "HumanEval/0", "completion": "    return True\n", "extra": 1}`,
		``,
		`   `,
		`{"task_id": "HumanEval/1", "solution": "S", "completion": "C"}`,
		`{"task_id": "HumanEval/999", "solution": "x"}`,
		`{"task_id": "MBPP/1", "solution": "x"}`,
	}, "\n")
	set, err := task.ReadSamplesJSONL(strings.NewReader(text), "s.jsonl", d, nil)
	if err != nil {
		t.Fatal(err)
	}
	s0 := set.ByTask["HumanEval/0"]
	if len(s0) != 2 || s0[0].ID != 0 || s0[1].ID != 1 {
		t.Fatalf("HumanEval/0 samples: %+v", s0)
	}
	if s0[1].Solution != d.Task("HumanEval/0").Prompt+"    return True\n" {
		t.Error("completion is not appended to the prompt without a separator")
	}
	if s0[1].Origin != `"s.jsonl":2` {
		t.Errorf("origin %q", s0[1].Origin)
	}
	if got := set.ByTask["HumanEval/1"][0].Solution; got != "S" {
		t.Errorf("solution must win over completion, got %q", got)
	}
	if len(set.Warnings) != 2 || !strings.Contains(set.Warnings[0], `"s.jsonl":6`) {
		t.Errorf("warnings %q", set.Warnings)
	}
	if set.Count != 3 {
		t.Errorf("count %d", set.Count)
	}
	miss := set.Missing(d, nil)
	if len(miss) != 162 || miss[0] != "HumanEval/2" {
		t.Errorf("missing: %d, first %v", len(miss), miss[:1])
	}
}

func TestReadSamplesJSONLErrors(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	ok := `{"task_id": "HumanEval/0", "solution": "x"}` + "\n"
	for name, c := range map[string]struct{ text, want string }{
		"not json":         {ok + "{task_id\n", `"f.jsonl":2: not a JSON object`},
		"no task id":       {`{"solution": "x"}`, `"f.jsonl":1: no task_id`},
		"no program":       {`{"task_id": "HumanEval/0"}`, "neither solution nor completion"},
		"solution type":    {`{"task_id": "HumanEval/0", "solution": 3}`, `"f.jsonl":1: solution must be a string, not 3`},
		"not utf-8":        {ok + "{\"task_id\": \"HumanEval/0\", \"solution\": \"\xff\"}", `"f.jsonl":2: not valid UTF-8`},
		"lone surrogate":   {`{"task_id": "HumanEval/0", "solution": "a\ud800b"}`, "surrogate"},
		"low surrogate":    {`{"task_id": "HumanEval/0", "solution": "\udc00"}`, "surrogate"},
		"oversized":        {`{"task_id": "HumanEval/0", "solution": "` + strings.Repeat("x", task.MaxProgram+1) + `"}`, "over the limit"},
		"array not obj":    {`[1, 2]`, "not a JSON object"},
		"overlong line":    {strings.Repeat(" ", task.MaxSampleLine+2), "longer than"},
		"trailing garbage": {`{"task_id": "HumanEval/0", "solution": "x"} x`, "not a JSON object"},
	} {
		_, err := task.ReadSamplesJSONL(strings.NewReader(c.text), "f.jsonl", d, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: exit code %v, want usage", name, exitcode.Of(err))
		}
	}
	// A valid surrogate pair and an escaped backslash before "ud800" are fine.
	for _, line := range []string{
		`{"task_id": "HumanEval/0", "solution": "\ud83d\ude00"}`,
		`{"task_id": "HumanEval/0", "solution": "\\ud800"}`,
	} {
		set, err := task.ReadSamplesJSONL(strings.NewReader(line), "f.jsonl", d, nil)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if s := set.ByTask["HumanEval/0"][0].Solution; s != "😀" && s != `\ud800` {
			t.Errorf("%s decoded to %q", line, s)
		}
	}
}

// addFile reads the program of a listed sample file into set.
func addFile(set *task.SampleSet, f task.SampleFile) error {
	b, err := os.ReadFile(f.Path)
	if err == nil {
		_, err = set.AddProgram(f, b)
	}
	return err
}

func TestSamplesDir(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("HumanEval_0/10.py", "ten")
	write("HumanEval_0/2.py", "two")
	write("HumanEval_0/notes.txt", "ignored")
	write("HumanEval_1/0.py", "one")
	write("eval_results.json", "{}")
	write("HumanEval_999/0.py", "unknown task")
	files, warn, err := task.ListSamplesDir(root, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[0].K != 2 || files[1].K != 10 || files[2].TaskID != "HumanEval/1" || files[1].Flat != "HumanEval_0-10.py" {
		t.Fatalf("files %+v", files)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "HumanEval_999") {
		t.Errorf("warnings %q", warn)
	}
	set := &task.SampleSet{ByTask: map[string][]*task.Sample{}}
	for _, f := range files {
		if err := addFile(set, f); err != nil {
			t.Fatal(err)
		}
	}
	if s := set.ByTask["HumanEval/0"]; s[0].Solution != "two" || s[1].Solution != "ten" || s[1].ID != 1 {
		t.Errorf("completion ids follow K: %+v", s)
	}

	write("HumanEval_2/x.py", "bad name")
	if _, _, err := task.ListSamplesDir(root, d); err == nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a .py file not named by a number: %v", err)
	}
	os.Remove(filepath.Join(root, "HumanEval_2/x.py"))
	os.Symlink("/etc/passwd", filepath.Join(root, "HumanEval_2", "0.py"))
	if _, _, err := task.ListSamplesDir(root, d); err == nil {
		t.Error("a link was accepted as a sample")
	}
	os.Remove(filepath.Join(root, "HumanEval_2", "0.py"))
	write("HumanEval_3/0.py", "\xff\xfe")
	files, _, _ = task.ListSamplesDir(root, d)
	for _, f := range files {
		if f.TaskID == "HumanEval/3" {
			if err := addFile(set, f); err == nil || !strings.Contains(err.Error(), "UTF-8") {
				t.Errorf("non-UTF-8 sample: %v", err)
			}
		}
	}
}

// FuzzReadSamplesJSONL gives repro's reader and EvalPlus's the same
// bytes: whatever repro accepts, EvalPlus reads as the same programs of
// the same tasks. Its seed corpus (testdata/fuzz) runs in every test run.
func FuzzReadSamplesJSONL(f *testing.F) {
	d := fuzzDataset()
	for _, s := range []string{
		`{"task_id": "HumanEval/0", "solution": "x"}`,
		`{"task_id": "HumanEval/0", "completion": "\ud83d\ude00\n"}` + "\n\n" + `{"task_id": "HumanEval/7", "solution": ""}`,
		`{"task_id": "HumanEval/0", "solution": "\\\ud800"}`,
		"{\"task_id\": \"HumanEval/0\"\n",
		`{"task_id": "HumanEval/1", "completion": "A", "Completion": "B"}`,
		"{\"task_id\": \"HumanEval/0\", \"solution\": \"A\"}\r{\"task_id\": \"HumanEval/1\",\r\"solution\": \"B\"}\r\n",
	} {
		f.Add([]byte(s))
	}
	ep := startEvalPlusReader(f, d)
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := task.ReadSamplesJSONL(strings.NewReader(string(b)), "fuzz.jsonl", d, nil)
		if err != nil {
			if exitcode.Of(err) != exitcode.Usage {
				t.Fatalf("error without the usage code: %v", err)
			}
			return
		}
		if diff := sameAsEvalPlus(set, ep.read(t, b)); diff != "" {
			t.Fatalf("repro reads %q otherwise than EvalPlus: %s", b, diff)
		}
		// Programs kept on disk read back as the same programs.
		pf, err := task.NewProgramFile(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		kept, err := task.ReadSamplesJSONL(strings.NewReader(string(b)), "fuzz.jsonl", d, pf)
		if err != nil {
			t.Fatalf("with a program file: %v; in memory it read", err)
		}
		if diff := sameKept(set, kept); diff != "" {
			t.Fatalf("%q kept on disk: %s", b, diff)
		}
	})
}

// TestSkippedAreCountedNotListed: a file of lines for tasks the dataset
// does not have, or a folder of entries that are not tasks, names the
// first task.MaxWarnings one by one and counts the rest in one more
// warning, so that what a run keeps of them does not grow with them.
func TestSkippedAreCountedNotListed(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-mini-v0.1.10")
	const n = task.MaxWarnings + 250
	var b strings.Builder
	b.WriteString(`{"task_id": "HumanEval/0", "solution": "x"}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"task_id": "HumanEval/%d", "solution": "x"}`+"\n", 100000+i)
	}
	set, err := task.ReadSamplesJSONL(strings.NewReader(b.String()), "s.jsonl", d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set.Skipped != n || set.Count != 1 || len(set.Warnings) != task.MaxWarnings+1 {
		t.Fatalf("%d skipped, %d samples, %d warnings; want %d, 1, %d", set.Skipped, set.Count, len(set.Warnings), n, task.MaxWarnings+1)
	}
	if last := set.Warnings[task.MaxWarnings]; last != "250 more lines skipped" || !strings.Contains(set.Warnings[0], `"s.jsonl":2`) {
		t.Errorf("warnings: first %q, last %q", set.Warnings[0], last)
	}

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "HumanEval_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("HumanEval_%d", 100000+i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, warn, err := task.ListSamplesDir(root, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != task.MaxWarnings+1 || warn[task.MaxWarnings] != "250 more folder entries skipped" {
		t.Errorf("%d folder warnings, last %q; want %d, the last counting 250", len(warn), warn[len(warn)-1], task.MaxWarnings+1)
	}
}

// TestSamplesFolderEntriesBounded: a folder of a samples folder with more
// entries than the bound, of any kind, is refused while it is listed.
func TestSamplesFolderEntriesBounded(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-mini-v0.1.10")
	saved := *task.MaxFolderEntries
	*task.MaxFolderEntries = 1500 // more than one batch of the listing
	t.Cleanup(func() { *task.MaxFolderEntries = saved })
	for _, c := range []struct{ name, sub string }{{"top", ""}, {"task", "HumanEval_0"}} {
		root := t.TempDir()
		dir := filepath.Join(root, c.sub)
		if err := os.MkdirAll(filepath.Join(root, "HumanEval_0"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 1501 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%d.txt", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := task.ListSamplesDir(root, d)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "more than 1500 entries") || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: a folder of 1501 entries: %v, want a usage error naming %q", c.name, err, dir)
		}
		*task.MaxFolderEntries = 1502
		if _, _, err := task.ListSamplesDir(root, d); err != nil {
			t.Errorf("%s: within the bound: %v", c.name, err)
		}
		*task.MaxFolderEntries = 1500
	}
}
