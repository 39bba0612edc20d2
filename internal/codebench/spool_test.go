package codebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
)

// spoolFixture is a dataset of three tasks with plus inputs and samples
// of each, some with equal programs, with a verdict for every phase.
func spoolFixture() (*task.Dataset, []*task.Sample, map[[2]int]PhaseResult) {
	d := &task.Dataset{ID: "test", MD5: "0123", HasPlus: true}
	for i := range 3 {
		d.Tasks = append(d.Tasks, &task.Task{ID: fmt.Sprintf("HumanEval/%d", i),
			Base: []json.RawMessage{[]byte("[1]"), []byte("[2]")}, Plus: []json.RawMessage{[]byte(`["x"]`)}})
	}
	var samples []*task.Sample
	verdicts := map[[2]int]PhaseResult{}
	for _, t := range d.Tasks {
		for c := range 4 {
			i := len(samples)
			samples = append(samples, &task.Sample{TaskID: t.ID, ID: c, Solution: fmt.Sprintf("program %d", c%3)})
			base := PhaseResult{Status: StatusPass, FailInput: -1, Records: 2, Clocks: &PhaseClocks{Run: RunFirst, JobCPU: 0.01 * float64(i), CPULimit: 4, Wall: 0.5}}
			plus := PhaseResult{Status: StatusPass, FailInput: -1, Records: 1}
			switch i % 5 {
			case 1:
				base = PhaseResult{Status: StatusFail, FailInput: 1, Reason: "raised ValueError"}
			case 2:
				// What a program prints lands in reasons: a line that looks
				// like a spool entry, quotes, NUL and bytes that are not UTF-8
				// must come back as the results file from memory writes them.
				// (Scorer.score makes a reason valid text before any sink
				// sees it.)
				base = PhaseResult{Status: StatusFail, FailInput: 0, Reason: jsonText("printed \"x\"\n{\"status\":\"pass\"}\n\x00\xff\xfe")}
			case 3:
				plus = PhaseResult{Status: StatusTimeout, FailInput: 0, Reason: "slow", Limit: 4,
					Near: &NearLimit{Status: StatusTimeout, Input: 0, CPU: 4.1, Limit: 4, Recheck: &NearLimit{Status: StatusTimeout, CPU: 4.2, Limit: 4}, DecidedBy: DecidedByFirst}}
			}
			verdicts[[2]int{i, int(task.Base)}] = base
			verdicts[[2]int{i, int(task.Plus)}] = plus
		}
	}
	return d, samples, verdicts
}

// TestVerdictSpoolEqualsResultsInMemory: the results of a pass kept in a
// VerdictSpool give the same summary, rechecks, tests and results file,
// byte for byte, as the same results held in memory, whatever order the
// verdicts arrive in and whether a verdict is put once for the samples
// of equal programs. The spool leaves no file behind.
func TestVerdictSpoolEqualsResultsInMemory(t *testing.T) {
	d, samples, verdicts := spoolFixture()
	dir := t.TempDir()
	sp, err := NewVerdictSpool(dir, samples, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the spool left %d names in its folder while open", len(ents))
	}
	var mem ResultSlice
	for i, smp := range samples {
		pl := verdicts[[2]int{i, int(task.Plus)}]
		mem = append(mem, &SampleResult{Sample: smp, Base: verdicts[[2]int{i, int(task.Base)}], Plus: &pl})
	}
	// Plus verdicts first, last sample first; the base verdicts of the
	// samples with equal programs of a task as one shared put where they
	// are equal.
	for i := len(samples) - 1; i >= 0; i-- {
		pr := verdicts[[2]int{i, int(task.Plus)}]
		if err := sp.put(i, task.Plus, &pr, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(samples); i++ {
		pr := verdicts[[2]int{i, int(task.Base)}]
		if err := sp.put(i, task.Base, &pr, nil); err != nil {
			t.Fatal(err)
		}
	}
	pr := verdicts[[2]int{0, int(task.Base)}]
	pr.Reason = "shared"
	pr.Status = StatusFail
	if err := sp.put(0, task.Base, &pr, []int{3}); err != nil {
		t.Fatal(err)
	}
	mem[0].Base, mem[3].Base = pr, pr

	for _, src := range []ResultSource{mem, sp} {
		if src.Len() != len(samples) {
			t.Errorf("%T: Len %d, want %d", src, src.Len(), len(samples))
		}
	}
	sumMem := Summarize(d.Tasks, mem, true, false)
	sumSp, err := SummarizeSource(d.Tasks, sp, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, sumMem), mustJSON(t, sumSp); !bytes.Equal(a, b) {
		t.Errorf("summary from the spool %s, from memory %s", b, a)
	}
	rcMem, _ := Rechecks(mem, DefaultRunLimits())
	rcSp, err := Rechecks(sp, DefaultRunLimits())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, rcMem), mustJSON(t, rcSp); !bytes.Equal(a, b) || len(rcMem.Rechecked) == 0 {
		t.Errorf("rechecks from the spool %s, from memory %s", b, a)
	}
	tsMem, _ := TestsOf(mem, "eval_results.json")
	tsSp, err := TestsOf(sp, "eval_results.json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, tsMem), mustJSON(t, tsSp); !bytes.Equal(a, b) {
		t.Errorf("tests from the spool %s, from memory %s", b, a)
	}
	when := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	pathMem, pathSp := filepath.Join(t.TempDir(), "mem.json"), filepath.Join(t.TempDir(), "spool.json")
	if err := WriteResults(pathMem, d, d.Tasks, mem, sumMem, when); err != nil {
		t.Fatal(err)
	}
	if err := WriteResults(pathSp, d, d.Tasks, sp, sumSp, when); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(pathMem)
	b, _ := os.ReadFile(pathSp)
	if !bytes.Equal(a, b) || strings.Count(string(b), `"base_reason":"shared"`) != 2 {
		t.Errorf("results file from the spool differs from the one from memory:\n%s\n%s", b, a)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the spool left %d names in its folder", len(ents))
	}
}

// TestVerdictSpoolRefuses: a sample without a verdict of every phase, a
// verdict outside the pass, and samples of a task that do not come
// together are errors, and a pass over its limit is refused (exit 4) with
// nothing written.
func TestVerdictSpoolRefuses(t *testing.T) {
	d, samples, verdicts := spoolFixture()
	fill := func(skip int) *VerdictSpool {
		sp, err := NewVerdictSpool(t.TempDir(), samples, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sp.Close() })
		for i := range samples {
			for _, p := range []task.Phase{task.Base, task.Plus} {
				if i == skip && p == task.Plus {
					continue
				}
				pr := verdicts[[2]int{i, int(p)}]
				if err := sp.put(i, p, &pr, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		return sp
	}
	sp := fill(5)
	if _, err := SummarizeSource(d.Tasks, sp, true, false); err == nil || !strings.Contains(err.Error(), "sample 5") {
		t.Errorf("a sample without its plus verdict: %v", err)
	}
	pr := verdicts[[2]int{0, 0}]
	if err := sp.put(len(samples), task.Base, &pr, nil); err == nil {
		t.Error("a verdict for a sample outside the pass was taken")
	}
	if err := sp.put(0, task.Base, &pr, []int{-1}); err == nil {
		t.Error("a shared verdict for a sample outside the pass was taken")
	}

	// The tasks' samples out of the order of tasks.
	sp = fill(-1)
	rev := append([]*task.Task(nil), d.Tasks...)
	rev[0], rev[2] = rev[2], rev[0]
	path := filepath.Join(t.TempDir(), "eval_results.json")
	if err := WriteResults(path, d, rev, sp, Summary{}, time.Now()); err == nil || !strings.Contains(err.Error(), "come after") {
		t.Errorf("samples out of the order of tasks: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused results file was written")
	}

	// A pass over its limit.
	sp, err := NewVerdictSpool(t.TempDir(), samples[:1], 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	over := PhaseResult{Status: StatusPass, FailInput: -1, Clocks: &PhaseClocks{Run: RunFirst, JobCPU: 4.5, CPULimit: 4}}
	ok := verdicts[[2]int{0, int(task.Plus)}]
	if err := sp.put(0, task.Base, &over, nil); err != nil {
		t.Fatal(err)
	}
	if err := sp.put(0, task.Plus, &ok, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteResults(path, d, d.Tasks, sp, Summary{}, time.Now()); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("a pass over its limit from the spool: %v, want exit 4", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a refused results file was written")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkVerdictSpoolHeap reports what keeping a pass's verdicts costs
// in memory, per sample (heap-B/sample: the live heap after the verdicts
// of n samples were put, less the samples themselves), kept in a
// VerdictSpool and kept in memory, at n = 1,640 and 16,400 (10 and 100
// samples for each HumanEval+ task): the spool's figure stays at its 32
// bytes of locations a sample, the slice's is the results.
func BenchmarkVerdictSpoolHeap(b *testing.B) {
	_, fixture, verdicts := spoolFixture()
	for _, n := range []int{1640, 16400} {
		samples := make([]*task.Sample, n)
		for i := range samples {
			s := *fixture[i%len(fixture)]
			s.ID = i
			samples[i] = &s
		}
		verdict := func(i int, p task.Phase) PhaseResult {
			pr := verdicts[[2]int{i % len(fixture), int(p)}]
			pr.Reason = strings.Repeat("r", i%50)
			return pr
		}
		live := func() uint64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		for _, kind := range []string{"spool", "memory"} {
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				var per float64
				for b.Loop() {
					before := live()
					var keep any
					if kind == "spool" {
						sp, err := NewVerdictSpool(b.TempDir(), samples, 2)
						if err != nil {
							b.Fatal(err)
						}
						for i := range samples {
							for _, p := range []task.Phase{task.Base, task.Plus} {
								pr := verdict(i, p)
								if err := sp.put(i, p, &pr, nil); err != nil {
									b.Fatal(err)
								}
							}
						}
						keep = sp
						defer sp.Close()
					} else {
						rs := make(ResultSlice, n)
						for i := range samples {
							pl := verdict(i, task.Plus)
							rs[i] = &SampleResult{Sample: samples[i], Base: verdict(i, task.Base), Plus: &pl}
						}
						keep = rs
					}
					per = float64(live()-before) / float64(n)
					runtime.KeepAlive(keep)
				}
				b.ReportMetric(per, "heap-B/sample")
			})
		}
	}
}

// TestJSONText: a reason made valid text reads back from JSON as it was,
// and equals what a JSON round trip of the raw reason gives, so that the
// results file is the same bytes whether a verdict came from memory, the
// spool, the journal or the cache.
func TestJSONText(t *testing.T) {
	for _, s := range []string{"", "plain", "é€😀", "\xff", "a\xe2\x82", "\xe2\x82\xac\xff\xfe\x00x", "\xed\xa0\x80"} {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		got := jsonText(s)
		if got != back {
			t.Errorf("jsonText(%q) = %q, a JSON round trip gives %q", s, got, back)
		}
		again, _ := json.Marshal(got)
		var back2 string
		if err := json.Unmarshal(again, &back2); err != nil || back2 != got {
			t.Errorf("jsonText(%q) = %q does not read back from JSON as itself: %q", s, got, back2)
		}
	}
}
