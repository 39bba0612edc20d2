package wire

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// endProbe drives the supervisor's JobRun through one job with a job
// clock it sets, on this host's Python, by the supervisor's own methods
// from the child's start (begin) on: the child's L record at job CPU time
// 0, its load mark at 0.2 s and, in a job of 3 inputs (limits 6, 1 and 1
// s; the list's 6 s), input 0's result at "last"; then input 1's call, or
// a job with no inputs (its load allowance of 3 s), ends (a result, or the
// child ending its pipe) at job CPU time "at". Timelines: "checked", the
// supervisor's checks ran every 0.05 s of job CPU time until then;
// "struck", they ran until one found a limit struck, and none after;
// "late", one check ran, at the end's own reading; "unchecked", none ran,
// as on a host that did not schedule the supervisor while the call ran.
// It prints, for each case, the verdict that decided() gives and the
// overrun's figures. (The idle rule is out of it: the job is always
// runnable here.)
const endProbe = `
import json, os, select, sys, types
sys.path.insert(0, sys.argv[1])
import supervisor as sv

sv.job_runnable = lambda skip: True


class Clock:
    resolution = 0.0

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Out:
    def add(self, kind, body):
        pass

    def flush(self):
        pass

    def record(self, gap, rec):
        pass


def record(w, kind, body=b""):
    os.write(w, sv.U32.pack(1 + len(body)) + kind + body)


def started(n, overrun=1.0, scale=1.0, phase=6.0):
    """A job of n inputs, its child started and its L record taken at job
    CPU time 0."""
    clock = Clock()
    job = {"job": 1, "n": n, "limits": [6.0, 1.0, 1.0][:n], "first_extra": 3.0, "phase_limit": phase,
           "clock_scale": scale, "wall_factor": 4.0, "record_cap": 1 << 16, "byte_cap": 1 << 20,
           "overrun": overrun, "input_lens": [3] * n, "program_len": 0, "expect": [0.0] * n}
    run = sv.JobRun(job, b"[[1],[2],[3]]" if n else b"[]", clock)
    r, w = os.pipe()
    er, ew = os.pipe()
    jr, jw = os.pipe()
    os.set_blocking(jw, False)
    child = types.SimpleNamespace(rfd=r, efd=er, jw=jw, skip=set(), close_jw=lambda: None)
    run.begin(child, Out())
    record(w, b"L")
    run.read_results()
    return run, clock, w


def running(overrun, last, n, phase):
    run, clock, w = started(n, overrun, phase=phase)
    clock.now = 0.2
    record(w, b"G")
    run.read_results()
    if n:
        clock.now = last
        record(w, b"V", b"0")
        run.read_results()
    assert run.status is None and run.records == (1 if n else 0), (run.status, run.detail)
    return run, clock, w


cases = []
for overrun in (1.0, 1.25):
    for how in ("result", "exit"):
        for last, at in ((0.3, 1.0), (0.3, 1.4), (0.3, 1.7), (5.5, 6.6)):
            cases.append((overrun, how, last, at, 3, 6.0))
    for at in (1.0, 3.1):
        cases.append((overrun, "exit", 0.0, at, 0, 6.0))
    # As a job with no inputs runs: its list's limit (1 s) below its load
    # allowance.
    for at in (0.9, 1.5):
        cases.append((overrun, "exit", 0.0, at, 0, 1.0))
for how in ("result", "exit"):
    # An overrun whose end comes after the list's limit: 4 times input 1's
    # limit from 3 s is 7 s, the list's limit 6 s.
    cases.append((4.0, how, 3.0, 7.5, 3, 6.0))
    # One whose end (4.25 s) comes before the list's limit, read only past
    # both.
    cases.append((1.25, how, 3.0, 6.5, 3, 6.0))
out = []
for overrun, how, last, at, n, phase in cases:
    for timeline in ("checked", "struck", "late", "unchecked"):
        run, clock, w = running(overrun, last, n, phase)
        checks = []
        if timeline == "late":
            checks = [at]
        elif timeline != "unchecked":
            c = round(max(last, 0.2) + 0.05, 2)
            while c < at - 1e-9:
                checks.append(c)
                c = round(c + 0.05, 2)
        for c in checks:
            if run.status is not None or timeline == "struck" and run.past is not None:
                break
            clock.now = c
            run.check_time(run.next_check)
        if run.status is None:
            clock.now = at
            if how == "result":
                record(w, b"V", b"1")
            else:
                os.close(w)
                w = None
            run.read_results()
        if w is not None:
            os.close(w)
        status, detail, cpu, _ = run.decided()
        out.append({"overrun": overrun, "how": how, "last": last, "at": at, "n": n, "phase": phase, "timeline": timeline,
                    "status": status, "detail": detail, "past_cpu": run.past_cpu,
                    "past_running": run.past_running})
# Under gVisor's clock (clock_scale 8) the load allowance is applied at 8
# times its value: a program that fails to load (M) after 5 s of job CPU
# time, under that, has released no input, so no window's limit applies.
run, clock, w = started(3, scale=8.0)
clock.now = 5.0
record(w, b"M", b"NameError")
run.read_results()
status, detail, _, _ = run.decided()
print(json.dumps({"cases": out, "load_failure": {"status": status, "detail": detail}}))
`

// TestAJobsEndIsCheckedAsItsChecksAre: an input's call that struck its
// limit is the job's timeout, with one detail, whether the supervisor's
// checks found it while it ran, one late check found it, or only its end
// did: a result that came too late, or the child ending its pipe. On a
// loaded host the checks may not run for a while; every reading is held to
// the limits alike, so the verdict does not depend on when they ran. (A
// child that spun past its limit and exited before a check ended
// "exited", and one whose late result a check had not seen got another
// detail: TestOverrunKeepsTheVerdict met both on a busy machine.) Where a
// reading is past two limits, the one that struck first decides, as the
// checks would have found it: the list's before an input's (a timeout,
// not a fail), the list's before an overrun's end (not "still running"),
// or the overrun's end before the list's. A job with no inputs is held to
// its load allowance from its L record to its end, named so (a timeout),
// with no overrun; and a program that fails to load within its allowance
// as gVisor's clock applies it is stopped, not held to a window that was
// never released.
func TestAJobsEndIsCheckedAsItsChecksAre(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the supervisor's code (scripts/deps.sh installs it)")
	}
	dir, err := WriteHarness(filepath.Join(t.TempDir(), "h"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-B", "-c", endProbe, dir)
	b, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("the probe: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("the probe: %v", err)
	}
	var probe struct {
		Cases []struct {
			Overrun     float64 `json:"overrun"`
			How         string  `json:"how"`
			Last        float64 `json:"last"`
			At          float64 `json:"at"`
			N           int     `json:"n"`
			Phase       float64 `json:"phase"`
			Timeline    string  `json:"timeline"`
			Status      string  `json:"status"`
			Detail      string  `json:"detail"`
			PastCPU     float64 `json:"past_cpu"`
			PastRunning bool    `json:"past_running"`
		} `json:"cases"`
		LoadFailure struct {
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"load_failure"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		t.Fatalf("the probe's output %q: %v", b, err)
	}
	if lf := probe.LoadFailure; lf.Status != "stopped" {
		t.Errorf("a program that failed to load within its scaled allowance: %s (%s), want stopped", lf.Status, lf.Detail)
	}
	rows := probe.Cases
	if len(rows) != 112 {
		t.Fatalf("%d cases, want 112", len(rows))
	}
	for _, r := range rows {
		name := fmt.Sprintf("overrun %g, %d inputs, list's limit %g s, from %.2f s, %s at %.2f s, %s", r.Overrun, r.N, r.Phase, r.Last, r.How, r.At, r.Timeline)
		used := r.At - r.Last
		limit := 1.0
		if r.N == 0 {
			limit = 3 // the load allowance stands
		}
		// The list's limit struck, and before input 1's (or the load
		// allowance).
		list := r.At > r.Phase && r.Phase < r.Last+limit
		if used <= limit && !list && r.How == "result" {
			// A result within its limit, not the last: the job goes on.
			if r.Status != "" || r.Detail != "" {
				t.Errorf("%s: %s (%s), want the job still running", name, r.Status, r.Detail)
			}
			continue
		}
		want := struct {
			status, detail string
			running        bool
		}{"timeout", "input 1 used more than 1.00 s of CPU time", false}
		switch {
		case list:
			want.detail = fmt.Sprintf("the list used more than %.1f s of CPU time", r.Phase)
		case used <= limit && r.N == 0:
			want.status, want.detail = "done", ""
		case used <= limit:
			want.status, want.detail = "exited", "the child ended after 1 of 3 records"
		case r.N == 0:
			// No input's limit nor overrun: what timed out is the program.
			want.detail = "loading the program used more than 3.00 s of CPU time"
		default:
			// Still running at its overrun's end, where that came before
			// the list's limit.
			want.running = r.Overrun > 1 && used > r.Overrun && r.Last+r.Overrun <= 6
		}
		if r.Status != want.status || r.Detail != want.detail || r.PastRunning != want.running {
			t.Errorf("%s: %s (%s), running at the overrun's end %v; want %s (%s), %v", name, r.Status, r.Detail,
				r.PastRunning, want.status, want.detail, want.running)
		}
		overrun := r.Overrun > 1 && r.N > 0 && used > limit && !list
		if !overrun && r.PastCPU != 0 {
			t.Errorf("%s: past_cpu %.2f where no overrun ran, want 0", name, r.PastCPU)
		}
		if overrun && (r.PastCPU <= 1 || r.PastCPU > used+1e-9) {
			t.Errorf("%s: past_cpu %.2f, want the call's time past its limit, at most %.2f", name, r.PastCPU, used)
		}
	}
}
