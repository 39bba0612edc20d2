package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/testenv"
)

// shardSamples writes samples over the first n tasks of HumanEval+: per
// task the canonical solution, a wrong answer and one that raises, and on
// task 3 one that exits before answering. (No sample that times out: each
// costs 8 s of CPU per phase and run, which CI time cannot spare.)
func shardSamples(t *testing.T, n int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedData(t), "humanevalplus-v0.1.10", "HumanEvalPlus.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	var lines []string
	for i := 0; i < n; i++ {
		var task struct {
			TaskID     string `json:"task_id"`
			Prompt     string `json:"prompt"`
			Canonical  string `json:"canonical_solution"`
			EntryPoint string `json:"entry_point"`
		}
		if err := dec.Decode(&task); err != nil {
			t.Fatal(err)
		}
		lines = append(lines,
			sampleLine(task.TaskID, task.Prompt+task.Canonical),
			sampleLine(task.TaskID, task.Prompt+"    return None\n"),
			sampleLine(task.TaskID, task.Prompt+"    raise ValueError('no')\n"))
		if i == 3 {
			lines = append(lines,
				sampleLine(task.TaskID, "import os\nos._exit(0)\n"+task.Prompt+task.Canonical))
		}
	}
	return writeSamples(t, lines...)
}

// shardEvalResults is the part of eval_results.json that holds verdicts.
type shardEvalResults struct {
	Hash string `json:"hash"`
	Eval map[string][]struct {
		TaskID        string            `json:"task_id"`
		Solution      string            `json:"solution"`
		BaseStatus    string            `json:"base_status"`
		PlusStatus    *string           `json:"plus_status"`
		BaseFailTests []json.RawMessage `json:"base_fail_tests"`
		PlusFailTests []json.RawMessage `json:"plus_fail_tests"`
	} `json:"eval"`
	PassAtK map[string]map[string]float64 `json:"pass_at_k"`
}

func readShardEvalResults(t *testing.T, path string) shardEvalResults {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r shardEvalResults
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// sameVerdicts compares two results files verdict by verdict.
func sameVerdicts(t *testing.T, single, merged shardEvalResults) {
	t.Helper()
	if single.Hash != merged.Hash || len(single.Eval) != len(merged.Eval) {
		t.Fatalf("hash %s / %s, %d / %d tasks", single.Hash, merged.Hash, len(single.Eval), len(merged.Eval))
	}
	n := 0
	for task, want := range single.Eval {
		got := merged.Eval[task]
		if len(got) != len(want) {
			t.Errorf("%s: %d results merged, %d in one run", task, len(got), len(want))
			continue
		}
		for i := range want {
			w, g := want[i], got[i]
			js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
			if w.Solution != g.Solution || w.BaseStatus != g.BaseStatus || js(w.PlusStatus) != js(g.PlusStatus) ||
				js(w.BaseFailTests) != js(g.BaseFailTests) || js(w.PlusFailTests) != js(g.PlusFailTests) {
				t.Errorf("%s sample %d: merged %s/%s %s %s, one run %s/%s %s %s", task, i,
					g.BaseStatus, js(g.PlusStatus), js(g.BaseFailTests), js(g.PlusFailTests),
					w.BaseStatus, js(w.PlusStatus), js(w.BaseFailTests), js(w.PlusFailTests))
			}
			n++
		}
	}
	if fmt.Sprint(single.PassAtK) != fmt.Sprint(merged.PassAtK) {
		t.Errorf("pass@k merged %v, one run %v", merged.PassAtK, single.PassAtK)
	}
	t.Logf("%d verdicts compared", n)
}

// shardBundle is where the shard tests start from: a samples file scored
// once on this machine and planned over shards into a bundle.
type shardBundle struct {
	dir    string            // the bundle, as repro shard plan wrote it
	one    result            // the single run (repro score --json)
	single shardEvalResults  // the single run's verdicts
	step   func(what string) // logs the time taken since the last step
}

// newShardBundle writes shardSamples(t, n), scores them over tasks (a
// --tasks list) in one run and plans them over shards shards in a new
// bundle, failing the test if either command fails. The two commands share
// the HumanEval home; the step function has logged both.
func newShardBundle(t *testing.T, n int, tasks string, shards int) shardBundle {
	t.Helper()
	env := []string{"REPRO_HOME=" + humanevalHome(t, true)}
	samples := shardSamples(t, n)
	start := time.Now()
	step := func(what string) { t.Logf("%s: %.1f s", what, time.Since(start).Seconds()); start = time.Now() }
	one := repro(t, env, "humaneval", "--samples", samples, "--tasks", tasks, "--json")
	if one.code != 0 {
		t.Fatalf("single run: exit %d: %s", one.code, one.stderr)
	}
	single := readShardEvalResults(t, parseHumanEvalJSON(t, one).ResultsFile)
	step("single run")
	bundle := filepath.Join(t.TempDir(), "bundle")
	if r := repro(t, env, "shard", "plan", "--samples", samples, "--tasks", tasks, "--shards", fmt.Sprint(shards), "--out", bundle); r.code != 0 {
		t.Fatalf("plan: exit %d: %s", r.code, r.stderr)
	}
	step("plan")
	return shardBundle{dir: bundle, one: one, single: single, step: step}
}

// TestShardSlurmMatchesSingleRun scores one samples file twice: on this
// machine in one run, and as a job array of 3 shards on a real single-node
// Slurm cluster, all array tasks at once sharing the Docker engine. The
// merged eval_results.json must hold the single run's verdicts, verdict by
// verdict, and a second merge the same bytes. Then every refusal of the
// merge is tried: a missing, failed, duplicated or tampered shard, and a
// changed plan, each exit 4 naming it; a failed shard run again (as Slurm
// requeues it) merges cleanly.
func TestShardSlurmMatchesSingleRun(t *testing.T) {
	sb := newShardBundle(t, 12, "0-11", 3)
	one, single, bundle, step := sb.one, sb.single, sb.dir, sb.step
	// Under --json, progress comes as JSON lines on stderr.
	sawEnd := false
	for _, line := range strings.Split(strings.TrimSpace(one.stderr), "\n") {
		var p struct {
			Type  string   `json:"message_type"`
			Stage string   `json:"stage"`
			Done  int      `json:"done"`
			Total int      `json:"total"`
			Rate  *float64 `json:"per_second"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil || p.Type != "progress" || p.Rate == nil {
			t.Errorf("stderr line %q is not a JSON progress message (%v)", line, err)
		}
		sawEnd = sawEnd || p.Stage == "scoring" && p.Done == p.Total && p.Total > 0
	}
	if !sawEnd {
		t.Errorf("no scoring progress on stderr: %q", one.stderr)
	}
	c := testenv.StartSlurm(t, 1)
	step("Slurm started")
	mergeHome := t.TempDir()
	menv := append(c.Env(), "REPRO_HOME="+mergeHome)
	r := repro(t, menv, "shard", "submit", bundle, "--wait", "--json")
	if r.code != 0 {
		logs, _ := filepath.Glob(filepath.Join(bundle, "shards", "slurm-*.out"))
		var out []string
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			out = append(out, l+":\n"+string(b))
		}
		t.Fatalf("submit --wait: exit %d: %s %s\n%s", r.code, r.stdout, r.stderr, strings.Join(out, "\n"))
	}
	var m struct {
		ResultsFile string `json:"results_file"`
		RunID       string `json:"run_id"`
		Shards      []struct {
			Host     string `json:"host"`
			SlurmJob string `json:"slurm_job"`
		} `json:"shards"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Shards) != 3 {
		t.Fatalf("merge document: %v\n%s", err, r.stdout)
	}
	for i, s := range m.Shards {
		if s.SlurmJob == "" || !strings.HasSuffix(s.SlurmJob, fmt.Sprintf("_%d", i)) {
			t.Errorf("shard %d ran as %q, not as array task %d", i, s.SlurmJob, i)
		}
	}
	step("submit, wait and merge")
	merged := readShardEvalResults(t, m.ResultsFile)
	sameVerdicts(t, single, merged)
	if v := repro(t, []string{"REPRO_HOME=" + mergeHome}, "runs", "verify", m.RunID); v.code != 0 {
		t.Fatalf("runs verify of the merged run: %d %s %s", v.code, v.stdout, v.stderr)
	}
	runstest.Verified(t, layout.Home(mergeHome).Run(m.RunID)) // the in-toto statement, checked independently

	merge := func() result {
		return repro(t, []string{"REPRO_HOME=" + mergeHome}, "shard", "merge", bundle, "--json")
	}
	again := merge()
	if again.code != 0 {
		t.Fatalf("second merge: exit %d: %s", again.code, again.stderr)
	}
	var m2 struct {
		ResultsFile string `json:"results_file"`
	}
	json.Unmarshal([]byte(again.stdout), &m2)
	b1, _ := os.ReadFile(m.ResultsFile)
	b2, _ := os.ReadFile(m2.ResultsFile)
	if m2.ResultsFile == m.ResultsFile || !bytes.Equal(b1, b2) {
		t.Errorf("a second merge wrote different results (%s, %s)", m.ResultsFile, m2.ResultsFile)
	}

	refused := func(what, want string) {
		t.Helper()
		r := merge()
		if r.code != 4 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 4 naming %q", what, r.code, r.stderr, want)
		}
		if strings.Contains(r.stdout, "results_file") {
			t.Errorf("%s: a partial score was written: %s", what, r.stdout)
		}
	}
	shardFile := func(k int, ext string) string {
		return filepath.Join(bundle, "shards", fmt.Sprintf("shard-%03d%s", k, ext))
	}
	swap := func(path string, change func([]byte) []byte, check func()) {
		t.Helper()
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		os.Chmod(path, 0o644)
		if err := os.WriteFile(path, change(old), 0o644); err != nil {
			t.Fatal(err)
		}
		check()
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, fi.Mode())
	}

	step("second merge")
	// Missing: shard 1's record is gone.
	if err := os.Rename(shardFile(1, ".dsse.json"), shardFile(1, ".moved")); err != nil {
		t.Fatal(err)
	}
	refused("a missing shard", "shard 1: no record")
	os.Rename(shardFile(1, ".moved"), shardFile(1, ".dsse.json"))

	// Duplicated: shard 0's record stands in for shard 1's.
	rec0, _ := os.ReadFile(shardFile(0, ".json"))
	sig0, _ := os.ReadFile(shardFile(0, ".dsse.json"))
	swap(shardFile(1, ".json"), func([]byte) []byte { return rec0 }, func() {
		swap(shardFile(1, ".dsse.json"), func([]byte) []byte { return sig0 }, func() {
			refused("a duplicated shard", "shard 1: its record is shard 0's: a duplicated shard")
		})
	})

	// Tampered record: another host written into shard 2's record.
	swap(shardFile(2, ".json"), func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"host": "`), []byte(`"host": "x`), 1)
	}, func() { refused("a tampered shard record", "shard 2: its record does not verify") })

	// Tampered results: a failing verdict turned into a pass in shard 0's run.
	var rec struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal(rec0, &rec)
	res0 := filepath.Join(bundle, "home", "runs", rec.RunID, "eval_results.json")
	swap(res0, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"base_status":"fail"`), []byte(`"base_status":"pass"`), 1)
	}, func() { refused("tampered results", "shard 0: run "+rec.RunID+" does not match its") })

	// A changed plan.
	swap(filepath.Join(bundle, "plan.json"), func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"base_only": false`), []byte(`"base_only": true `), 1)
	}, func() { refused("a changed plan", "the plan does not verify") })

	// Failed: a shard runs on changed samples and fails closed; merged, it
	// is named. Run again on the right samples, as a requeued task is, it
	// merges to the same verdicts.
	k := 2
	swap(shardFile(k, ".jsonl"), func(b []byte) []byte {
		return bytes.Replace(b, []byte(`return None`), []byte(`return 0   `), 1)
	}, func() {
		if r := repro(t, nil, shardRunArgs(bundle, k)...); r.code != 4 || !strings.Contains(r.stderr, "changed after the plan was written") {
			t.Fatalf("shard run on changed samples: exit %d, %s", r.code, r.stderr)
		}
		refused("a failed shard", fmt.Sprintf("shard %d: it failed on", k))
	})
	// Another build of repro: refused before anything runs.
	other := filepath.Join(t.TempDir(), "repro")
	b, err := os.ReadFile(reproBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, other, shardRunArgs(bundle, k)...); r.code != 4 || !strings.Contains(r.stderr, "this repro binary") {
		t.Fatalf("shard run by another binary: exit %d, %s", r.code, r.stderr)
	}
	refused("a shard run by another binary", fmt.Sprintf("shard %d: it failed on", k))
	if r := repro(t, nil, shardRunArgs(bundle, k)...); r.code != 0 {
		t.Fatalf("shard %d run again: exit %d: %s", k, r.code, r.stderr)
	}
	step("refusals and the rerun")
	final := merge()
	if final.code != 0 {
		t.Fatalf("merge after the rerun: exit %d: %s", final.code, final.stderr)
	}
	var m3 struct {
		ResultsFile string `json:"results_file"`
	}
	json.Unmarshal([]byte(final.stdout), &m3)
	sameVerdicts(t, single, readShardEvalResults(t, m3.ResultsFile))
}

// shardRunArgs runs one shard with the bundle's own binary path checked:
// the test binary is the bundle's (the plan copied it).
func shardRunArgs(bundle string, k int) []string {
	return []string{"shard", "run", bundle, "--index", fmt.Sprint(k)}
}

// TestShardUsage checks the shard commands' usage errors and
// preconditions, which need neither engine nor cluster.
func TestShardUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"shard", "plan", "--shards", "2", "--out", filepath.Join(dir, "b")}, 2, "--samples PATH is required"},
		{[]string{"shard", "plan", "--samples", "x.jsonl", "--out", filepath.Join(dir, "b")}, 2, "--shards 0"},
		{[]string{"shard", "plan", "--samples", "x.jsonl", "--shards", "2", "--out", dir}, 2, "already exists"},
		{[]string{"shard", "merge", dir}, 2, "is not a shard bundle"},
		{[]string{"shard", "run", dir, "--index", "0"}, 2, "is not a shard bundle"},
		{[]string{"shard", "run", dir}, 2, "give --index K"},
		{[]string{"shard", "submit", dir}, 2, "is not a shard bundle"},
	} {
		r := repro(t, []string{"SLURM_ARRAY_TASK_ID="}, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("repro %v: exit %d, %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// runBinary runs bin (another build of repro) with a fresh REPRO_HOME.
func runBinary(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "REPRO_HOME="+t.TempDir())
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, o.String(), e.String()}
}
