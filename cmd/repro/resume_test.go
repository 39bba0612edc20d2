package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/sandbox"
)

// resumeJSON is the part of humaneval --json that resuming and sharing
// report.
type resumeJSON struct {
	RunID       string `json:"run_id"`
	RunDir      string `json:"run_dir"`
	ResultsFile string `json:"results_file"`
	Error       string `json:"error"`
	Reaped      []struct {
		ID       string `json:"id"`
		OwnerPID int    `json:"owner_pid"`
	} `json:"reaped_containers"`
	Scoring *struct {
		Jobs   int `json:"jobs"`
		Shared int `json:"shared_executions"`
		Reused int `json:"reused_verdicts"`
	} `json:"scoring"`
	Journal *struct {
		Entries     int      `json:"entries"`
		Head        string   `json:"head_sha256"`
		ResumedFrom string   `json:"resumed_from"`
		Resumed     int      `json:"resumed_verdicts"`
		Rescored    int      `json:"rescored_verdicts"`
		Cache       bool     `json:"cache"`
		Cached      int      `json:"cached_verdicts"`
		CacheRuns   []string `json:"cache_runs"`
	} `json:"journal"`
}

func parseResumeJSON(t *testing.T, r result) resumeJSON {
	t.Helper()
	var h resumeJSON
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return h
}

// resumeSamples are shardSamples over 6 tasks plus, per task, the
// canonical solution after a 0.4 s sleep (so that a run lasts long enough
// to be stopped while it scores), every task's samples given twice more, as
// low-temperature sampling repeats programs.
func resumeSamples(t *testing.T) string {
	t.Helper()
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, shardSamples(t, 6))), "\n") {
		lines = append(lines, l)
		var s struct {
			TaskID   string `json:"task_id"`
			Solution string `json:"solution"`
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		if !seen[s.TaskID] {
			seen[s.TaskID] = true
			lines = append(lines, sampleLine(s.TaskID, "import time\ntime.sleep(0.4)\n"+s.Solution))
		}
	}
	one := strings.Join(lines, "\n")
	return writeSamples(t, one, one, one)
}

// journalVerdicts counts the verdict entries of a journal as it is on
// disk now (only synced batches are there: the writer flushes as it
// syncs).
func journalVerdicts(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte(`"type":"verdict"`))
}

// killAt starts a run, waits until its journal holds at least n verdicts
// and then stops it with stop (which returns once the process is gone or
// will exit, and whether the run's containers are to be left for the next
// run to find); it returns the run's id, its process ID and its stderr.
func killAt(t *testing.T, home string, env []string, n int, samples string, stop func(*os.Process) (leave bool)) (string, int, string) {
	t.Helper()
	cmd := exec.Command(reproBin, "humaneval", "--samples", samples, "--tasks", "0-5", "--json", "--parallel", "2")
	cmd.Env = append(append(os.Environ(), "REPRO_HOME="+home), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(home, "runs", "humaneval-*", "journal.jsonl"))
	seen := map[string]bool{}
	for _, p := range before {
		seen[p] = true
	}
	deadline := time.Now().Add(4 * time.Minute)
	var path string
	for time.Now().Before(deadline) {
		if path == "" {
			now, _ := filepath.Glob(filepath.Join(home, "runs", "humaneval-*", "journal.jsonl"))
			for _, p := range now {
				if !seen[p] {
					path = p
				}
			}
		}
		if path != "" && journalVerdicts(path) >= n {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if path == "" || journalVerdicts(path) < n {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run's journal did not reach %d verdicts: %s", n, stderr.String())
	}
	if !stop(cmd.Process) {
		// What the engine held for the run is gone with it.
		removeContainersOf(t, cmd.Process.Pid)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the run did not end after it was stopped: %s", stderr.String())
	}
	t.Logf("stopped after %d journaled verdicts: %s", journalVerdicts(path), strings.TrimSpace(stderr.String()))
	return filepath.Base(filepath.Dir(path)), cmd.Process.Pid, stderr.String()
}

// engineProxy stands between repro and the Docker engine's socket, so
// that a test can take the engine away from a run (every connection cut,
// no new one accepted; killAt then removes the run's containers, as a
// stopped engine does) without stopping the engine other work shares.
type engineProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newEngineProxy(t *testing.T) (*engineProxy, string) {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		t.Fatalf("DOCKER_HOST %q: the proxy speaks to a unix socket", h)
	}
	dir, err := os.MkdirTemp("", "repro-engine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &engineProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("unix", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p, "unix://" + sock
}

// stop takes the engine away.
func (p *engineProxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestHumanEvalResumeAfterKill scores a samples file once without a stop,
// then twice stopped at a random point of the scoring: once by SIGKILL
// (as an OOM kill or a reboot does) and once by taking the engine away
// from the run. Each stopped run is resumed with --resume RUN_ID alone; the
// resumed run must decide only what the journal lacked, hold every verdict
// of the uninterrupted run in its eval_results.json, and verify. A resume
// whose samples or limits differ stops with exit 4 naming them; a run that
// completed is not resumed. Equal programs share one execution, and a
// second run with --cache runs nothing and decides the same.
func TestHumanEvalResumeAfterKill(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	samples := resumeSamples(t)

	r := repro(t, env, "humaneval", "--samples", samples, "--tasks", "0-5", "--json", "--parallel", "2")
	if r.code != 0 {
		t.Fatalf("uninterrupted run: %d %s", r.code, r.stderr)
	}
	whole := parseResumeJSON(t, r)
	want := readShardEvalResults(t, whole.ResultsFile)
	// 6 tasks × 4 programs + 1, each given 3 times, two phases.
	if whole.Scoring == nil || whole.Scoring.Jobs != 2*25 || whole.Scoring.Shared != 2*2*25 {
		t.Fatalf("scoring %+v: want 50 executions and 100 shared verdicts", whole.Scoring)
	}
	total := whole.Journal.Entries - 1
	// Under --json, the scoring progress on stderr ends with the verdicts
	// of every sample, as the results file has them.
	passed, samplesN := 0, 0
	for _, es := range want.Eval {
		for _, e := range es {
			samplesN++
			if e.BaseStatus == "pass" && e.PlusStatus != nil && *e.PlusStatus == "pass" {
				passed++
			}
		}
	}
	var last struct {
		Stage    string `json:"stage"`
		Done     int    `json:"done"`
		Total    int    `json:"total"`
		Verdicts *struct {
			Samples, Passed, Failed int
		} `json:"verdicts"`
	}
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, `"stage":"scoring"`) {
			json.Unmarshal([]byte(line), &last)
		}
	}
	if v := last.Verdicts; last.Done != last.Total || v == nil || v.Samples != samplesN || v.Passed != passed || v.Failed != samplesN-passed {
		t.Errorf("last scoring progress %+v %+v: want %d passed and %d failed of %d samples", last, v, passed, samplesN-passed, samplesN)
	}
	for task, es := range want.Eval {
		third := len(es) / 3
		for i := 0; i < third; i++ {
			for _, j := range []int{i + third, i + 2*third} {
				if es[i].Solution != es[j].Solution || es[i].BaseStatus != es[j].BaseStatus || *es[i].PlusStatus != *es[j].PlusStatus {
					t.Errorf("%s: sample %d and its copy %d: %s/%s, %s/%s", task, i, j, es[i].BaseStatus, *es[i].PlusStatus, es[j].BaseStatus, *es[j].PlusStatus)
				}
			}
		}
	}
	if r := repro(t, env, "runs", "verify", whole.RunID); r.code != 0 {
		t.Fatalf("runs verify of the uninterrupted run: %d %s", r.code, r.stderr)
	}
	if r := repro(t, env, "humaneval", "--resume", whole.RunID); r.code != 2 || !strings.Contains(r.stderr, "completed") {
		t.Errorf("resume of a completed run: %d %s", r.code, r.stderr)
	}

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	resume := func(t *testing.T, stopped string) resumeJSON {
		r := repro(t, env, "humaneval", "--resume", stopped, "--json")
		if r.code != 0 {
			t.Fatalf("resume of %s: %d %s", stopped, r.code, r.stderr)
		}
		got := parseResumeJSON(t, r)
		sameVerdicts(t, want, readShardEvalResults(t, got.ResultsFile))
		if got.Journal == nil || got.Journal.ResumedFrom != stopped || got.Journal.Resumed < 1 {
			t.Errorf("journal report %+v: want verdicts resumed from %s", got.Journal, stopped)
		}
		if got.Journal.Resumed+got.Scoring.Jobs+got.Scoring.Shared != total {
			t.Errorf("resumed %d + executed %d + shared %d verdicts, want %d", got.Journal.Resumed, got.Scoring.Jobs, got.Scoring.Shared, total)
		}
		if r := repro(t, env, "runs", "verify", got.RunID); r.code != 0 {
			t.Errorf("runs verify of the resumed run: %d %s", r.code, r.stderr)
		}
		return got
	}

	t.Run("SIGKILL", func(t *testing.T) {
		n := 1 + rng.Intn(total/2)
		own := writeSamples(t, strings.TrimSpace(readFile(t, samples)))
		stopped, pid, _ := killAt(t, home, nil, n, own, func(p *os.Process) bool {
			p.Signal(syscall.SIGKILL)
			waitExited(t, p.Pid, time.Minute)
			return true
		})
		// The killed run's containers live on; the next run removes them.
		left := containersOf(t, pid)
		if len(left) == 0 {
			t.Errorf("the killed run left no container: the reaping below proves nothing")
		}
		// What differs is refused, naming it.
		r := repro(t, env, "humaneval", "--resume", stopped, "--min-time-limit", "5")
		if r.code != 4 || !strings.Contains(r.stderr, "limits") {
			t.Errorf("resume with other limits: %d %s", r.code, r.stderr)
		}
		told := r.stderr
		orig := readFile(t, own)
		if err := os.WriteFile(own, []byte(orig+sampleLine("HumanEval/0", "def x(): pass\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = repro(t, env, "humaneval", "--resume", stopped)
		if r.code != 4 || !strings.Contains(r.stderr, "samples_sha256") {
			t.Errorf("resume with changed samples: %d %s", r.code, r.stderr)
		}
		told += r.stderr
		if err := os.WriteFile(own, []byte(orig), 0o644); err != nil {
			t.Fatal(err)
		}
		got := resume(t, stopped)
		if now := containersOf(t, pid); len(now) > 0 {
			t.Errorf("containers %v of the killed run outlived the resumed run's start", now)
		}
		// Any repro that connects to the engine meanwhile (the runs above,
		// tests side by side) may have removed them first.
		for _, c := range got.Reaped {
			if c.OwnerPID != pid || !slices.Contains(left, c.ID) {
				t.Errorf("the resumed run removed %+v, not a container of the killed run %d %v", c, pid, left)
			}
		}
		for _, c := range got.Reaped {
			told += "removed sandbox container " + c.ID[:12]
		}
		toldOf := 0
		for _, id := range left {
			if strings.Contains(told, "removed sandbox container "+id[:12]) {
				toldOf++
			}
		}
		t.Logf("the killed run left %d containers; the next runs told of removing %d of them", len(left), toldOf)
	})

	t.Run("SIGINT", func(t *testing.T) {
		n := 1 + rng.Intn(total/2)
		stopped, pid, stderr := killAt(t, home, nil, n, samples, func(p *os.Process) bool {
			sent := time.Now()
			p.Signal(os.Interrupt)
			// Ctrl-C stops the run within about a second; the bound leaves
			// room for a loaded machine.
			waitExited(t, p.Pid, 10*time.Second)
			t.Logf("the run exited %v after SIGINT", time.Since(sent).Round(time.Millisecond))
			return true
		})
		if left := containersOf(t, pid); len(left) > 0 {
			t.Errorf("the interrupted run left containers %v", left)
		}
		if !strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "--resume "+stopped) || !strings.Contains(stderr, `"exit_code":1`) {
			t.Errorf("the interrupted run does not say how to continue it (exit 1):\n%s", stderr)
		}
		resume(t, stopped)
	})

	t.Run("EngineStopped", func(t *testing.T) {
		proxy, host := newEngineProxy(t)
		n := 1 + rng.Intn(total/2)
		stopped, _, _ := killAt(t, home, []string{"DOCKER_HOST=" + host}, n, samples, func(*os.Process) bool { proxy.stop(); return false })
		resume(t, stopped)
	})

	t.Run("Cache", func(t *testing.T) {
		r := repro(t, env, "humaneval", "--samples", samples, "--tasks", "0-5", "--json", "--cache")
		if r.code != 0 {
			t.Fatalf("run with --cache: %d %s", r.code, r.stderr)
		}
		got := parseResumeJSON(t, r)
		sameVerdicts(t, want, readShardEvalResults(t, got.ResultsFile))
		if got.Journal == nil || !got.Journal.Cache || got.Journal.Cached != total || got.Scoring.Jobs != 0 || len(got.Journal.CacheRuns) == 0 {
			t.Errorf("--cache: journal %+v, scoring %+v: want all %d verdicts reused, none run", got.Journal, got.Scoring, total)
		}
		if r := repro(t, env, "runs", "verify", got.RunID); r.code != 0 {
			t.Errorf("runs verify of the cached run: %d %s", r.code, r.stderr)
		}
		// Other limits (a value no earlier run in the shared home used):
		// no earlier run matches, everything runs.
		limit := fmt.Sprintf("%.6f", 4.5+float64(time.Now().UnixNano()%1e6)/1e7)
		r = repro(t, env, "humaneval", "--samples", samples, "--tasks", "0-5", "--json", "--cache", "--min-time-limit", limit)
		if r.code != 0 {
			t.Fatalf("run with --cache and other limits: %d %s", r.code, r.stderr)
		}
		other := parseResumeJSON(t, r)
		if other.Journal.Cached != 0 || other.Scoring.Jobs != whole.Scoring.Jobs {
			t.Errorf("--cache with other limits: journal %+v, scoring %+v: want nothing reused", other.Journal, other.Scoring)
		}
	})
}

// journaledVerdict is a verdict entry of a run's journal, as the tests
// read it.
type journaledVerdict struct {
	Type   string `json:"type"`
	Sample int    `json:"sample"`
	Task   string `json:"task"`
	Phase  string `json:"phase"`
	Result struct {
		Status string `json:"status"`
	} `json:"result"`
	Reused string `json:"reused_from"`
	Truth  string `json:"ground_truth_sha256"`
}

// journaledVerdicts reads the verdict entries of run id's journal.
func journaledVerdicts(t *testing.T, home, id string) []journaledVerdict {
	t.Helper()
	var out []journaledVerdict
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(home, "runs", id, "journal.jsonl"))), "\n") {
		var e struct {
			Body journaledVerdict `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("run %s: journal line %q: %v", id, line, err)
		}
		if e.Body.Type == "verdict" {
			out = append(out, e.Body)
		}
	}
	return out
}

// TestHumanEvalResumeUnderNewGroundTruth: a run is stopped, the ground
// truth of a task it had judged is computed again (its record removed, as
// a user clearing the cache does), and the run is resumed. The resume
// takes over only the verdicts judged against the ground truth it judges
// by, decides that task's again and says how many; a later run with
// --cache likewise reuses nothing judged by another ground truth. Each
// verdict names the digest it was judged against.
func TestHumanEvalResumeUnderNewGroundTruth(t *testing.T) {
	home := humanevalHome(t, false)
	samples := resumeSamples(t)
	stopped, _, _ := killAt(t, home, nil, 40, samples, func(p *os.Process) bool {
		p.Signal(os.Interrupt)
		waitExited(t, p.Pid, time.Minute)
		return true
	})
	before := journaledVerdicts(t, home, stopped)
	// The task the stopped run judged most, and its status per sample
	// and phase.
	per := map[string]int{}
	status := map[string]string{}
	for _, v := range before {
		per[v.Task]++
		status[fmt.Sprintf("%d/%s", v.Sample, v.Phase)] = v.Result.Status
		if len(v.Truth) != 64 {
			t.Errorf("sample %d %s journaled without its ground truth's digest: %+v", v.Sample, v.Phase, v)
		}
	}
	redo := ""
	for task, n := range per {
		if redo == "" || n > per[redo] || n == per[redo] && task < redo {
			redo = task
		}
	}
	recompute := func(task string) {
		t.Helper()
		n := strings.TrimPrefix(task, "HumanEval/")
		recs, _ := filepath.Glob(filepath.Join(home, "state", "humaneval", "truth-*", n+".json"))
		if len(recs) != 1 {
			t.Fatalf("ground-truth records of %s: %v, want one", task, recs)
		}
		if err := os.Remove(recs[0]); err != nil {
			t.Fatal(err)
		}
	}
	recompute(redo)

	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--resume", stopped, "--json")
	if r.code != 0 {
		t.Fatalf("resume of %s: %d %s", stopped, r.code, r.stderr)
	}
	got := parseResumeJSON(t, r)
	after := journaledVerdicts(t, home, got.RunID)
	total := 0
	seen := map[string]bool{}
	for _, v := range after {
		k := fmt.Sprintf("%d/%s", v.Sample, v.Phase)
		if !seen[k] {
			seen[k] = true
			total++
		}
	}
	j := got.Journal
	if j == nil || j.ResumedFrom != stopped || j.Rescored != per[redo] || j.Resumed != len(before)-per[redo] {
		t.Fatalf("journal report %+v: want %d verdicts of %s decided again and the other %d resumed", j, per[redo], redo, len(before)-per[redo])
	}
	if j.Resumed+got.Scoring.Jobs+got.Scoring.Shared != total {
		t.Errorf("resumed %d + executed %d + shared %d verdicts, want %d", j.Resumed, got.Scoring.Jobs, got.Scoring.Shared, total)
	}
	// The verdicts decided again are journaled after the resume, under
	// the new digest, and equal the first ones (the outputs did not
	// change, only the times measured).
	digests := map[string]map[string]bool{}
	for _, v := range after[len(before):] {
		if digests[v.Task] == nil {
			digests[v.Task] = map[string]bool{}
		}
		digests[v.Task][v.Truth] = true
		if was, ok := status[fmt.Sprintf("%d/%s", v.Sample, v.Phase)]; ok && (v.Task != redo || was != v.Result.Status) {
			t.Errorf("sample %d %s (%s) decided again: %s, first %s", v.Sample, v.Phase, v.Task, v.Result.Status, was)
		}
	}
	for _, v := range before {
		if v.Task == redo && digests[redo][v.Truth] {
			t.Errorf("%s's verdicts decided again under the digest %s they were first judged by", redo, v.Truth)
		}
	}
	if r := repro(t, []string{"REPRO_HOME=" + home}, "runs", "verify", got.RunID); r.code != 0 {
		t.Errorf("runs verify of the resumed run: %d %s", r.code, r.stderr)
	}

	// --cache: another task's ground truth computed again; only its
	// verdicts are decided, every other is reused.
	other := ""
	for _, v := range after {
		if v.Task != redo && (other == "" || v.Task < other) {
			other = v.Task
		}
	}
	recompute(other)
	r = repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", samples, "--tasks", "0-5", "--json", "--cache")
	if r.code != 0 {
		t.Fatalf("run with --cache: %d %s", r.code, r.stderr)
	}
	cached := parseResumeJSON(t, r)
	reused := 0
	for _, v := range journaledVerdicts(t, home, cached.RunID) {
		if (v.Reused != "") == (v.Task == other) {
			t.Errorf("--cache after %s's ground truth was computed again: sample %d %s of %s reused from %q", other, v.Sample, v.Phase, v.Task, v.Reused)
		}
		if v.Reused != "" {
			reused++
		}
	}
	if cached.Journal == nil || cached.Journal.Cached != reused || reused == 0 || cached.Scoring.Jobs == 0 {
		t.Errorf("--cache: journal %+v, scoring %+v: want %d verdicts reused and %s's run", cached.Journal, cached.Scoring, reused, other)
	}
}

// containersOf lists the IDs of the sandbox containers the repro process
// pid created.
func containersOf(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", "label="+sandbox.LabelOwner+"="+strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// waitExited waits until process pid, a child of this one, has exited (it
// is a zombie until waited for), failing the test after bound.
func waitExited(t *testing.T, pid int, bound time.Duration) {
	t.Helper()
	for start := time.Now(); time.Since(start) < bound; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return
		}
	}
	t.Errorf("process %d still runs %v after it was stopped", pid, bound)
}

// removeContainersOf removes the sandbox containers the repro process pid
// created, through the engine's own socket.
func removeContainersOf(t *testing.T, pid int) {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+sandbox.LabelOwner+"="+strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		if out, err := exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).CombinedOutput(); err != nil {
			t.Fatalf("docker rm: %v %s", err, out)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Ctrl-C stops the jobs in flight, not only the queue: a run whose sample
// spins far past any wait here (its limit is 300 CPU-s an input) exits
// within seconds of SIGINT, leaves no container, and its journal holds no
// verdict of the sample it stopped. (Before, a run waited for each job in
// flight to end: 27 s on real samples at load 15.)
func TestHumanEvalInterruptStopsJobsInFlight(t *testing.T) {
	home := humanevalHome(t, true)
	fast := "def add(x, y):\n    return x + y\n"
	spin := "def add(x, y):\n    while True:\n        pass\n"
	samples := writeSamples(t, sampleLine("HumanEval/53", fast), sampleLine("HumanEval/53", spin))
	before, _ := filepath.Glob(filepath.Join(home, "runs", "humaneval-*", "journal.jsonl"))
	cmd, _, stderr := startHumanEval(t, home, "--samples", samples, "--dataset", "humanevalplus-mini", "--tasks", "53",
		"--min-time-limit", "300", "--parallel", "2", "--json")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The fast sample's first verdict is journaled once its job ends; the
	// spinning sample's first job started beside it or right after.
	var journal string
	for deadline := time.Now().Add(4 * time.Minute); journal == "" || journalVerdicts(journal) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("no verdict was journaled: %s", stderr)
		}
		now, _ := filepath.Glob(filepath.Join(home, "runs", "humaneval-*", "journal.jsonl"))
		for _, p := range now {
			if !slices.Contains(before, p) {
				journal = p
			}
		}
	}
	time.Sleep(2 * time.Second)
	const bound = 60 * time.Second // a loaded machine's engine, far below the spin
	sent := time.Now()
	cmd.Process.Signal(os.Interrupt)
	var err error
	select {
	case err = <-exited:
	case <-time.After(bound):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the run still ran %v after SIGINT: its job in flight was not stopped", bound)
	}
	t.Logf("the run exited %v after SIGINT", time.Since(sent).Round(time.Millisecond))
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %v, want 1 (interrupted):\n%s", err, stderr)
	}
	if left := containersOf(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the interrupted run left containers %v", left)
	}
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []int // the sample of each
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Body struct {
				Type   string `json:"type"`
				Sample int    `json:"sample"`
			} `json:"body"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Body.Type == "verdict" {
			verdicts = append(verdicts, e.Body.Sample)
		}
	}
	for _, v := range verdicts {
		if v != 0 {
			t.Errorf("the journal holds a verdict of the stopped sample %d", v)
		}
	}
	if len(verdicts) == 0 {
		t.Errorf("the journal lost the fast sample's verdicts:\n%s", b)
	}
}
