package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/testenv"
)

// humanevalHome returns a REPRO_HOME with the evaluator image pinned and
// the HumanEval datasets imported from the shared data. With shared set,
// one home serves every test that asks for it, so that ground truth is
// computed once per test process.
func humanevalHome(t *testing.T, shared bool) string {
	t.Helper()
	// Under -short the engine is left out: say so here, in every test, since
	// a skip inside sharedHome.Do would end the Once with no home and make
	// every later caller fail instead of skipping.
	testenv.Heavy(t, "the Docker engine")
	if shared {
		sharedHome.Do(func() { sharedHome.dir = newHumanEvalHome(t, sharedHomeDir(t)) })
		if sharedHome.dir == "" {
			t.Fatal("the shared test home could not be made")
		}
		return sharedHome.dir
	}
	return newHumanEvalHome(t, t.TempDir())
}

var sharedHome struct {
	sync.Once
	dir string
}

// sharedHomeDir is kept between test runs, so that ground truth is
// computed once per machine (REPRO_TEST_HUMANEVAL_HOME moves it). Run
// folders older than a day are removed; younger ones may belong to a test
// process running beside this one. The path names the run-key format
// (PKCS #8, with a trust file): a home whose key an earlier repro made
// keeps its own path, so builds of either format can share a machine
// without one migrating the other's key.
func sharedHomeDir(t *testing.T) string {
	d := "/var/tmp/repro-test-humaneval-home-pkcs8"
	if env := os.Getenv("REPRO_TEST_HUMANEVAL_HOME"); env != "" {
		d = env
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadDir(filepath.Join(d, "runs"))
	for _, e := range old {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(d, "runs", e.Name()))
		}
	}
	return d
}

func newHumanEvalHome(t *testing.T, home string) string {
	t.Helper()
	e := sandboxtest.Engine(t)
	imageHome := os.Getenv("REPRO_TEST_IMAGE_HOME") // a REPRO_HOME holding another evaluator image
	if imageHome == "" {
		sandboxtest.Image(t, e)
		imageHome = sandboxtest.Home()
	}
	pin, err := os.ReadFile(filepath.Join(imageHome, "sandbox", "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "sandbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "sandbox", "image.json"), pin, 0o644); err != nil {
		t.Fatal(err)
	}
	// The SBOM travels with its pin (or is made again from the image).
	os.Remove(filepath.Join(home, "sandbox", "sbom.cdx.json"))
	if sbom, err := os.ReadFile(filepath.Join(imageHome, "sandbox", "sbom.cdx.json")); err == nil {
		if err := os.WriteFile(filepath.Join(home, "sandbox", "sbom.cdx.json"), sbom, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := sharedData(t)
	for id, file := range map[string]string{
		"humanevalplus-v0.1.10":      "humanevalplus-v0.1.10/HumanEvalPlus.jsonl.gz",
		"humanevalplus-mini-v0.1.10": "humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz",
		"humaneval":                  "human-eval/HumanEval.jsonl.gz",
		"mbppplus-v0.2.0":            "mbppplus-v0.2.0/MbppPlus.jsonl.gz",
	} {
		if r := repro(t, []string{"REPRO_HOME=" + home}, "fetch", id, "--from", filepath.Join(data, file)); r.code != 0 {
			t.Fatalf("import %s: %d %s", id, r.code, r.stderr)
		}
	}
	return home
}

type humanevalJSON struct {
	RunID       string `json:"run_id"`
	RunDir      string `json:"run_dir"`
	ResultsFile string `json:"results_file"`
	Error       string `json:"error"`
	Summary     *struct {
		Samples     int                `json:"samples"`
		BasePassed  int                `json:"base_passed"`
		PlusPassed  int                `json:"plus_passed"`
		BasePassAtK map[string]float64 `json:"base_pass_at_k"`
		PlusPassAtK map[string]float64 `json:"plus_pass_at_k"`
	} `json:"summary"`
	SelfCheck *struct {
		Tasks    int `json:"tasks"`
		Passed   int `json:"passed"`
		Failures []struct {
			Task  string `json:"task"`
			Flaky bool   `json:"flaky"`
		} `json:"failures"`
	} `json:"self_check"`
}

func parseHumanEvalJSON(t *testing.T, r result) humanevalJSON {
	t.Helper()
	var h humanevalJSON
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return h
}

func writeSamples(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "samples.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sampleLine(task, solution string) string {
	b, _ := json.Marshal(map[string]string{"task_id": task, "solution": solution})
	return string(b)
}

func TestHumanEvalCanonicalMini(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	r := repro(t, env, "humaneval", "--canonical", "--dataset", "humanevalplus-mini", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	if h.Summary == nil || h.Summary.Samples != 164 || h.Summary.BasePassAtK["pass@1"] != 1 || h.Summary.PlusPassAtK["pass@1"] != 1 {
		t.Fatalf("summary %+v", h.Summary)
	}
	if h.SelfCheck == nil || h.SelfCheck.Passed != 164 {
		t.Fatalf("self-check %+v", h.SelfCheck)
	}
	var res struct {
		Hash    string                       `json:"hash"`
		Eval    map[string][]json.RawMessage `json:"eval"`
		PassAtK map[string]map[string]float64
	}
	b, err := os.ReadFile(h.ResultsFile)
	if err != nil || json.Unmarshal(b, &res) != nil || len(res.Eval) != 164 || res.Hash != "401e75ad986361dccc7afecb4121e295" {
		t.Fatalf("results file %s: %v, %d tasks, hash %q", h.ResultsFile, err, len(res.Eval), res.Hash)
	}
	if v := repro(t, env, "runs", "verify", h.RunID); v.code != 0 {
		t.Fatalf("runs verify: %d %s %s", v.code, v.stdout, v.stderr)
	}
	runstest.Verified(t, h.RunDir)
	rec, err := os.ReadFile(filepath.Join(h.RunDir, "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"harness_digest"`, `"self_check"`, `"image"`, `"seccomp_profile_digest"`, `"ground_truth"`, `"humanevalplus-mini-v0.1.10"`} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("record.json lacks %s", want)
		}
	}
	// The record names the image's SBOM by the digest of what 'repro image
	// sbom' prints.
	sbom := repro(t, env, "image", "sbom")
	if sbom.code != 0 {
		t.Fatalf("image sbom: %d %s", sbom.code, sbom.stderr)
	}
	var recImage struct {
		Image struct {
			SBOMDigest string `json:"sbom_digest"`
		} `json:"image"`
	}
	if err := json.Unmarshal(rec, &recImage); err != nil || recImage.Image.SBOMDigest != digest.Of([]byte(sbom.stdout)).String() {
		t.Errorf("record's SBOM digest %q (%v), want that of the printed SBOM %s", recImage.Image.SBOMDigest, err, digest.Of([]byte(sbom.stdout)))
	}
}

func TestHumanEvalSampleErrors(t *testing.T) {
	home := humanevalHome(t, false) // its own: other tests add run folders to the shared one
	env := []string{"REPRO_HOME=" + home}
	good := sampleLine("HumanEval/0", "def has_close_elements(n, t):\n    return False\n")
	for name, c := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"missing tasks": {[]string{"--samples", writeSamples(t, good)}, 2, "no sample for 163 tasks: HumanEval/1, HumanEval/2"},
		"bad line":      {[]string{"--samples", writeSamples(t, good, "{oops")}, 2, `samples.jsonl":2: not a JSON object`},
		"not utf-8":     {[]string{"--samples", writeSamples(t, good, "{\"task_id\": \"HumanEval/0\", \"solution\": \"\xff\"}")}, 2, ":2: not valid UTF-8"},
		"not jsonl":     {[]string{"--samples", filepath.Join(t.TempDir(), "x.json")}, 2, "samples"},
		"both modes":    {[]string{"--samples", "x.jsonl", "--canonical"}, 2, "exactly one of"},
		"bad dataset":   {[]string{"--canonical", "--dataset", "mbpp"}, 2, "--dataset"},
		"bad tasks":     {[]string{"--canonical", "--tasks", "200"}, 2, "--tasks"},
		"no such file":  {[]string{"--samples", filepath.Join(t.TempDir(), "absent.jsonl")}, 2, "no such file or directory"},
		"negative task": {[]string{"--canonical", "--tasks", "-1"}, 2, `--tasks: "-1" is not a task`},
		"bad range end": {[]string{"--canonical", "--tasks", "0,3-x"}, 2, `--tasks: "3-x" is not a task`},
		"bad margin":    {[]string{"--canonical", "--near-limit-margin", "1"}, 2, "near-limit margin 1: want a share of the limit above 0 and below 1"},
	} {
		r := repro(t, env, append([]string{"humaneval"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", name, r.code, r.stderr, c.code, c.msg)
		}
		if strings.Contains(r.stdout, "pass@1") {
			t.Errorf("%s: printed a score", name)
		}
		// Argument validation comes before the run: no folder, no record.
		if entries, _ := os.ReadDir(filepath.Join(home, "runs")); len(entries) != 0 {
			t.Errorf("%s: a run folder was made although the arguments were refused: %v", name, entries)
		}
	}
}

func TestHumanEvalPreconditions(t *testing.T) {
	// A fresh home: no dataset stored, no image pinned. Nothing runs.
	r := repro(t, nil, "humaneval", "--canonical")
	if r.code != 3 || !strings.Contains(r.stderr, "humanevalplus-v0.1.10") {
		t.Errorf("no dataset: exit %d %q", r.code, r.stderr)
	}
	home := t.TempDir()
	data := sharedData(t)
	if f := repro(t, []string{"REPRO_HOME=" + home}, "fetch", "humanevalplus-mini-v0.1.10", "--from", filepath.Join(data, "humanevalplus-v0.1.10/HumanEvalPlus-Mini.jsonl.gz")); f.code != 0 {
		t.Fatal(f.stderr)
	}
	sandboxtest.Engine(t)
	r = repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--canonical", "--dataset", "humanevalplus-mini")
	if r.code != 3 || !strings.Contains(r.stderr, "image") {
		t.Errorf("no image pin: exit %d %q", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "runs")); len(entries) != 0 {
		t.Errorf("a run folder was made although nothing could run")
	}
}

func TestHumanEvalSelfCheckFailureStopsTheRun(t *testing.T) {
	home := humanevalHome(t, true)
	samples := writeSamples(t, sampleLine("HumanEval/15", "def string_sequence(n):\n    return ' '.join(map(str, range(n + 1)))\n"))
	// A per-input limit of 10 microseconds of CPU time: the canonical
	// solutions cannot pass it, so the run must stop before any candidate.
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", samples, "--dataset", "humanevalplus-mini",
		"--tasks", "15", "--min-time-limit", "0.00001", "--gt-time-limit-factor", "0.00001", "--json")
	if r.code != 4 {
		t.Fatalf("exit %d, want 4: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	if h.Summary != nil || h.SelfCheck == nil || len(h.SelfCheck.Failures) != 1 || h.SelfCheck.Failures[0].Task != "HumanEval/15" || !h.SelfCheck.Failures[0].Flaky {
		t.Fatalf("summary %+v, self-check %+v", h.Summary, h.SelfCheck)
	}
	if !strings.Contains(r.stderr, "self-check failed") || !strings.Contains(r.stderr, "HumanEval/15 (flaky)") {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.RunDir, "eval_results.json")); err == nil {
		t.Error("a results file was written")
	}
}

// startHumanEval starts the binary and returns the command and its stdout.
func startHumanEval(t *testing.T, home string, args ...string) (*exec.Cmd, *strings.Builder, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(reproBin, append([]string{"humaneval"}, args...)...)
	cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &o, &e
}

// waitForFile waits until a file matching pattern exists.
func waitForFile(t *testing.T, pattern string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s appeared", pattern)
	return ""
}

func TestHumanEvalSamplesChangedDuringTheRun(t *testing.T) {
	home := humanevalHome(t, false)
	// A correct program that takes about a second, so that the run is
	// still going when the samples change.
	slow := "import time\n_t = time.process_time()\nwhile time.process_time() - _t < 1.0:\n    pass\ndef add(x, y):\n    return x + y\n"
	for _, which := range []string{"original", "copy"} {
		samples := writeSamples(t, sampleLine("HumanEval/53", slow))
		cmd, stdout, stderr := startHumanEval(t, home, "--samples", samples, "--dataset", "humanevalplus-mini", "--tasks", "53")
		copyPath := waitForFile(t, filepath.Join(home, "runs", "*", "workspace", "samples.jsonl"))
		target := samples
		if which == "copy" {
			target = copyPath
			os.Chmod(filepath.Dir(copyPath), 0o755)
			os.Chmod(copyPath, 0o644)
		}
		f, err := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(sampleLine("HumanEval/53", "def add(x, y):\n    return 0\n") + "\n")
		f.Close()
		err = cmd.Wait()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err == nil {
			code = 0
		}
		if code != 4 || !strings.Contains(stderr.String(), "changed") || strings.Contains(stdout.String(), "pass@1") {
			t.Errorf("%s changed: exit %d\nstdout %s\nstderr %s", which, code, stdout, stderr)
		}
		os.RemoveAll(filepath.Join(home, "runs"))
	}
}

func TestHumanEvalCorruptGroundTruth(t *testing.T) {
	home := humanevalHome(t, false)
	env := []string{"REPRO_HOME=" + home}
	args := []string{"humaneval", "--canonical", "--dataset", "humanevalplus-mini", "--tasks", "0-3"}
	if r := repro(t, env, args...); r.code != 0 {
		t.Fatalf("first run: %d %s", r.code, r.stderr)
	}
	bins, _ := filepath.Glob(filepath.Join(home, "state", "humaneval", "truth-*", "2.plus.*.bin"))
	if len(bins) != 1 {
		t.Fatalf("ground-truth files: %v", bins)
	}
	b, _ := os.ReadFile(bins[0])
	b[len(b)-3] ^= 0x40
	os.Chmod(bins[0], 0o644)
	if err := os.WriteFile(bins[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := repro(t, env, args...)
	if r.code != 4 || !strings.Contains(r.stderr, "corrupt") || strings.Contains(r.stdout, "pass@1") {
		t.Fatalf("corrupt cache: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Without the task's JSON file the task is computed again, and its
	// record file, named by the digest of what it should hold, is there
	// with other bytes: it is not taken as the same outputs but removed
	// (exit 4), and the next run computes it afresh.
	if err := os.Remove(filepath.Join(filepath.Dir(bins[0]), "2.json")); err != nil {
		t.Fatal(err)
	}
	r = repro(t, env, args...)
	if r.code != 4 || !strings.Contains(r.stderr, "held other bytes than its name says: removed it") || strings.Contains(r.stdout, "pass@1") {
		t.Fatalf("a changed record file under its digest's name: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(bins[0]); !os.IsNotExist(err) {
		t.Fatalf("the changed record file is still there: %v", err)
	}
	if r := repro(t, env, args...); r.code != 0 {
		t.Fatalf("the run after: exit %d\n%s", r.code, r.stderr)
	}
}

func TestHumanEvalSamplesFolder(t *testing.T) {
	home := humanevalHome(t, true)
	dir := t.TempDir()
	for k, prog := range []string{"def add(x, y):\n    return x + y\n", "def add(x, y):\n    return x - y\n"} {
		p := filepath.Join(dir, "HumanEval_53", strings.Repeat("", 0)+string(rune('0'+k))+".py")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(prog), 0o644)
	}
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", dir, "--dataset", "humanevalplus-mini", "--tasks", "53", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	if h.Summary.Samples != 2 || h.Summary.PlusPassed != 1 || h.Summary.PlusPassAtK["pass@1"] != 0.5 {
		t.Fatalf("summary %+v", h.Summary)
	}
}

// TestHumanEvalCandidateImports proves from inside the sandbox what a
// candidate can import: the standard library, NumPy and psutil (the
// evaluator image's packages), and nothing else.
func TestHumanEvalCandidateImports(t *testing.T) {
	home := humanevalHome(t, true)
	progs := []struct {
		prog string
		pass bool
	}{
		{"import json, fractions, itertools\ndef add(x, y):\n    return x + y\n", true},
		{"import numpy, psutil\nassert numpy.array([1, 2]).sum() == 3 and psutil.cpu_count() >= 1\ndef add(x, y):\n    return x + y\n", true},
		{"import scipy\ndef add(x, y):\n    return x + y\n", false},
		{"import requests\ndef add(x, y):\n    return x + y\n", false},
	}
	var lines []string
	for _, p := range progs {
		lines = append(lines, sampleLine("HumanEval/53", p.prog))
	}
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", writeSamples(t, lines...), "--dataset", "humanevalplus-mini", "--tasks", "53", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	var res struct {
		Eval map[string][]struct {
			BaseStatus string `json:"base_status"`
		} `json:"eval"`
	}
	b, _ := os.ReadFile(h.ResultsFile)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	got := res.Eval["HumanEval/53"]
	if len(got) != len(progs) {
		t.Fatalf("%d results for HumanEval/53, want %d", len(got), len(progs))
	}
	for i, p := range progs {
		if (got[i].BaseStatus == "pass") != p.pass {
			t.Errorf("sample %d (%q): base status %q, want pass=%v", i, strings.SplitN(p.prog, "\n", 2)[0], got[i].BaseStatus, p.pass)
		}
	}
}

// exampleTasks are the tasks examples/humaneval-samples.jsonl covers.
const exampleTasks = "0,2,12,32,53,55"

func TestHumanEvalExampleSamples(t *testing.T) {
	home := humanevalHome(t, true)
	example := filepath.Join("..", "..", "examples", "humaneval-samples.jsonl")
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--samples", example, "--tasks", exampleTasks, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	// Per task (correct of all): 0 1/3, 2 1/3, 12 1/3, 32 1/2 base and 0/2
	// plus, 53 2/5, 55 2/3 base and 1/3 plus.
	wantBase := (1.0/3 + 1.0/3 + 1.0/3 + 1.0/2 + 2.0/5 + 2.0/3) / 6
	wantPlus := (1.0/3 + 1.0/3 + 1.0/3 + 0 + 2.0/5 + 1.0/3) / 6
	if d := h.Summary.BasePassAtK["pass@1"] - wantBase; d > 1e-12 || d < -1e-12 {
		t.Errorf("base pass@1 %v, want %v", h.Summary.BasePassAtK["pass@1"], wantBase)
	}
	if d := h.Summary.PlusPassAtK["pass@1"] - wantPlus; d > 1e-12 || d < -1e-12 {
		t.Errorf("plus pass@1 %v, want %v", h.Summary.PlusPassAtK["pass@1"], wantPlus)
	}
	// Every cheat fails or times out, in base and plus.
	raw, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var s struct {
			TaskID string `json:"task_id"`
			Note   string `json:"note"`
		}
		json.Unmarshal([]byte(line), &s)
		notes[s.TaskID] = append(notes[s.TaskID], s.Note)
	}
	res := readEvalResults(t, h.ResultsFile)
	cheats := 0
	for task, entries := range res.Eval {
		for i, e := range entries {
			if strings.HasPrefix(notes[task][i], "cheat") {
				cheats++
				if e.BaseStatus == "pass" || e.PlusStatus == "pass" {
					t.Errorf("%s sample %d (%s) passed", task, i, notes[task][i])
				}
			}
		}
	}
	if cheats != 6 {
		t.Errorf("%d cheats scored, the file has 6", cheats)
	}
	checkExampleReport(t, home, h.RunID)
}

// checkExampleReport: the report of the example run verifies, shows every
// task with its time against the limit the sandbox held it to, and what
// failed.
func checkExampleReport(t *testing.T, home, id string) {
	t.Helper()
	r := repro(t, []string{"REPRO_HOME=" + home}, "report", id, "--format", "json")
	if r.code != 0 {
		t.Fatalf("repro report: exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Verified  bool
		HumanEval struct {
			SelfCheck struct{ OK bool } `json:"self_check"`
			Rows      []struct {
				Task, Status, Phase, Reason string
				Seconds                     float64
				LimitSeconds                float64 `json:"limit_seconds"`
			} `json:"tasks_table"`
		} `json:"humaneval"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	if !rep.Verified || !rep.HumanEval.SelfCheck.OK || len(rep.HumanEval.Rows) != 6 {
		t.Fatalf("report: %+v", rep)
	}
	for _, row := range rep.HumanEval.Rows {
		if row.LimitSeconds <= 0 || row.Seconds <= 0 {
			t.Errorf("%s: no time against its limit in the report: %+v", row.Task, row)
		}
		if row.Status != "pass" && row.Reason == "" {
			t.Errorf("%s: %s without a reason", row.Task, row.Status)
		}
	}
}

// evalplusForger solves HumanEval/53 and leaves a process (EvalPlus's
// guard takes os.fork, not libc's fork) that writes, for 4 s, result lines for the
// samples after it, in the driver's old format, while they run, on every
// descriptor that could reach the host: its stdout, the driver's results
// descriptor, and the driver's and its parent's through /proc.
const evalplusForger = `import ctypes, json, os, time
def _forge():
    lines = b"".join(json.dumps({"task_id": "HumanEval/53", "id": i, "base_status": s, "base_fail": f,
                                 "plus_status": s, "plus_fail": f}).encode() + b"\n"
                     for i, s, f in ((1, "fail", 0), (2, "pass", -1)))
    for fd in (1, 3):
        try:
            os.write(fd, lines)
        except OSError:
            pass
    pids = [os.getppid()]
    try:  # (EvalPlus's guard takes the builtin open, not os.open)
        fd = os.open("/proc/%d/stat" % pids[0], os.O_RDONLY)
        pids.append(int(os.read(fd, 4096).decode().rsplit(")", 1)[1].split()[1]))
        os.close(fd)
    except (OSError, ValueError, IndexError):
        pass
    for pid in pids:
        for fd in (1, 3):
            try:
                w = os.open("/proc/%d/fd/%d" % (pid, fd), os.O_WRONLY)
                os.write(w, lines)
                os.close(w)
            except OSError:
                pass
if ctypes.CDLL(None).fork() == 0:
    for _ in range(40):
        time.sleep(0.1)
        _forge()
    os._exit(0)
def add(x, y):
    return x + y
`

// findZeroMutator turns HumanEval/32's coefficient list into zeros, for
// which any x is a root.
const findZeroMutator = `def find_zero(xs):
    xs[:] = [0] * len(xs)
    return 0.0
`

func TestHumanEvalEngineEvalPlus(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	home := humanevalHome(t, false)
	env := []string{"REPRO_HOME=" + home}
	samples := writeSamples(t,
		sampleLine("HumanEval/53", evalplusForger),
		sampleLine("HumanEval/53", "def add(x, y):\n    return x + y\n"),
		sampleLine("HumanEval/53", "def add(x, y):\n    return x - y\n"),
		sampleLine("HumanEval/53", "class Yes:\n    def __eq__(self, o): return True\ndef add(x, y):\n    return Yes()\n"),
		sampleLine("HumanEval/0", "def has_close_elements(n, t):\n    return False\n"),
		sampleLine("HumanEval/32", findZeroMutator),
	)
	// The tree as a relative path, which the command resolves before it
	// mounts it.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, tree)
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to %s from %s: %v", tree, wd, err)
	}
	args := []string{"humaneval", "--engine", "evalplus", "--evalplus-tree", rel, "--dataset", "humanevalplus-mini",
		"--tasks", "0,32,53", "--samples", samples, "--json"}
	testEngineEvalPlusOn(t, env, args)

	// A tree that is not the pinned one is refused before anything runs.
	changed := t.TempDir()
	if out, err := exec.Command("cp", "-a", tree+"/.", changed).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	f, _ := os.OpenFile(filepath.Join(changed, "evalplus", "eval", "__init__.py"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n# changed\n")
	f.Close()
	args[4] = changed
	if r := repro(t, env, args...); r.code != 4 || !strings.Contains(r.stderr, "tree digest") {
		t.Errorf("changed tree: exit %d %s", r.code, r.stderr)
	}
}

// TestHumanEvalEngineEvalPlusRunsc runs the same samples (the forger
// included) with EvalPlus's own scoring code under runsc: the canonical
// solutions pass the self-check and every verdict is as under runc.
func TestHumanEvalEngineEvalPlusRunsc(t *testing.T) {
	tree := testenv.Getenv(t, "REPRO_TEST_EVALPLUS_TREE", "a checkout of evalplus at 26d6d00 (scripts/test.sh uses ../shared/engines/evalplus-26d6d00)")
	home := humanevalHome(t, false)
	samples := writeSamples(t,
		sampleLine("HumanEval/53", evalplusForger),
		sampleLine("HumanEval/53", "def add(x, y):\n    return x + y\n"),
		sampleLine("HumanEval/53", "def add(x, y):\n    return x - y\n"),
		sampleLine("HumanEval/53", "class Yes:\n    def __eq__(self, o): return True\ndef add(x, y):\n    return Yes()\n"),
		sampleLine("HumanEval/0", "def has_close_elements(n, t):\n    return False\n"),
		sampleLine("HumanEval/32", findZeroMutator),
	)
	testEngineEvalPlusOn(t, []string{"REPRO_HOME=" + home}, []string{"humaneval", "--engine", "evalplus", "--evalplus-tree", tree,
		"--dataset", "humanevalplus-mini", "--tasks", "0,32,53", "--samples", samples, "--runtime", "runsc", "--json"})
}

func testEngineEvalPlusOn(t *testing.T, env, args []string) {
	r := repro(t, env, args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	var note struct {
		Engine     string `json:"engine"`
		EngineNote string `json:"engine_note"`
	}
	json.Unmarshal([]byte(r.stdout), &note)
	if note.Engine != "evalplus" || !strings.Contains(note.EngineNote, "forge") {
		t.Errorf("the report does not state EvalPlus's weakness: %+v", note)
	}
	res := readEvalResults(t, h.ResultsFile)
	add := res.Eval["HumanEval/53"]
	// The first sample wrote result lines for the two after it (the honest
	// one failing, the wrong one passing) where the old driver's results
	// went; none was taken.
	if len(add) != 4 || add[1].BaseStatus != "pass" || add[1].PlusStatus != "pass" || add[2].BaseStatus != "fail" {
		t.Fatalf("HumanEval/53 under EvalPlus: %+v", add)
	}
	// EvalPlus's comparison calls the sample's __eq__: the always-equal
	// object passes there (and only there; see TestHostileSuite).
	if add[3].BaseStatus != "pass" || add[3].PlusStatus != "pass" {
		t.Errorf("the always-equal object did not pass under EvalPlus's code: %+v", add[3])
	}
	// EvalPlus checks find_zero's output against the input list after the
	// sample ran: a sample that empties the list into zeros passes there
	// (repro's own engine checks against its own copy: TestHostileSuite).
	if fz := res.Eval["HumanEval/32"]; len(fz) != 1 || fz[0].BaseStatus != "pass" {
		t.Errorf("the input-mutating find_zero did not pass under EvalPlus's code (update docs/humaneval.md if EvalPlus no longer takes it): %+v", fz)
	}
	if h.SelfCheck == nil || h.SelfCheck.Passed != 3 {
		t.Errorf("self-check %+v", h.SelfCheck)
	}
}

func TestHumanEvalOriginalDataset(t *testing.T) {
	home := humanevalHome(t, true)
	r := repro(t, []string{"REPRO_HOME=" + home}, "humaneval", "--canonical", "--dataset", "humaneval", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	h := parseHumanEvalJSON(t, r)
	// The original HumanEval has base tests only (HumanEval+'s
	// transcription of its check functions).
	if h.Summary.Samples != 164 || h.Summary.BasePassAtK["pass@1"] != 1 || h.Summary.PlusPassAtK != nil {
		t.Fatalf("summary %+v", h.Summary)
	}
}

// evalResults is the part of eval_results.json the tests read.
type evalResults struct {
	Eval map[string][]struct {
		BaseStatus string `json:"base_status"`
		PlusStatus string `json:"plus_status"`
	} `json:"eval"`
}

func readEvalResults(t *testing.T, path string) evalResults {
	t.Helper()
	var res evalResults
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}
