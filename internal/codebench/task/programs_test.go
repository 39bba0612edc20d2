package task_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/task/tasktest"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// sameKept compares a set read in memory with the same bytes read into a
// ProgramFile: the same samples, and each kept program reads back as the
// program held in memory, with its digest known without reading it.
func sameKept(mem, kept *task.SampleSet) string {
	if mem.Count != kept.Count || len(mem.ByTask) != len(kept.ByTask) {
		return fmt.Sprintf("%d samples of %d tasks, kept %d of %d", mem.Count, len(mem.ByTask), kept.Count, len(kept.ByTask))
	}
	for id, ms := range mem.ByTask {
		ks := kept.ByTask[id]
		if len(ks) != len(ms) {
			return fmt.Sprintf("%s: %d samples, kept %d", id, len(ms), len(ks))
		}
		for i, m := range ms {
			k := ks[i]
			prog, err := k.Program()
			switch {
			case err != nil:
				return fmt.Sprintf("%s#%d: %v", id, i, err)
			case k.Solution != "" && m.Solution != "":
				return fmt.Sprintf("%s#%d: the kept program is also held in memory", id, i)
			case string(prog) != m.Solution:
				return fmt.Sprintf("%s#%d: kept program %q, in memory %q", id, i, prog, m.Solution)
			case k.ProgramSum() != digest.Of([]byte(m.Solution)) || m.ProgramSum() != k.ProgramSum():
				return fmt.Sprintf("%s#%d: digests differ", id, i)
			case k.ID != m.ID || k.Origin != m.Origin || k.TaskID != m.TaskID:
				return fmt.Sprintf("%s#%d: kept %+v, in memory %+v", id, i, k, m)
			}
		}
	}
	return ""
}

// TestProgramFileChecksEveryRead: a kept program that changes on disk
// while it waits to run (a byte flipped, the file cut short) is an
// integrity error naming the sample, never a program that runs; so is a
// read after the file is closed.
func TestProgramFileChecksEveryRead(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-mini-v0.1.10")
	pf, err := task.NewProgramFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	text := `{"task_id": "HumanEval/0", "solution": "print(1)\n"}` + "\n" + `{"task_id": "HumanEval/0", "solution": "print(2)\n"}`
	set, err := task.ReadSamplesJSONL(strings.NewReader(text), "s.jsonl", d, pf)
	if err != nil {
		t.Fatal(err)
	}
	s := set.ByTask["HumanEval/0"]
	if got, err := s[1].Program(); err != nil || string(got) != "print(2)\n" || s[1].Solution != "" {
		t.Fatalf("second program %q, %v; Solution %q", got, err, s[1].Solution)
	}
	f := task.ProgramFileOf(pf)
	if _, err := f.WriteAt([]byte("3"), int64(len("print(1)\nprint("))); err != nil {
		t.Fatal(err)
	}
	if got, err := s[1].Program(); exitcode.Of(err) != exitcode.Integrity || got != nil || !strings.Contains(err.Error(), `"s.jsonl":2`) {
		t.Errorf("program changed on disk: %q, %v; want an integrity error naming the sample", got, err)
	}
	if got, err := s[0].Program(); err != nil || string(got) != "print(1)\n" {
		t.Errorf("the unchanged program: %q, %v", got, err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if got, err := s[0].Program(); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("program of a file cut short: %q, %v; want an integrity error", got, err)
	}
	pf.Close()
	if got, err := s[0].Program(); err == nil {
		t.Errorf("program read after Close: %q", got)
	}
	if s[0].ProgramSum() != digest.Of([]byte("print(1)\n")) {
		t.Error("a kept program's digest is not the program's")
	}
}

// TestKeptProgramsAreNotHeld: what a set of samples whose programs are
// kept on disk holds in memory does not grow with the programs: 40 MiB of
// programs add well under 1 MiB of live heap (the samples themselves).
func TestKeptProgramsAreNotHeld(t *testing.T) {
	d := tasktest.Dataset(t, "humanevalplus-mini-v0.1.10")
	const n, size = 1000, 40 << 10
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"task_id": "HumanEval/0", "solution": "# %d\n%s"}`+"\n", i, strings.Repeat("x", size))
	}
	text := b.String()
	pf, err := task.NewProgramFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set, err := task.ReadSamplesJSONL(strings.NewReader(text), "s.jsonl", d, pf)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grew > 1<<20 {
		t.Errorf("%d samples of %d bytes kept on disk: live heap grew by %d bytes", n, size, grew)
	}
	last, err := set.ByTask["HumanEval/0"][n-1].Program()
	if err != nil || len(last) != size+len(fmt.Sprintf("# %d\n", n-1)) {
		t.Errorf("last program: %d bytes, %v", len(last), err)
	}
	runtime.KeepAlive(text)
}
