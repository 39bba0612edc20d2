package task_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

func TestLoadHumanEvalPlus(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	if len(d.Tasks) != 164 || !d.HasPlus {
		t.Fatalf("%d tasks, plus %v", len(d.Tasks), d.HasPlus)
	}
	if d.MD5 != "fe585eb4df8c88d844eeb463ea4d0302" {
		t.Errorf("md5 %s, want EvalPlus's hash fe585eb4df8c88d844eeb463ea4d0302", d.MD5)
	}
	base, plus := 0, 0
	atol := map[string]float64{}
	for i, task := range d.Tasks {
		if task.Index != i || task.ID != "HumanEval/"+strconv.Itoa(i) {
			t.Fatalf("task %d is %s", i, task.ID)
		}
		base += len(task.Base)
		plus += len(task.Plus)
		if task.Atol != 0 {
			atol[task.ID] = task.Atol
		}
	}
	if base != 1570 || plus != 122683 {
		t.Errorf("%d base and %d plus inputs, want 1570 and 122683", base, plus)
	}
	if len(atol) != 3 || atol["HumanEval/2"] != 1e-6 || atol["HumanEval/4"] != 1e-6 || atol["HumanEval/32"] != 1e-4 {
		t.Errorf("atol %v", atol)
	}
	// Integers above 2^53 stay as the dataset wrote them.
	big := d.Task("HumanEval/22")
	digits := 0
	for _, in := range append(big.Base, big.Plus...) {
		run := 0
		for _, c := range in {
			if c >= '0' && c <= '9' {
				run++
				digits = max(digits, run)
			} else {
				run = 0
			}
		}
	}
	if digits < 17 {
		t.Errorf("HumanEval/22: longest digit run %d; big integers were not kept", digits)
	}
}

func TestLoadMiniAndOriginal(t *testing.T) {
	mini := tasktest.Dataset(t, "humanevalplus-mini-v0.1.10")
	if len(mini.Tasks) != 164 || mini.MD5 != "401e75ad986361dccc7afecb4121e295" {
		t.Errorf("mini: %d tasks, md5 %s", len(mini.Tasks), mini.MD5)
	}
	orig := tasktest.Dataset(t, "humaneval")
	plus := tasktest.Dataset(t, "humanevalplus-v0.1.10")
	if len(orig.Tasks) != 164 || orig.HasPlus || orig.InputsFrom != plus.ID {
		t.Fatalf("original: %d tasks, plus %v, inputs from %q", len(orig.Tasks), orig.HasPlus, orig.InputsFrom)
	}
	if orig.Task("HumanEval/0").Canonical == plus.Task("HumanEval/0").Canonical {
		t.Error("the original canonical solution was replaced by HumanEval+'s")
	}
	if len(orig.Task("HumanEval/0").Base) != len(plus.Task("HumanEval/0").Base) {
		t.Error("the original dataset does not carry HumanEval+'s base inputs")
	}
}

func TestLoadRefusesWrongBytes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.SharedData(t), tasktest.PlusPin.File))
	if err != nil {
		t.Fatal(err)
	}
	sum := digest.MustParse(tasktest.PlusPin.Sum)
	// One flipped byte, one byte missing, one byte too many.
	flipped := bytes.Clone(raw)
	flipped[1000] ^= 1
	for name, b := range map[string][]byte{"flipped": flipped, "short": raw[:len(raw)-1], "long": append(bytes.Clone(raw), 0)} {
		_, err := task.LoadPlus(bytes.NewReader(b), "x", tasktest.PlusPin.Size, sum)
		var mm *digest.MismatchError
		if !errors.As(err, &mm) {
			t.Errorf("%s: got %v, want a digest mismatch", name, err)
		}
	}
}

// gz compresses s and returns it with its pin.
func gz(t *testing.T, s string) ([]byte, int64, digest.SHA256) {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes(), int64(b.Len()), digest.Of(b.Bytes())
}

func TestLoadPlusErrorsNameTheLine(t *testing.T) {
	good := `{"task_id":"HumanEval/0","prompt":"def f(x):\n","entry_point":"f","canonical_solution":"    return x\n","base_input":[[1]],"plus_input":[[2]],"atol":0}`
	for name, c := range map[string]struct {
		text, want string
	}{
		"bad json":        {good + "\n{nope\n", "line 2"},
		"missing key":     {`{"task_id":"HumanEval/0"}`, "line 1: missing"},
		"out of order":    {strings.Replace(good, "HumanEval/0", "HumanEval/1", 1), "out of order"},
		"bad entry point": {strings.Replace(good, `"entry_point":"f"`, `"entry_point":"f()"`, 1), "not a Python identifier"},
		"input not args":  {strings.Replace(good, `[[2]]`, `[2]`, 1), "not a list of arguments"},
		"negative atol":   {strings.Replace(good, `"atol":0`, `"atol":-1`, 1), "atol"},
		"empty":           {"\n\n", "no tasks"},
	} {
		b, n, sum := gz(t, c.text)
		_, err := task.LoadPlus(bytes.NewReader(b), "test", n, sum)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.want)
		}
	}
	b, n, sum := gz(t, good+"\n")
	d, err := task.LoadPlus(bytes.NewReader(b), "test", n, sum)
	if err != nil || len(d.Tasks) != 1 || string(d.Tasks[0].Plus[0]) != "[2]" {
		t.Fatalf("good line: %v", err)
	}
}

func TestLoadPlusBoundsDecompression(t *testing.T) {
	// A gzip bomb: 100 MB of spaces compress to ~100 KB.
	b, n, sum := gz(t, strings.Repeat(" ", 100<<20))
	_, err := task.LoadPlus(bytes.NewReader(b), "bomb", n, sum)
	if err == nil || !strings.Contains(err.Error(), "line longer") && !strings.Contains(err.Error(), "decompressed") {
		t.Fatalf("got %v, want a size error", err)
	}
}
