package codebench

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

func TestNearLimit(t *testing.T) {
	j := &wire.Job{Limits: []float64{4, 4, 4}, FirstExtra: 4}
	for _, c := range []struct {
		name  string
		gaps  []float64
		res   PhaseResult
		end   wire.JobEnd
		want  string
		limit float64
	}{
		{"fast pass", []float64{0.1, 0.2, 0.1}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone}, "", 13},
		{"input near its limit", []float64{0.1, 3.3, 0.1}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone},
			"passed near the limit: input 1 used 3.30 of 4.00 CPU s (82%)", 13},
		{"input 0 has its own limit, not the load allowance", []float64{3.5, 0.1, 0.1}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone, LoadCPU: 0.2},
			"passed near the limit: input 0 used 3.50 of 4.00 CPU s (88%)", 13},
		{"loading near the load allowance", []float64{0.1, 0.1, 0.1}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone, LoadCPU: 3.6},
			"passed near the limit: loading the program used 3.60 of 4.00 CPU s (90%)", 13},
		{"the list counts the loading", []float64{2, 2, 2}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone, LoadCPU: 3, CPU: 9.2},
			"passed near the limit: the list used 9.20 of 10.00 CPU s (92%)", 10},
		{"load allowance", nil, PhaseResult{Status: StatusTimeout}, wire.JobEnd{Status: wire.EndTimeout, Detail: "loading the program used more than 4.00 s of CPU time"},
			"stopped at the limit: loading the program used more than 4.00 CPU s", 13},
		{"list near its limit", []float64{3, 3, 3}, PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone},
			"passed near the limit: the list used 9.00 of 10.00 CPU s (90%)", 10},
		{"per-input limit", []float64{0.1}, PhaseResult{Status: StatusFail}, wire.JobEnd{Status: wire.EndTimeout, Records: 1, Detail: "input 1 used more than 4.00 s of CPU time"},
			"stopped at the limit: input 1 used more than 4.00 CPU s", 13},
		{"list limit", []float64{3, 3}, PhaseResult{Status: StatusTimeout}, wire.JobEnd{Status: wire.EndTimeout, Records: 2, Detail: "the list used more than 10.0 s of CPU time"},
			"stopped at the limit: the list used more than 10.00 CPU s", 10},
		{"fail", []float64{3.9}, PhaseResult{Status: StatusFail}, wire.JobEnd{Status: "stopped"}, "", 13},
	} {
		tl := newCPUTally(j)
		for k, g := range c.gaps {
			tl.add(k, g)
		}
		n := tl.near(c.res, c.end, c.limit, 1-DefaultNearLimitMargin)
		got := ""
		if n != nil {
			got = n.String()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A job with no inputs is held to its load allowance from its L record
	// to its end, not only to its load mark.
	none := newCPUTally(&wire.Job{FirstExtra: 4})
	n := none.near(PhaseResult{Status: StatusPass}, wire.JobEnd{Status: wire.EndDone, LoadCPU: 0.5, CPU: 3.6}, 13, 1-DefaultNearLimitMargin)
	want := "passed near the limit: loading the program used 3.60 of 4.00 CPU s (90%)"
	if n == nil || n.String() != want {
		t.Errorf("a job with no inputs: %v, want %q", n, want)
	}
}

func TestTimeoutStatus(t *testing.T) {
	// listed is the input EvalPlus lists as failing: the one its alarm
	// failed, or for a timeout the last one that completed.
	for _, c := range []struct {
		end    wire.JobEnd
		want   Status
		listed int
	}{
		{wire.JobEnd{Records: 3, Detail: "input 3 used more than 4.00 s of CPU time"}, StatusFail, 3},
		{wire.JobEnd{Records: 3, Detail: "input 3 was idle (sleeping or blocked) for more than 12.0 s"}, StatusFail, 3},
		{wire.JobEnd{Records: 0, Detail: "input 0 used more than 8.00 s of CPU time"}, StatusTimeout, -1},
		{wire.JobEnd{Records: 0, Called: true, Detail: "input 0 used more than 8.00 s of CPU time"}, StatusFail, 0},
		{wire.JobEnd{Records: 0, Called: true, Detail: "input 0 was idle (sleeping or blocked) for more than 24.0 s"}, StatusFail, 0},
		{wire.JobEnd{Records: 0, Called: true, Detail: "the list used more than 61.0 s of CPU time"}, StatusTimeout, -1},
		{wire.JobEnd{Records: 0, Called: true, Detail: "the job used 70.00 s of CPU time as the host measures its container, over the 69.00 s its limits allow"}, StatusTimeout, -1},
		{wire.JobEnd{Records: 3, Detail: "the list used more than 61.0 s of CPU time"}, StatusTimeout, 2},
		{wire.JobEnd{Records: 3, Detail: "input 2 used more than 4.00 s of CPU time"}, StatusTimeout, 2},
	} {
		got := timeoutStatus(c.end)
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.end.Detail, got, c.want)
		}
		if l := listedInput(got, c.end.Records); l != c.listed {
			t.Errorf("%q after %d results: lists input %d, want %d", c.end.Detail, c.end.Records, l, c.listed)
		}
	}
}

func TestCombineRecheck(t *testing.T) {
	near := func(st Status) *NearLimit {
		if st == StatusPass {
			return &NearLimit{Status: st, Input: 1, CPU: 3.5, Limit: 4}
		}
		return &NearLimit{Status: st, Input: 1, CPU: 4, Limit: 4}
	}
	pass := PhaseResult{Status: StatusPass, FailInput: -1, Records: 3, Elapsed: 1, Limit: 13}
	timeout := PhaseResult{Status: StatusTimeout, FailInput: 1, Reason: "input 1 used more than 4.00 s of CPU time", Records: 1, Elapsed: 2, Limit: 13}
	inputTimeout := PhaseResult{Status: StatusFail, FailInput: 1, Reason: "input 1 used more than 4.00 s of CPU time", Records: 1, Elapsed: 2, Limit: 13}
	wrong := PhaseResult{Status: StatusFail, FailInput: 2, Reason: "wrong output", Records: 2, Elapsed: 1, Limit: 13}
	passM := NearLimit{Status: StatusPass, Input: 2, CPU: 1, Limit: 4}
	stopM := NearLimit{Status: StatusTimeout, Input: 1, CPU: 4, Limit: 4, AtLimit: true}
	failStopM := NearLimit{Status: StatusFail, Input: 1, CPU: 4, Limit: 4, AtLimit: true}
	wrongM := NearLimit{Status: StatusFail, Input: 0, CPU: 0.1, Limit: 8}
	for _, c := range []struct {
		name         string
		first, again PhaseResult
		firstStatus  Status
		m            NearLimit
		want         Status
		decidedBy    string
		from         PhaseResult
	}{
		{"timeout then pass", timeout, pass, StatusTimeout, passM, StatusPass, DecidedByRecheck, pass},
		{"input timeout then pass", inputTimeout, pass, StatusFail, passM, StatusPass, DecidedByRecheck, pass},
		{"near pass then timeout", pass, timeout, StatusPass, stopM, StatusPass, DecidedByFirst, pass},
		{"near pass then pass", pass, pass, StatusPass, passM, StatusPass, DecidedByFirst, pass},
		{"both timeout", timeout, timeout, StatusTimeout, stopM, StatusTimeout, DecidedByFirst, timeout},
		{"timeout then input timeout", timeout, inputTimeout, StatusTimeout, failStopM, StatusTimeout, DecidedByFirst, timeout},
		{"near pass then wrong output", pass, wrong, StatusPass, wrongM, StatusPass, DecidedByFirst, pass},
		{"timeout then wrong output", timeout, wrong, StatusTimeout, wrongM, StatusTimeout, DecidedByFirst, timeout},
	} {
		first := c.first
		first.Near = near(c.firstStatus)
		got := combineRecheck(first, c.again, c.m)
		if got.Status != c.want || got.Near == nil || got.Near.DecidedBy != c.decidedBy {
			t.Errorf("%s: %s decided by %v, want %s decided by %s", c.name, got.Status, got.Near, c.want, c.decidedBy)
			continue
		}
		if got.Reason != c.from.Reason || got.FailInput != c.from.FailInput || got.Records != c.from.Records || got.Elapsed != c.from.Elapsed {
			t.Errorf("%s: %+v, want the verdict of %+v", c.name, got, c.from)
		}
		if *got.Near.Recheck != c.m || got.Near.Status != c.firstStatus || got.Near.CPU != first.Near.CPU {
			t.Errorf("%s: measurements %+v / %+v, want first %+v and re-run %+v", c.name, *got.Near, *got.Near.Recheck, *first.Near, c.m)
		}
		if first.Near.Recheck != nil {
			t.Errorf("%s: the first result's measurement was changed", c.name)
		}
	}
}

func TestRecheckAccount(t *testing.T) {
	for _, c := range []struct {
		n    NearLimit
		want string
	}{
		{NearLimit{Status: StatusPass, Input: 1, CPU: 3.5, Limit: 4, DecidedBy: DecidedByFirst, Recheck: &NearLimit{Status: StatusPass, Input: 1, CPU: 3.41, Limit: 4}},
			"passed near the limit: input 1 used 3.50 of 4.00 CPU s (88%); re-run: pass, input 1 used 3.41 of 4.00 CPU s (85%); the first run decides"},
		{NearLimit{Status: StatusTimeout, Input: -1, CPU: 13, Limit: 13, DecidedBy: DecidedByRecheck, Recheck: &NearLimit{Status: StatusPass, Input: -1, CPU: 11, Limit: 13}},
			"stopped at the limit: the list used more than 13.00 CPU s; re-run: pass, the list used 11.00 of 13.00 CPU s (85%); the re-run decides"},
		{NearLimit{Status: StatusFail, Input: 2, CPU: 4, Limit: 4, DecidedBy: DecidedByFirst, Recheck: &NearLimit{Status: StatusFail, Input: 2, CPU: 4, Limit: 4, AtLimit: true}},
			"stopped at the limit: input 2 used more than 4.00 CPU s; re-run: fail, stopped at the limit: input 2 used more than 4.00 CPU s; the first run decides"},
		{NearLimit{Status: StatusPass, Input: 1, CPU: 3.5, Limit: 4, DecidedBy: DecidedByFirst, Recheck: &NearLimit{Status: StatusFail, Input: 0, CPU: 0.1, Limit: 8}},
			"passed near the limit: input 1 used 3.50 of 4.00 CPU s (88%); re-run: fail, not at a time limit, input 0 used 0.10 of 8.00 CPU s (1%); the first run decides"},
	} {
		if got := c.n.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// A rechecked verdict survives the journal whole, so that a resumed run
// or the cache reports both measurements.
func TestRecheckedVerdictJournals(t *testing.T) {
	first := PhaseResult{Status: StatusTimeout, FailInput: 1, Reason: "the list used more than 13.0 s of CPU time", Records: 1, Limit: 13,
		Near: &NearLimit{Status: StatusTimeout, Input: -1, CPU: 13, Limit: 13}}
	pr := combineRecheck(first, PhaseResult{Status: StatusPass, FailInput: -1, Records: 3, Elapsed: 11, Limit: 13}, NearLimit{Status: StatusPass, Input: -1, CPU: 11, Limit: 13})
	v := newVerdict(4, &task.Sample{TaskID: "HumanEval/53", ID: 2, Solution: "def add(x, y):\n    return x + y\n"}, task.Plus, pr, digest.Of([]byte("truth")).Hex())
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got journalVerdict
	if err := strictjson.Decode(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(got, v) || got.Result.Near.Recheck == nil || got.Result.Near.DecidedBy != DecidedByRecheck {
		t.Errorf("journaled %+v, read back %+v", v, got)
	}
}

// The record lists one rechecked execution per task, phase and program,
// with the samples it served, and nothing for verdicts run once.
func TestRechecks(t *testing.T) {
	n := &NearLimit{Status: StatusPass, Input: 1, CPU: 3.5, Limit: 4, DecidedBy: DecidedByFirst, Recheck: &NearLimit{Status: StatusPass, Input: 1, CPU: 3.4, Limit: 4}}
	slow, fast := "def f():\n    slow()\n", "def f():\n    pass\n"
	res := func(id int, prog string, base, plus *NearLimit) *SampleResult {
		return &SampleResult{Sample: &task.Sample{TaskID: "HumanEval/1", ID: id, Solution: prog},
			Base: PhaseResult{Status: StatusPass, Near: base}, Plus: &PhaseResult{Status: StatusPass, Near: plus}}
	}
	got, _ := Rechecks(ResultSlice{res(0, slow, nil, n), res(1, fast, nil, nil), res(2, slow, nil, n), res(3, fast, &NearLimit{Status: StatusPass, Input: 0, CPU: 7, Limit: 8}, nil)}, DefaultRunLimits())
	if got.Rule != RecheckRule || got.Margin != DefaultNearLimitMargin || len(got.Rechecked) != 1 {
		t.Fatalf("%+v", got)
	}
	v := got.Rechecked[0]
	if v.Task != "HumanEval/1" || v.Phase != "plus" || !reflect.DeepEqual(v.Completions, []int{0, 2}) || v.First.Recheck != nil || v.Recheck != *n.Recheck || v.DecidedBy != DecidedByFirst || v.Status != StatusPass || len(v.ProgramSHA256) != 64 {
		t.Errorf("%+v", v)
	}
}

func TestNearLimitMarginIsALimit(t *testing.T) {
	for _, m := range []float64{0, 1, -0.1, 1.5} {
		l := DefaultRunLimits()
		l.NearLimitMargin = m
		if l.Validate() == nil {
			t.Errorf("margin %v accepted", m)
		}
	}
	if err := DefaultRunLimits().Validate(); err != nil {
		t.Error(err)
	}
}

// A run journaled before the margin was a limit is not resumed under a
// rule it was not scored by.
func TestResumeWantsTheMargin(t *testing.T) {
	old := DefaultRunLimits()
	old.NearLimitMargin = 0
	for _, c := range []struct {
		limits RunLimits
		refuse bool
	}{{old, true}, {DefaultRunLimits(), false}} {
		p := &priorRun{id: "20260101-000000-abcd", header: journalHeader{Identity: RunIdentity{Limits: c.limits}, DatasetChoice: "humanevalplus"}}
		o := Options{}
		err := p.adopt(&o)
		if c.refuse && (err == nil || exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "near_limit_margin")) {
			t.Errorf("margin %v: %v, want exit 4 naming near_limit_margin", c.limits.NearLimitMargin, err)
		}
		if !c.refuse && (err != nil || o.Limits != c.limits) {
			t.Errorf("margin %v: %v, limits %+v", c.limits.NearLimitMargin, err, o.Limits)
		}
	}
}
