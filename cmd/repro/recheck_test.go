package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/codebench"
)

// A time-sensitive verdict (a timeout whose input finished within its
// overrun, or a pass near its limit) is run once more in a fresh process
// before it is final; the results file keeps both measurements and the
// record lists the verdicts decided this way. A pass far from its limit is
// run once, and so is a timeout whose input still ran at the end of its
// overrun (1.25 times its limit at the default margin). A program cannot
// tell the re-run from the first run: one that leaves a mark wherever it
// can write and is slow unless it finds one is slow in both runs.
func TestHumanEvalRecheck(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	// Input 1 of each phase hangs, spins on 0.84 of its 1 CPU s (within
	// the 20 % margin), or returns at once; the marking program spins on
	// 1.08 CPU s, past its limit but within its overrun of 1.25 s, unless
	// it finds its mark. Input 0 carries the import
	// allowance, so each program keeps it fast. The spin's own clock counts
	// only the spin; the job's clock adds the input's setup and result, and
	// on a loaded host (under gVisor, whose clock counts waits for a CPU)
	// tens of milliseconds more: 0.16 s is left for those, and at least
	// 0.04 s above the margin for the job clock's tick.
	const (
		hang = "_n = 0\ndef add(x, y):\n    global _n\n    _n += 1\n    while _n == 2:\n        pass\n    return x + y\n"
		near = "import time\n_n = 0\ndef add(x, y):\n    global _n\n    _n += 1\n    if _n == 2:\n        t = time.process_time()\n" +
			"        while time.process_time() - t < 0.84:\n            pass\n    return x + y\n"
		fast = "def add(x, y):\n    return x + y\n"
		mark = "import os, time\n_n = 0\n_at = ['/tmp', '/dev/shm', '/var/tmp', os.getcwd(), os.path.expanduser('~')]\n" +
			"def add(x, y):\n    global _n\n    _n += 1\n    if _n == 2:\n" +
			"        if not any(os.path.exists(os.path.join(d, '.second-draw')) for d in _at):\n" +
			"            for d in _at:\n                try:\n                    open(os.path.join(d, '.second-draw'), 'w').close()\n" +
			"                except OSError:\n                    pass\n            t = time.process_time()\n" +
			"            while time.process_time() - t < 1.08:\n                pass\n    return x + y\n"
	)
	samples := writeSamples(t, sampleLine("HumanEval/53", hang), sampleLine("HumanEval/53", near), sampleLine("HumanEval/53", fast), sampleLine("HumanEval/53", mark))
	r := repro(t, env, "humaneval", "--samples", samples, "--dataset", "humanevalplus-mini", "--tasks", "53",
		"--min-time-limit", "1", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var h struct {
		RunID       string                   `json:"run_id"`
		RunDir      string                   `json:"run_dir"`
		ResultsFile string                   `json:"results_file"`
		Scoring     codebench.ScoreStats     `json:"scoring"`
		Recheck     *codebench.RecheckReport `json:"recheck"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("stdout: %v\n%s", err, r.stdout)
	}
	if h.Recheck == nil || h.Recheck.Rule != codebench.RecheckRule || h.Recheck.Margin != 0.2 {
		t.Fatalf("recheck report %+v", h.Recheck)
	}
	var res struct {
		Eval map[string][]codebench.ResultEntry `json:"eval"`
	}
	b, err := os.ReadFile(h.ResultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	es := res.Eval["HumanEval/53"]
	if len(es) != 4 {
		t.Fatalf("results %+v", res.Eval)
	}
	// The hang ran once where its clocks decide: its timeout was decided
	// at input 1's limit, and the input still ran at 1.25 times it by the
	// job clock, which the host's reading of the container covers. Under
	// gVisor on a loaded host the job clock also counts waits for a CPU,
	// the host's reading can fall below it, and then the hang is
	// rechecked like any time-sensitive verdict.
	decided := 0
	want := map[string]codebench.Status{"1 base": codebench.StatusPass, "1 plus": codebench.StatusPass,
		"3 base": codebench.StatusFail, "3 plus": codebench.StatusFail}
	for i, c := range []*codebench.PhaseClocks{es[0].BaseClocks, es[0].PlusClocks} {
		n := []*codebench.NearLimit{es[0].BaseNearLimit, es[0].PlusNearLimit}[i]
		if c == nil || c.Run != codebench.RunFirst || !c.OverrunRunning || c.OverrunCPU <= 1.25 {
			t.Errorf("hang: clocks %+v, want the first run, still running past 1.25 CPU s", c)
			continue
		}
		if c.OverrunDecided() {
			decided++
			if n != nil {
				t.Errorf("hang: near limit %+v, want none (its clocks decide)", n)
			}
			continue
		}
		want["0 "+[]string{"base", "plus"}[i]] = codebench.StatusFail
	}
	// Completions 1 (near) and 3 (mark) on base and plus, and the hang
	// where its clocks do not decide; 2 (fast) never.
	rechecks := len(want)
	for _, v := range h.Recheck.Rechecked {
		if len(v.Completions) != 1 {
			t.Errorf("rechecked %+v: want one completion", v)
			continue
		}
		k := strings.Join([]string{strconv.Itoa(v.Completions[0]), v.Phase}, " ")
		st, ok := want[k]
		if !ok {
			t.Errorf("completion %s was rechecked: %+v", k, v)
			continue
		}
		delete(want, k)
		if v.Status != st || v.DecidedBy != codebench.DecidedByFirst || v.ProgramSHA256 == "" || v.Task != "HumanEval/53" {
			t.Errorf("completion %s: %+v, want %s decided by the first run", k, v, st)
		}
		if st == codebench.StatusFail && (v.First.Input != 1 || !v.Recheck.AtLimit || v.Recheck.Status != codebench.StatusFail || v.Recheck.CPU != v.Recheck.Limit) {
			t.Errorf("timeout %s: measurements %+v / %+v, want input 1 stopped at its limit twice", k, v.First, v.Recheck)
		}
		if v.Completions[0] == 3 && (v.First.Overrun <= v.First.Limit || v.First.Overrun > 1.25*v.First.Limit || v.Recheck.Overrun <= v.Recheck.Limit) {
			t.Errorf("mark %s: measurements %+v / %+v, want input 1 finished within its overrun twice", k, v.First, v.Recheck)
		}
		if st == codebench.StatusPass && (v.First.Input != 1 || v.First.CPU < 0.8 || v.Recheck.Status != codebench.StatusPass || v.Recheck.Input != 1 || v.Recheck.CPU < 0.8 || v.Recheck.AtLimit) {
			t.Errorf("near %s: measurements %+v / %+v, want input 1 near its limit twice", k, v.First, v.Recheck)
		}
	}
	if len(want) > 0 {
		t.Errorf("not rechecked: %v (rechecked %+v)", want, h.Recheck.Rechecked)
	}
	if h.Scoring.Rechecked != rechecks || h.Scoring.RecheckChanged != 0 || h.Scoring.OverrunDecided != decided || h.Recheck.Overrun != 1.25 {
		t.Errorf("scoring stats %+v, overrun %v, want %d rechecked, none changed, %d decided by their overrun of 1.25", h.Scoring, h.Recheck.Overrun, rechecks, decided)
	}
	// The scorer's account of its slots adds up: the runs and the
	// rechecks lie within the time the workers were busy, which lies
	// within the stage's slots, and each holds at least the CPU time its
	// measurements name.
	sc := h.Scoring
	firstCPU, recheckCPU := 0.0, 0.0
	for _, v := range h.Recheck.Rechecked {
		firstCPU += v.First.CPU
		recheckCPU += v.Recheck.CPU
	}
	if sc.Busy > sc.Wall*time.Duration(sc.Supervisors) || sc.JobWall+sc.Starting+sc.Recheck > sc.Busy ||
		sc.JobWall.Seconds() < firstCPU || sc.Recheck.Seconds() < recheckCPU || sc.Recheck <= 0 {
		t.Errorf("scoring account: busy %v, runs %v, starting %v, rechecks %v in %v x %d slots; want runs >= %.2f s and rechecks >= %.2f s, within busy within the slots",
			sc.Busy, sc.JobWall, sc.Starting, sc.Recheck, sc.Wall, sc.Supervisors, firstCPU, recheckCPU)
	}
	var full codebench.RunReport
	if err := json.Unmarshal([]byte(r.stdout), &full); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	full.WriteText(&text)
	lines := []string{fmt.Sprintf("time-sensitive verdicts: %d run twice (recheck-faster-decides, margin 20%%), 0 decided by the re-run\n", rechecks)}
	if decided > 0 {
		lines = append(lines, fmt.Sprintf("timeouts run once: %d, still running at 1.25 times their limit\n", decided))
	}
	for _, want := range lines {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}

	for _, i := range []int{1, 3} {
		e := es[i]
		for _, n := range []*codebench.NearLimit{e.BaseNearLimit, e.PlusNearLimit} {
			if n == nil || n.Recheck == nil || n.DecidedBy != codebench.DecidedByFirst {
				t.Errorf("completion %d: near limit %+v, want a recheck decided by the first run", i, n)
			}
		}
	}
	for _, i := range []int{0, 3} {
		if es[i].BaseStatus != codebench.StatusFail || es[i].PlusStatus == nil || *es[i].PlusStatus != codebench.StatusFail {
			t.Errorf("completion %d: %+v, want fail on base and plus", i, es[i])
		}
		// A missing recheck is reported by the loop above.
		for _, n := range []*codebench.NearLimit{es[i].BaseNearLimit, es[i].PlusNearLimit} {
			if n != nil && n.Recheck != nil && (n.Recheck.Status != codebench.StatusFail || !n.Recheck.AtLimit) {
				t.Errorf("completion %d's re-run: %+v, want fail at the limit", i, n.Recheck)
			}
		}
	}
	if es[2].BaseNearLimit != nil || es[2].PlusNearLimit != nil || es[2].BaseStatus != codebench.StatusPass {
		t.Errorf("fast sample: %+v, want a pass with no recheck", es[2])
	}

	rec, err := os.ReadFile(filepath.Join(h.RunDir, "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rr struct {
		Extra struct {
			Recheck *codebench.RecheckReport `json:"recheck"`
		} `json:"extra"`
		Limits struct {
			Run codebench.RunLimits `json:"run"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(rec, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Extra.Recheck == nil || len(rr.Extra.Recheck.Rechecked) != rechecks || rr.Limits.Run.NearLimitMargin != 0.2 {
		t.Errorf("record: recheck %+v, limits %+v", rr.Extra.Recheck, rr.Limits.Run)
	}
	if v := repro(t, env, "runs", "verify", h.RunID); v.code != 0 {
		t.Errorf("runs verify: %d %s", v.code, v.stderr)
	}
}
