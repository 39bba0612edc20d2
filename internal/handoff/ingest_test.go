package handoff

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/testenv"
)

func realLog(t testing.TB, workload string, i int) string {
	sub := map[string]string{"minigo": "dgxa100_ngc22.09_tensorflow/minigo", "dlrm": "dgxa100_ngc22.04_merlin_hugectr/dlrm"}[workload]
	return filepath.Join(testenv.MLPerfLogsDir(t), sub, fmt.Sprintf("result_%d.txt", i))
}

// TestPreflightNoGPU: on this machine (no NVIDIA driver, no pyxis) the
// node preflight fails closed, one line per failed check, while every
// pinned file verifies.
func TestPreflightNoGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		testenv.Missing(t, "a machine without nvidia-smi", "run it where no NVIDIA driver is installed")
	}
	w := newMiniGoWorld(t)
	m := w.bundle(t, TargetSlurm)
	report := filepath.Join(t.TempDir(), "preflight.txt")
	out, code := runPreflight(t, w.out, "", "--mode", "node", "--report", report)
	if code != 3 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "preflight: FAIL minigo.gpu-runtime: nvidia-smi not found") {
		t.Errorf("no nvidia-smi line:\n%s", out)
	}
	for _, l := range failLines(out) {
		if !strings.HasPrefix(l, "preflight: FAIL minigo.gpu-runtime: ") && !strings.HasPrefix(l, "preflight: FAIL minigo.image: ") {
			t.Errorf("unexpected failure: %s", l)
		}
	}
	r, err := ParsePreflightReport(must(os.ReadFile(report)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Result != "fail" || r.Manifest != m.Digest || len(r.Digests) != len(m.Pins) {
		t.Fatalf("report: %+v", r)
	}
	for _, p := range m.Pins {
		if r.Digests[p.Class+"/"+p.Path] != p.SHA256 {
			t.Errorf("pin %s: node computed %s, manifest %s", p.Name, r.Digests[p.Class+"/"+p.Path], p.SHA256)
		}
	}
}

// TestPreflightDetectsChangedPins changes each kind of pinned input after
// the bundle was made; the preflight fails and names it.
func TestPreflightDetectsChangedPins(t *testing.T) {
	w := newMiniGoWorld(t)
	w.bundle(t, TargetSlurm)
	gpu := gpuStack(t, 2, "minigo")
	out, code := runPreflight(t, w.out, gpu, "--mode", "node")
	if code != 0 {
		t.Fatalf("preflight with a working GPU stack failed (%d):\n%s", code, out)
	}
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"volumes/source/ml_perf/flags/19/train.flags", []string{"FAIL minigo.source: ", "ml_perf/flags/19/train.flags has sha256", "source/volumes has tree digest"}},
		{"volumes/checkpoint/target/target.minigo.tf", []string{"FAIL minigo.environment: ", "target.minigo.tf has sha256"}},
		{"volumes/checkpoint/mlperf07/data/selfplay.tfrecord.zz", []string{"FAIL minigo.environment: ", "mlperf07 has tree digest"}},
	} {
		p := w.path(filepath.FromSlash(tc.file))
		orig := must(os.ReadFile(p))
		mod := append([]byte(nil), orig...)
		mod[len(mod)-1] ^= 0x20 // same size, other bytes
		writeFile(t, p, mod, 0o644)
		out, code := runPreflight(t, w.out, gpu, "--mode", "node")
		if code != 3 {
			t.Errorf("%s changed: exit %d", tc.file, code)
		}
		for _, want := range tc.want {
			if want == "source/volumes has tree digest" {
				want = "volumes/source has tree digest"
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s changed: output lacks %q:\n%s", tc.file, want, strings.Join(failLines(out), "\n"))
			}
		}
		writeFile(t, p, orig, 0o644)
	}
	// A removed file is named too.
	os.Remove(w.path("volumes", "checkpoint", "target", "target.minigo.tf"))
	out, _ = runPreflight(t, w.out, gpu, "--mode", "node")
	if !strings.Contains(out, "FAIL minigo.environment: target/target.minigo.tf is missing from the checkpoint volume") {
		t.Errorf("removed file not named:\n%s", out)
	}
}

// TestPreflightGPUChecks: the stand-in driver answers with too few GPUs
// or a driver below the floor, and the preflight says so.
func TestPreflightGPUChecks(t *testing.T) {
	w := newMiniGoWorld(t)
	w.cfg.GPUs = 4
	w.bundle(t, TargetSlurm)
	gpu := gpuStack(t, 2, "minigo")
	out, code := runPreflight(t, w.out, gpu, "--mode", "node")
	if code != 3 || !strings.Contains(out, "FAIL minigo.gpu-runtime: found 2 GPU(s), the job needs 4") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	writeFile(t, filepath.Join(gpu, "nvidia-smi"), []byte("#!/bin/sh\necho '460.91.03, 8.0'\necho '460.91.03, 8.0'\necho '460.91.03, 8.0'\necho '460.91.03, 8.0'\n"), 0o755)
	out, _ = runPreflight(t, w.out, gpu, "--mode", "node")
	if !strings.Contains(out, "FAIL minigo.gpu-runtime: driver 460.91.03 is below the floor for CUDA 11.8") {
		t.Fatalf("old driver not refused:\n%s", out)
	}
	out, code = runPreflight(t, w.out, gpu, "--mode", "container")
	if code != 0 {
		t.Fatalf("container probe failed (%d):\n%s", code, out)
	}
	writeFile(t, filepath.Join(gpu, "python3"), []byte("#!/bin/sh\ncat >/dev/null\necho 'python 3.8.10'\necho 'tensorflow 1.15.5'\necho 'gpu no'\n"), 0o755)
	out, code = runPreflight(t, w.out, gpu, "--mode", "container")
	if code != 3 || !strings.Contains(out, "FAIL minigo.gpu-runtime: TensorFlow in the image sees no GPU") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestPreflightRealTorch runs the DLRM probe against Debian's PyTorch
// (python3-torch, run as /usr/bin/python3): no GPU here, so it must fail
// closed on the GPU check after reading the real versions.
func TestPreflightRealTorch(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		testenv.Missing(t, "python3-torch", "apt-get install python3-torch")
	}
	w := newDLRMWorld(t)
	w.cfg.Runtime.Torch = strings.TrimSpace(string(must(exec.Command("/usr/bin/python3", "-c", "import torch; print(torch.__version__)").Output())))
	w.bundle(t, TargetSlurm)
	bin := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink("/usr/bin/python3", filepath.Join(bin, "python")); err != nil {
		t.Fatal(err)
	}
	out, code := runPreflight(t, w.out, bin, "--mode", "container")
	if code != 3 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "preflight: ok dlrm.runtime: torch "+w.cfg.Runtime.Torch) {
		t.Errorf("torch version not read:\n%s", out)
	}
	if !strings.Contains(out, "FAIL dlrm.runtime: torch in the image sees no GPU") {
		t.Errorf("no GPU not reported:\n%s", out)
	}
}

// ranBundle is a bundle whose job ran here: preflight reports from the
// real preflight script (with the GPU stand-ins), and result files from
// the real run.sh running an entry point that writes a real MLPerf log.
type ranBundle struct {
	w       *world
	m       *Manifest
	results string
	gpu     string
}

func runBundle(t *testing.T, w *world, target string) *ranBundle {
	t.Helper()
	m := w.bundle(t, target)
	rb := &ranBundle{w: w, m: m, results: filepath.Join(t.TempDir(), "results"), gpu: gpuStack(t, w.cfg.GPUs, w.name)}
	os.MkdirAll(rb.results, 0o755)
	rb.preflight(t)
	for _, r := range m.Runs {
		cmd := exec.Command("bash", filepath.Join(w.out, RunFile), fmt.Sprint(r.Index))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "REPRO_SOURCE_DIR=" + w.path("volumes", "source"),
			"REPRO_WORK_DIR=" + w.path("work"), "REPRO_RESULTS=" + rb.results}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run.sh %d: %v\n%s", r.Index, err, out)
		}
	}
	return rb
}

func (rb *ranBundle) preflight(t *testing.T) {
	t.Helper()
	for _, mode := range []string{"node", "container"} {
		name := map[string]string{"node": "preflight.txt", "container": "probe.txt"}[mode]
		out, code := runPreflight(t, rb.w.out, rb.gpu, "--mode", mode, "--report", filepath.Join(rb.results, name))
		if code != 0 && !strings.Contains(out, "has sha256") && !strings.Contains(out, "tree digest") {
			t.Fatalf("preflight %s (%d):\n%s", mode, code, out)
		}
	}
}

func (rb *ranBundle) ingest(t *testing.T) (*IngestRecord, error) {
	t.Helper()
	return Ingest(context.Background(), rb.w.out, rb.results, IngestOptions{Home: filepath.Join(rb.w.root, "home"), Host: "test-host", Version: "test"})
}

// miniGoRan: MiniGo's entry point prints NVIDIA's v2.1 result log i on
// standard output.
func miniGoRan(t *testing.T) *ranBundle {
	w := newMiniGoWorld(t)
	w.cfg.Command = []string{"cat", realLog(t, "minigo", 0)[:len(realLog(t, "minigo", 0))-len("0.txt")] + "{run}.txt"}
	return runBundle(t, w, TargetSlurm)
}

func TestIngestMiniGo(t *testing.T) {
	rb := miniGoRan(t)
	rec, err := rb.ingest(t)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(rec.Problems, "\n"))
	}
	if rec.Verdict != VerdictOK || len(rec.Runs) != 10 || rec.Score == nil || rec.Score.Minutes == nil {
		t.Fatalf("record: %+v", rec)
	}
	if got := fmt.Sprintf("%.3f", *rec.Score.Minutes); got != "188.144" {
		t.Errorf("score %s, want NVIDIA's 188.144", got)
	}
	for _, r := range rec.Runs {
		if !r.Compliant || r.SHA256 == "" || r.Seed != rb.m.Runs[r.Index].Seed {
			t.Errorf("run %+v", r)
		}
	}
	if len(rec.Preflight) != 2 || rec.Preflight[0].Mode != "node" || rec.Preflight[0].PinsVerified != len(rb.m.Pins) {
		t.Errorf("preflight summaries: %+v", rec.Preflight)
	}
	var back IngestRecord
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(rec.RunDir, "ingest.json"))), &back); err != nil || back.ID != rec.ID || back.Verdict != VerdictOK {
		t.Fatalf("record file: %v %+v", err, back)
	}
	// The run record signs exactly what was verified.
	run, err := runs.Open(filepath.Join(rb.w.root, "home"), rec.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// runstest.Verified also checks the in-toto statement independently.
	rr := runstest.Verified(t, rec.RunDir)
	if rr.Status != "ok" || len(rr.Assets) != len(rb.m.Pins) {
		t.Fatalf("run record: %+v", rr)
	}
	copied := filepath.Join(rec.RunDir, "results", "result_3.txt")
	if fileSHA(t, copied) != rec.Runs[3].SHA256 {
		t.Error("the recorded copy is not the verified file")
	}
	writeFile(t, copied, []byte("edited"), 0o600)
	if _, _, err := run.Verify(); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("an edited recorded result verifies: %v", err)
	}
}

// TestIngestDetectsChangedPin: a pinned file changed after the bundle was
// made; the node's preflight report shows the new digest and ingest
// refuses the results as an integrity violation.
func TestIngestDetectsChangedPin(t *testing.T) {
	rb := miniGoRan(t)
	flags := rb.w.path("volumes", "source", "ml_perf", "flags", "19", "train.flags")
	writeFile(t, flags, []byte("--train_batch_size=8192\n"), 0o644)
	rb.preflight(t)
	rec, err := rb.ingest(t)
	if exitcode.Of(err) != exitcode.Integrity || rec.Verdict != VerdictIntegrity {
		t.Fatalf("got %v, verdict %s", err, rec.Verdict)
	}
	if !strings.Contains(strings.Join(rec.Problems, "\n"), "pinned file source/ml_perf/flags/19/train.flags changed") {
		t.Errorf("problems do not name the file:\n%s", strings.Join(rec.Problems, "\n"))
	}
	if _, err := os.Stat(filepath.Join(rec.RunDir, "record.dsse.json")); err != nil {
		t.Errorf("no signed record written: %v", err)
	}
}

// TestIngestRefuses: each way results can differ from the manifest.
func TestIngestRefuses(t *testing.T) {
	cases := []struct {
		name string
		code exitcode.Code
		want string
		mut  func(t *testing.T, rb *ranBundle)
	}{
		{"seed edited in header", exitcode.Integrity, "names seed", func(t *testing.T, rb *ranBundle) {
			p := filepath.Join(rb.results, "result_3.txt")
			b := must(os.ReadFile(p))
			s := fmt.Sprintf(`"seed":%d`, rb.m.Runs[3].Seed)
			writeFile(t, p, []byte(strings.Replace(string(b), s, fmt.Sprintf(`"seed":%d`, rb.m.Runs[2].Seed), 1)), 0o644)
		}},
		{"other image", exitcode.Integrity, "names image", func(t *testing.T, rb *ranBundle) {
			p := filepath.Join(rb.results, "result_0.txt")
			b := must(os.ReadFile(p))
			writeFile(t, p, []byte(strings.Replace(string(b), "sha256:1111", "sha256:2111", 1)), 0o644)
		}},
		{"no header", exitcode.Integrity, "does not start with", func(t *testing.T, rb *ranBundle) {
			writeFile(t, filepath.Join(rb.results, "result_1.txt"), must(os.ReadFile(realLog(t, "minigo", 1))), 0o644)
		}},
		{"extra run", exitcode.Integrity, "not a run of the manifest", func(t *testing.T, rb *ranBundle) {
			writeFile(t, filepath.Join(rb.results, "result_10.txt"), must(os.ReadFile(filepath.Join(rb.results, "result_0.txt"))), 0o644)
		}},
		{"missing run", exitcode.Negative, "no result_4.txt came back", func(t *testing.T, rb *ranBundle) {
			os.Remove(filepath.Join(rb.results, "result_4.txt"))
		}},
		{"non-compliant log", exitcode.Negative, "not compliant", func(t *testing.T, rb *ranBundle) {
			p := filepath.Join(rb.results, "result_5.txt")
			b := string(must(os.ReadFile(p)))
			i := strings.Index(b, `"key": "run_stop"`)
			j := strings.LastIndex(b[:i], "\n")
			k := strings.Index(b[i:], "\n")
			writeFile(t, p, []byte(b[:j]+b[i+k:]), 0o644)
		}},
		{"no preflight report", exitcode.Negative, "no passing node preflight report", func(t *testing.T, rb *ranBundle) {
			os.Remove(filepath.Join(rb.results, "preflight.txt"))
		}},
		{"report of another bundle", exitcode.Integrity, "is for manifest", func(t *testing.T, rb *ranBundle) {
			p := filepath.Join(rb.results, "probe.txt")
			b := string(must(os.ReadFile(p)))
			writeFile(t, p, []byte(strings.Replace(b, rb.m.Digest, strings.Repeat("e", 64), 1)), 0o644)
		}},
	}
	base := miniGoRan(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rb := *base
			rb.results = filepath.Join(t.TempDir(), "results")
			if out, err := exec.Command("cp", "-a", base.results, rb.results).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			tc.mut(t, &rb)
			rec, err := rb.ingest(t)
			if got := exitcode.Of(err); got != tc.code {
				t.Fatalf("exit %v, want %v: %v", got, tc.code, err)
			}
			if !strings.Contains(strings.Join(rec.Problems, "\n"), tc.want) {
				t.Errorf("problems lack %q:\n%s", tc.want, strings.Join(rec.Problems, "\n"))
			}
		})
	}
	// A changed bundle is refused before anything is recorded.
	rb := *base
	p := filepath.Join(rb.w.out, SbatchFile)
	b := must(os.ReadFile(p))
	writeFile(t, p, append(b, []byte("\n# edited\n")...), 0o755)
	if _, err := rb.ingest(t); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "slurm/job.sbatch differs") {
		t.Errorf("edited bundle: %v", err)
	}
}

// TestIngestDLRMSeeds: DLRM's entry point logs its seed; run.sh fills it
// in per run from the manifest, and ingest holds the logged seeds to the
// manifest's.
func TestIngestDLRMSeeds(t *testing.T) {
	w := newDLRMWorld(t)
	// The entry point writes NVIDIA's DLRM log i with a seed record for
	// the seed run.sh substitutes, into dlrm.log, as the reference does.
	tmpl := filepath.Join(t.TempDir(), "logs")
	for i := 0; i < 5; i++ {
		b := string(must(os.ReadFile(realLog(t, "dlrm", i))))
		k := strings.Index(b, `"key": "init_start"`)
		nl := strings.Index(b[k:], "\n") + k + 1
		line := b[strings.LastIndex(b[:k], "\n")+1 : nl]
		seedLine := strings.Replace(line, `"key": "init_start"`, `"key": "seed"`, 1)
		seedLine = strings.Replace(seedLine, `"event_type": "INTERVAL_START"`, `"event_type": "POINT_IN_TIME"`, 1)
		seedLine = strings.Replace(seedLine, `"value": null`, `"value": SEEDVALUE`, 1)
		writeFile(t, filepath.Join(tmpl, fmt.Sprintf("result_%d.txt", i)), []byte(b[:nl]+seedLine+b[nl:]), 0o644)
	}
	w.cfg.Command = []string{"sh", "-c", "sed s/SEEDVALUE/{seed}/ " + tmpl + "/result_{run}.txt > dlrm.log"}
	w.cfg.LogFile = "dlrm.log"
	rb := runBundle(t, w, TargetSlurm)
	if !strings.Contains(string(must(os.ReadFile(filepath.Join(rb.results, "result_0.txt")))), fmt.Sprintf(`"key": "seed", "value": %d`, rb.m.Runs[0].Seed)) {
		t.Fatal("the seed was not substituted into the log")
	}
	rec, err := rb.ingest(t)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(rec.Problems, "\n"))
	}
	for _, r := range rec.Runs {
		if len(r.LoggedSeeds) != 1 || r.LoggedSeeds[0] != r.Seed {
			t.Errorf("run %d logged %v, seed %d", r.Index, r.LoggedSeeds, r.Seed)
		}
	}
	// Run 2 logs run 1's seed: two runs with one seed.
	p := filepath.Join(rb.results, "result_2.txt")
	b := string(must(os.ReadFile(p)))
	b = strings.Replace(b, fmt.Sprintf(`"key": "seed", "value": %d`, rb.m.Runs[2].Seed), fmt.Sprintf(`"key": "seed", "value": %d`, rb.m.Runs[1].Seed), 1)
	writeFile(t, p, []byte(b), 0o644)
	rec, err = rb.ingest(t)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(strings.Join(rec.Problems, "\n"), "logs seed") {
		t.Fatalf("repeated seed: %v\n%s", err, strings.Join(rec.Problems, "\n"))
	}
}

// TestIngestPlanBundle: a plan bundle never ran.
func TestIngestPlanBundle(t *testing.T) {
	w := newMiniGoWorld(t)
	w.cfg.Command = nil
	w.reparse(t)
	if _, err := Handoff(context.Background(), w.opts(TargetSlurm), w.out, true); err != nil {
		t.Fatal(err)
	}
	_, err := Ingest(context.Background(), w.out, t.TempDir(), IngestOptions{Home: t.TempDir()})
	if exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("got %v", err)
	}
}

// TestPreflightDetectsEveryChangedPin flips one byte of every pinned DLRM
// file (same size, other content) and removes nothing: one preflight run
// must name every one of them.
func TestPreflightDetectsEveryChangedPin(t *testing.T) {
	w := newDLRMWorld(t)
	m := w.bundle(t, TargetSlurm)
	dirs := map[string]string{ClassDataset: w.path("volumes", "dataset"), ClassCheckpoint: w.path("volumes", "checkpoint"), ClassSource: w.path("volumes", "source")}
	for _, p := range m.Pins {
		if p.Kind != KindFile {
			continue
		}
		f := filepath.Join(dirs[p.Class], filepath.FromSlash(p.Path))
		b := must(os.ReadFile(f))
		b[len(b)/2] ^= 0xff
		writeFile(t, f, b, 0o644)
	}
	out, code := runPreflight(t, w.out, gpuStack(t, 1, "dlrm"), "--mode", "node")
	if code != 3 {
		t.Fatalf("exit %d", code)
	}
	fails := strings.Join(failLines(out), "\n")
	for _, p := range m.Pins {
		if p.Kind == KindFile && !strings.Contains(fails, "/"+p.Path+" has sha256") {
			t.Errorf("changed %s not reported", p.Path)
		}
	}
	if n := len(failLines(out)); n != len(m.Pins)-1 {
		t.Errorf("%d failures for %d changed files", n, len(m.Pins)-1)
	}
}
