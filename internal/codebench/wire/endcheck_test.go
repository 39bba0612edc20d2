package wire

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// endProbe drives the supervisor's JobRun through one job's end with a
// job clock it sets, on this host's Python: input 0's result came at job
// CPU time "last", input 1 has a limit of 1 s and the list one of 6 s,
// and input 1's call ends (a result, or the child ending its pipe) at job
// CPU time "at". "checked": the supervisor's checks ran every 0.05 s of
// job CPU time until then; "struck": they ran until one found a limit
// struck, and none after; "unchecked": none ran after input 0's result,
// as on a host that did not schedule the supervisor while the call ran.
// It prints, for each case, the verdict that decided() gives and the
// overrun's figures.
const endProbe = `
import json, os, select, sys, types
sys.path.insert(0, sys.argv[1])
import supervisor as sv

sv.job_runnable = lambda skip: True  # never idle: the probe's clock alone decides


class Clock:
    resolution = 0.0

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Out:
    def record(self, gap, rec):
        pass

    def add(self, kind, body):
        pass


def running(overrun, last, n):
    """A job of n inputs (3, each with a limit of 1 s, or none) whose
    clocks stand as after input 0's result at job CPU time last (with no
    inputs: after the load mark at 0.2 s, its load allowance of 3 s
    standing)."""
    clock = Clock()
    job = {"job": 1, "n": n, "limits": [1.0] * n, "first_extra": 3.0, "phase_limit": 6.0, "clock_scale": 1.0,
           "wall_factor": 4.0, "record_cap": 1 << 16, "byte_cap": 1 << 20, "overrun": overrun,
           "input_lens": [3] * n, "program_len": 0, "expect": [0.0] * n}
    run = sv.JobRun(job, b"[[1],[2],[3]]" if n else b"[]", clock)
    r, w = os.pipe()
    run.ch = types.SimpleNamespace(rfd=r, skip=set())
    run.out = Out()
    run.status, run.detail = None, ""
    run.loaded = run.called = True
    run.cpu_start, run.cpu_loaded, run.cpu_last, run.cpu_now, run.win_cpu = 0.0, 0.2, last, last, last
    run.records, run.released, run.win_n, run.total = (1, 3, 2, 0) if n else (0, 0, 0, 0)
    run.cpu_limit = run.cpu_cap = 1.0 if n else 3.0
    run.past, run.past_cap, run.cpu_decided = None, 0.0, 0.0
    run.past_cpu = run.past_job_cpu = 0.0
    run.past_running = run.past_done = False
    run.buf = bytearray()
    run.idle_input = run.idle_total = 0.0
    run.wall_last, run.tick_wall, run.tick_cpu, run.next_check = 0.0, 0.0, last, 0.0
    run.poller = select.poll()
    run.poller.register(r, select.POLLIN)
    run.got_records = run.refilled = False
    return run, clock, w


cases = []
for overrun in (1.0, 1.25):
    for how in ("result", "exit"):
        for last, at in ((0.3, 1.0), (0.3, 1.4), (0.3, 1.7), (5.5, 6.6)):
            cases.append((overrun, how, last, at, 3))
    for at in (1.0, 3.5):
        cases.append((overrun, "exit", 0.2, at, 0))
for how in ("result", "exit"):
    # An overrun whose end comes after the list's limit: 4 times the
    # input's limit from 3 s is 7 s, the list's limit 6 s.
    cases.append((4.0, how, 3.0, 7.5, 3))
out = []
for overrun, how, last, at, n in cases:
    for timeline in ("checked", "struck", "unchecked"):
        run, clock, w = running(overrun, last, n)
        c = round(last + 0.05, 2)
        while timeline != "unchecked" and c < at - 1e-9 and run.status is None:
            if timeline == "struck" and run.past is not None:
                break
            clock.now = c
            run.check_time(run.next_check)
            c = round(c + 0.05, 2)
        if run.status is None:
            clock.now = at
            if how == "result":
                os.write(w, sv.U32.pack(2) + b"V1")
            else:
                os.close(w)
                w = None
            run.read_results()
        if w is not None:
            os.close(w)
        status, detail, cpu, _ = run.decided()
        out.append({"overrun": overrun, "how": how, "last": last, "at": at, "n": n, "timeline": timeline,
                    "status": status, "detail": detail, "past_cpu": run.past_cpu,
                    "past_running": run.past_running})
print(json.dumps(out))
`

// TestAJobsEndIsCheckedAsItsChecksAre: an input's call that struck its
// limit is the job's timeout, with one detail, whether the supervisor's
// checks found it while it ran or only its end did: a result that came too
// late, or the child ending its pipe. On a loaded host the checks may not
// run for a while; the child's end is read against the limits too, so the
// verdict does not depend on when they ran. (A child that spun past its
// limit and exited before a check ended "exited", and one whose late
// result a check had not seen got another detail: TestOverrunKeepsTheVerdict
// met both on a busy machine.) Where a reading finds both the input's
// limit and the list's passed, the one that struck first decides, as the
// checks would have found it (the list's is a timeout, the input's a
// fail). With an overrun, a call that ended within it ended within it by
// every timeline, and one that used more than it was running at its end,
// whether or not a check had found its limit struck before.
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
	var rows []struct {
		Overrun     float64 `json:"overrun"`
		How         string  `json:"how"`
		Last        float64 `json:"last"`
		At          float64 `json:"at"`
		N           int     `json:"n"`
		Timeline    string  `json:"timeline"`
		Status      string  `json:"status"`
		Detail      string  `json:"detail"`
		PastCPU     float64 `json:"past_cpu"`
		PastRunning bool    `json:"past_running"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("the probe's output %q: %v", b, err)
	}
	if len(rows) != 66 {
		t.Fatalf("%d cases, want 66", len(rows))
	}
	for _, r := range rows {
		name := fmt.Sprintf("overrun %g, %d inputs, from %.2f s, %s at %.2f s, %s", r.Overrun, r.N, r.Last, r.How, r.At, r.Timeline)
		used := r.At - r.Last
		limit := 1.0
		if r.N == 0 {
			limit = 3 // the load allowance stands
		}
		list := r.N > 0 && r.Last+limit > 6 // the list's limit (6 s) struck before input 1's
		if used <= limit && r.How == "result" {
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
		case used <= limit && r.N == 0:
			want.status, want.detail = "done", ""
		case used <= limit:
			want.status, want.detail = "exited", "the child ended after 1 of 3 records"
		case r.N == 0:
			// No input's limit nor overrun: what timed out is the program.
			want.detail = "loading the program used more than 3.00 s of CPU time"
		case list:
			want.detail = "the list used more than 6.0 s of CPU time"
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
