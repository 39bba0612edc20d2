package task_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/testenv"
)

// evalplusReader is EvalPlus's own samples reader (load_solutions, and
// what evaluate does with each sample), run by Debian's Python on the
// EvalPlus tree through testdata/evalplus_read_samples.py.
type evalplusReader struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// evalplusRead is what EvalPlus made of one samples file.
type evalplusRead struct {
	OK      bool        `json:"ok"`
	Samples [][2]string `json:"samples"` // task id, program in base64
	Skipped int         `json:"skipped"`
	Error   string      `json:"error"`
}

func startEvalPlusReader(tb testing.TB, d *task.Dataset) *evalplusReader {
	tb.Helper()
	tree := testenv.Getenv(tb, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import json").Run(); err != nil {
		testenv.Missing(tb, py, "apt-get install python3")
	}
	prompts := map[string]string{}
	for _, t := range d.Tasks {
		prompts[t.ID] = t.Prompt
	}
	b, err := json.Marshal(prompts)
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "evalplus-reader-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	promptsPath := filepath.Join(dir, "prompts.json")
	if err := os.WriteFile(promptsPath, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(py, "-B", "-I", "-X", "utf8", filepath.Join("testdata", "evalplus_read_samples.py"), tree, promptsPath)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r := &evalplusReader{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	tb.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return r
}

func (r *evalplusReader) read(tb testing.TB, b []byte) evalplusRead {
	tb.Helper()
	if _, err := fmt.Fprintln(r.in, base64.StdEncoding.EncodeToString(b)); err != nil {
		tb.Fatalf("EvalPlus's reader: %v", err)
	}
	line, err := r.out.ReadBytes('\n')
	if err != nil {
		tb.Fatalf("EvalPlus's reader gave no answer: %v", err)
	}
	var res evalplusRead
	if err := json.Unmarshal(line, &res); err != nil {
		tb.Fatalf("EvalPlus's reader: %v: %s", err, line)
	}
	return res
}

// sameAsEvalPlus returns what differs between set, repro's reading of b,
// and EvalPlus's: the programs of each task in order, and the samples
// skipped for tasks the dataset lacks. "" when nothing does.
func sameAsEvalPlus(set *task.SampleSet, ep evalplusRead) string {
	if !ep.OK {
		return "EvalPlus refuses the file: " + ep.Error
	}
	byTask := map[string][]string{}
	for _, s := range ep.Samples {
		prog, err := base64.StdEncoding.DecodeString(s[1])
		if err != nil {
			return err.Error()
		}
		byTask[s[0]] = append(byTask[s[0]], string(prog))
	}
	for id, ss := range set.ByTask {
		var progs []string
		for _, s := range ss {
			progs = append(progs, s.Solution)
		}
		if !slices.Equal(progs, byTask[id]) {
			return fmt.Sprintf("task %s: repro runs %q, EvalPlus %q", id, progs, byTask[id])
		}
		delete(byTask, id)
	}
	for id, progs := range byTask {
		return fmt.Sprintf("task %s: EvalPlus runs %q, repro nothing", id, progs)
	}
	if ep.Skipped != set.Skipped {
		return fmt.Sprintf("EvalPlus skips %d samples, repro %d", ep.Skipped, set.Skipped)
	}
	return ""
}

// fuzzDataset is the dataset of the samples fuzz tests: two tasks, so
// that a sample filed under the wrong one shows.
func fuzzDataset() *task.Dataset {
	return &task.Dataset{ID: "fuzz", Tasks: []*task.Task{
		{ID: "HumanEval/0", Index: 0, Prompt: "def f():\n", EntryPoint: "f"},
		{ID: "HumanEval/1", Index: 1, Prompt: "def g():\n", EntryPoint: "g"},
	}}
}

// TestSamplesReadAsEvalPlusReads gives repro's reader and EvalPlus's the
// same bytes. Whatever repro accepts, EvalPlus reads as the same programs
// of the same tasks; where the two would differ (Python's json keeps the
// last of two equal keys, encoding/json matched keys ignoring case), or
// EvalPlus would stop, repro refuses the file.
func TestSamplesReadAsEvalPlusReads(t *testing.T) {
	d := fuzzDataset()
	ep := startEvalPlusReader(t, d)
	ok := `{"task_id": "HumanEval/0", "solution": "A"}`
	for _, c := range []struct {
		name, text string
		refuse     string // what repro's error says; "" if it accepts
		evalplus   bool   // EvalPlus reads the file without an error
	}{
		{"plain", ok + "\n" + `{"task_id": "HumanEval/1", "completion": "  pass\n", "extra": [1, {"x": null}]}` + "\n", "", true},
		{"case variant beside solution", `{"task_id": "HumanEval/0", "solution": "A", "SOLUTION": "B"}`, `keys "solution" and "SOLUTION"`, true},
		{"case variant beside task_id", `{"task_id": "HumanEval/0", "Task_ID": "HumanEval/1", "solution": "A"}`, `keys "task_id" and "Task_ID"`, true},
		{"case variant alone", `{"task_id": "HumanEval/0", "SOLUTION": "B", "completion": "C"}`, `differs only in case from the field "solution"`, true},
		{"long s", `{"task_id": "HumanEval/0", "ſolution": "B", "completion": "C"}`, `differs only in case from the field "solution"`, true},
		{"duplicate solution", `{"task_id": "HumanEval/0", "solution": "A", "solution": "B"}`, `key "solution" appears twice`, true},
		{"duplicate task_id", `{"task_id": "HumanEval/1", "task_id": "HumanEval/0", "solution": "A"}`, `key "task_id" appears twice`, true},
		{"CRLF lines", ok + "\r\n" + ok + "\r\n", "", true},
		{"CR lines", ok + "\r" + ok + "\r", "", true},
		{"CR inside an object", "{\"task_id\": \"HumanEval/0\",\r \"solution\": \"A\"}", `"f.jsonl":1: not a JSON object`, false},
		{"line separator in a string", "{\"task_id\": \"HumanEval/0\", \"solution\": \"a\u2028b\u0085c\"}", "", true},
		{"line separator between members", "{\"task_id\": \"HumanEval/0\",\u2028\"solution\": \"A\"}", "not a JSON object", false},
		{"Python's blank lines", ok + "\n\x1c\x1f\u00a0\u3000\u2028\n\x0b\x0c\n", "", true},
		{"BOM", "\ufeff" + ok, "not a JSON object", false},
		{"NaN in an extra key", `{"task_id": "HumanEval/0", "solution": "A", "score": NaN}`, "not a JSON object", true},
		{"huge integer", `{"task_id": "HumanEval/0", "solution": "A", "n": ` + strings.Repeat("9", 4301) + `}`, "4301 digits", false},
		{"deep extra key", `{"task_id": "HumanEval/0", "solution": "A", "n": ` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `}`, "levels of nesting", false},
		{"lone surrogate", `{"task_id": "HumanEval/0", "solution": "\ud800"}`, "surrogate", true},
		{"null solution", `{"task_id": "HumanEval/0", "solution": null, "completion": "C"}`, "solution must be a string, not null", false},
		{"null completion", `{"task_id": "HumanEval/0", "solution": "A", "completion": null}`, "completion must be a string, not null", false},
		{"numeric task id", `{"task_id": 0, "solution": "A"}`, "task_id must be a string", false},
		{"unknown task", `{"task_id": "HumanEval/00", "solution": "A"}` + "\n" + ok, "", true},
		{"not UTF-8", "{\"task_id\": \"HumanEval/0\", \"solution\": \"\xe9\"}", "not valid UTF-8", false},
		{"not UTF-8 on a blank line", ok + "\n \xa0\n", "not valid UTF-8", false},
	} {
		set, err := task.ReadSamplesJSONL(strings.NewReader(c.text), "f.jsonl", d, nil)
		res := ep.read(t, []byte(c.text))
		if res.OK != c.evalplus {
			t.Errorf("%s: EvalPlus read it: %v (%s), want %v", c.name, res.OK, res.Error, c.evalplus)
		}
		if err == nil {
			if diff := sameAsEvalPlus(set, res); diff != "" {
				t.Errorf("%s: repro reads the file otherwise than EvalPlus: %s", c.name, diff)
			}
		}
		if c.refuse != "" {
			if err == nil || !strings.Contains(err.Error(), c.refuse) {
				t.Errorf("%s: repro: %v, want an error containing %q", c.name, err, c.refuse)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestRealSamplesReadAsEvalPlusReads reads the real samples files of the
// corpus both ways.
func TestRealSamplesReadAsEvalPlusReads(t *testing.T) {
	for _, c := range []struct{ file, dataset string }{
		{"ldb-seed-gpt-3.5-turbo-0613-he.jsonl", "humanevalplus-v0.1.10"},
		{"qwen2.5-coder-7b-base-mbpp.jsonl", "mbppplus-v0.2.0"},
	} {
		d := tasktest.Dataset(t, c.dataset)
		b, err := os.ReadFile(filepath.Join(testenv.SharedData(t), "..", "corpus", c.file))
		if err != nil {
			t.Fatal(err)
		}
		set, err := task.ReadSamplesJSONL(strings.NewReader(string(b)), c.file, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameAsEvalPlus(set, startEvalPlusReader(t, d).read(t, b)); diff != "" {
			t.Errorf("%s: %s", c.file, diff)
		}
	}
}
