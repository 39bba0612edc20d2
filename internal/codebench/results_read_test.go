package codebench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// streamed reads b with ReadResults into the ResultsFile it describes
// (Eval nil where it has no "eval" object).
func streamed(b []byte) (ResultsFile, error) {
	rf := ResultsFile{Eval: map[string][]ResultEntry{}}
	var order []string
	head, err := ReadResults(bytes.NewReader(b), func(id string) error {
		order = append(order, id)
		rf.Eval[id] = nil
		return nil
	}, func(id string, e *ResultEntry) error {
		if len(order) == 0 || order[len(order)-1] != id {
			return errors.New("an entry outside its task's list")
		}
		rf.Eval[id] = append(rf.Eval[id], *e)
		return nil
	})
	rf.Hash = head.Hash
	if !head.Eval {
		if len(rf.Eval) > 0 {
			return rf, errors.New("tasks without an eval object")
		}
		rf.Eval = nil
	}
	return rf, err
}

// sameResults compares two ResultsFiles, an empty list taken for a
// missing one.
func sameResults(a, b ResultsFile) bool {
	if a.Hash != b.Hash || len(a.Eval) != len(b.Eval) || (a.Eval == nil) != (b.Eval == nil) {
		return false
	}
	for id, ea := range a.Eval {
		eb, ok := b.Eval[id]
		if !ok || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if !reflect.DeepEqual(ea[i], eb[i]) {
				return false
			}
		}
	}
	return true
}

// listedUnderOwnTask is the rule ReadResults adds to DecodeOpen: every
// entry names the task it is listed under.
func listedUnderOwnTask(f ResultsFile) error {
	for id, es := range f.Eval {
		for k, e := range es {
			if e.TaskID != id {
				return fmt.Errorf("entry %d of task %q names task %q", k, id, e.TaskID)
			}
		}
	}
	return nil
}

// readResultsCases: results files and texts near them, for the table test
// and as the fuzz target's seeds.
var readResultsCases = []string{
	`{"date": "2026-12-07 01:00", "hash": "abc", "eval": {"HumanEval/0": [{"task_id": "HumanEval/0", "solution": "def f():\n    return 1\n", "base_status": "pass", "plus_status": "fail", "base_fail_tests": [], "plus_fail_tests": [[1, [2, {"a": null}]]], "plus_reason": "input 3", "base_clocks": {"run": "first", "job_cpu_s": 0.25, "cpu_limit_s": 4, "wall_s": 0.3}, "plus_near_limit": {"status": "fail", "input": 3, "cpu": 3.9, "limit": 4}}], "HumanEval/1": []}}`,
	`{"hash": "h", "eval": {"HumanEval/0": null, "HumanEval/1": [null, {}]}}`,
	`{"eval": null}`,
	`{}`,
	`null`,
	` {"hash": null, "extra": [1, {"x": [true, false, null]}], "eval": {}} `,
	`{"hash": "a", "hash": "b"}`,
	`{"Hash": "a"}`,
	`{"hash": "a", "eval": {"T": [], "t": []}}`,
	`{"extra": 1, "EXTRA": 2}`,
	`{"eval": {"T": [{"task_id": "T", "TASK_ID": "U"}]}}`,
	`{"eval": {"T": [{"task_id": "T", "task_id": "U"}]}}`,
	`{"eval": {"T": [{"base_status": 5}]}}`,
	`{"eval": {"T": [{"task_id": "T"}, {"task_id": "U"}], "U": []}}`,
	`{"eval": {"T": [{"task_id": "t"}]}}`,
	`{"eval": {"T": [{"task_id": "T"}], "U": [{"task_id": "U"}, {"task_id": "U", "base_status": "fail"}]}}`,
	`{"eval": {"T": {}}}`,
	`{"eval": {"T": "x"}}`,
	`{"eval": []}`,
	`{"hash": 5}`,
	`[]`,
	`"x"`,
	`5`,
	``,
	`{"eval": {"T": [{}]}} {}`,
	`{"eval": {"T": [{}]}} x`,
	`{"eval": {"T": [{}]`,
	`{"eval": {"T": [{"plus_fail_tests": [` + strings.Repeat("9", 4301) + `]}]}}`,
	`{"extra": ` + strings.Repeat("9", 4301) + `}`,
	`{"extra": 1e400, "eval": {"T": [{"task_id": "T", "base_clocks": {"wall_s": 1e5}}]}}`,
	`{"eval": {"T": [{"base_clocks": {"wall_s": 1e400}}]}}`,
	`{"eval": {"T": [{"plus_fail_tests": [` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}]}}`,
	// strictjson.MaxDepth (512) levels in all, then one more: in a member
	// the file does not declare, and in one an entry does not.
	`{"extra": ` + strings.Repeat("[", 511) + strings.Repeat("]", 511) + `}`,
	`{"extra": ` + strings.Repeat("[", 512) + strings.Repeat("]", 512) + `}`,
	`{"eval": {"T": [{"task_id": "T", "extra": ` + strings.Repeat("[", 508) + strings.Repeat("]", 508) + `}]}}`,
	`{"eval": {"T": [{"extra": ` + strings.Repeat("[", 509) + strings.Repeat("]", 509) + `}]}}`,
	"{\"hash\": \"\xff\"}",
	`{"hash": "\ud800"}`,
	`{"eval": {"T": [{"task_id": "T", "solution": "\u00e9\ud83d\ude00"}]}}`,
}

// TestReadResultsAgreesWithDecodeOpen: ReadResults accepts exactly the
// texts strictjson.DecodeOpen accepts into a ResultsFile, and gives the
// same entries, in each case of readResultsCases.
func TestReadResultsAgreesWithDecodeOpen(t *testing.T) {
	accepted := 0
	for _, c := range readResultsCases {
		if checkReadResults(t, []byte(c)) {
			accepted++
		}
	}
	// Both sides of the comparison are exercised.
	if accepted < 8 || accepted > len(readResultsCases)-8 {
		t.Errorf("%d of %d cases accepted", accepted, len(readResultsCases))
	}
}

// checkReadResults reports whether both readers accepted b, failing t
// where they disagree.
func checkReadResults(t *testing.T, b []byte) bool {
	t.Helper()
	var whole ResultsFile
	werr := strictjson.DecodeOpen(b, &whole)
	if werr == nil {
		werr = listedUnderOwnTask(whole)
	}
	got, serr := streamed(b)
	switch {
	case (werr == nil) != (serr == nil):
		t.Errorf("%.200q: DecodeOpen: %v; ReadResults: %v", b, werr, serr)
	case werr == nil && !sameResults(whole, got):
		t.Errorf("%.200q: DecodeOpen gives %+v; ReadResults %+v", b, whole, got)
	}
	return werr == nil
}

func FuzzReadResults(f *testing.F) {
	for _, c := range readResultsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkReadResults(t, b)
	})
}

// TestResultsFileBound: the writer leaves no results file its readers
// refuse for its size, and OpenResultsFile refuses a larger one before
// reading it (a sparse file: its size is all that is there), as it does
// what is not a regular file.
func TestResultsFileBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxResultsFile+1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenResultsFile(big); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("a results file of %d bytes opened: %v", MaxResultsFile+1, err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	ok := filepath.Join(dir, "ok.json")
	const doc = `{"hash":"h","eval":{"HumanEval/0":[]}}`
	if err := os.WriteFile(ok, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		if f, err := OpenResultsFile(p); err == nil {
			f.Close()
			t.Errorf("%s opened", filepath.Base(p))
		}
	}
	f, err := OpenResultsFile(ok)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if head, err := ReadResults(f, func(string) error { return nil }, func(string, *ResultEntry) error { return nil }); err != nil || head.Hash != "h" || !head.Eval {
		t.Fatalf("a results file under the bound: %+v, %v", head, err)
	}

	// The writer's check, with a bound the test can reach.
	w, err := os.Open(ok)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := readable(w, int64(len(doc))); err != nil {
		t.Errorf("a file at the bound: %v", err)
	}
	w.Seek(0, io.SeekStart)
	if err := readable(w, int64(len(doc))-1); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a file over the bound: %v (exit %d), want exit %d", err, exitcode.Of(err), exitcode.Usage)
	}
}
