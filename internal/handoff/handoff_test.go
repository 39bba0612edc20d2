package handoff

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// missingCase breaks exactly one requirement of a complete world.
type missingCase struct {
	req  string
	want string // substring of the requirement's line
	code exitcode.Code
	mut  func(t *testing.T, w *world)
}

var miniGoMissing = []missingCase{
	{"minigo.image", "names no digest", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Image = "nvcr.io/nvidia/tensorflow:22.09-tf1-py3"
	}},
	{"minigo.image", "carries a credential", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Image = "user:hunter2@nvcr.io/nvidia/tensorflow@sha256:" + strings.Repeat("1", 64)
	}},
	{"minigo.pro-games", "license_ruling needs license", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.ProGames = &ProGamesDecision{Decision: "include", Reviewer: "R", Date: "2026-11-01", SourceURL: "https://example.org/games",
			Files: []PinnedFile{{Path: "pro/a.sgf", SHA256: strings.Repeat("a", 64)}}}
		w.cfg.Volumes.Dataset = &Volume{Path: w.path("volumes", "dataset")}
		writeFile(t, w.path("volumes", "dataset", "pro", "a.sgf"), []byte("(;GM[1])"), 0o644)
		w.cfg.ProGames.Files[0].SHA256 = fileSHA(t, w.path("volumes", "dataset", "pro", "a.sgf"))
	}},
	{"minigo.source", "volumes.source.path is not set", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Volumes.Source.Path = ""
	}},
	{"minigo.source", "tree digest", exitcode.Integrity, func(t *testing.T, w *world) {
		writeFile(t, w.path("volumes", "source", "ml_perf", "train_loop.py"), []byte("print('edited')\n"), 0o644)
	}},
	{"minigo.gpu-runtime", "no driver floor is on record for CUDA 12.2", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.ImageCUDA = "12.2"
	}},
	{"minigo.gpu-runtime", `"gpus" is not set`, exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.GPUs = 0
	}},
	{"minigo.environment", "node.min_memory_gib is not set", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Node.MinMemoryGiB = 0
	}},
	{"minigo.environment", "models.target is not set", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Models.Target = nil
	}},
	{"minigo.environment", "the review recorded", exitcode.Integrity, func(t *testing.T, w *world) {
		writeFile(t, w.path("volumes", "checkpoint", "target", "target.minigo.tf"), []byte("another model"), 0o644)
	}},
	{"minigo.entrypoint", `"command" is not set`, exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Command = nil
	}},
	{"minigo.data-classes", "overlap", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Volumes.Output.Path = w.path("volumes", "checkpoint", "results")
	}},
	{"minigo.data-classes", "looks like a credential", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Env = map[string]string{"WANDB_API_KEY": "0123456789abcdef"}
	}},
	{"minigo.data-classes", "volumes.output is not set", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Volumes.Output = nil
	}},
}

var dlrmMissing = []missingCase{
	{"dlrm.image", "no image", exitcode.Precondition, func(t *testing.T, w *world) { w.cfg.Image = "" }},
	{"dlrm.checkpoint", "tb00_40M.pt: no such file", exitcode.Precondition, func(t *testing.T, w *world) {
		os.Remove(w.path("volumes", "checkpoint", "tb00_40M.pt"))
	}},
	{"dlrm.checkpoint", "upstream publishes", exitcode.Integrity, func(t *testing.T, w *world) {
		writeFile(t, w.path("volumes", "checkpoint", "tb00_40M.pt"), []byte("not the model"), 0o644)
	}},
	{"dlrm.dataset", "day_7", exitcode.Precondition, func(t *testing.T, w *world) {
		os.Remove(w.path("volumes", "dataset", "day_7"))
	}},
	{"dlrm.dataset", "truncated or wrong file", exitcode.Integrity, func(t *testing.T, w *world) {
		os.Truncate(w.path("volumes", "dataset", "day_23"), 10)
	}},
	{"dlrm.license", "no license acceptance is recorded", exitcode.Precondition, func(t *testing.T, w *world) { w.cfg.CriteoLicense = nil }},
	{"dlrm.preprocessed", "silently", exitcode.Precondition, func(t *testing.T, w *world) {
		os.Remove(w.path("volumes", "dataset", "terabyte_processed_train.bin"))
	}},
	{"dlrm.runtime", `the branch "master"`, exitcode.Precondition, func(t *testing.T, w *world) { w.cfg.Runtime.MLPerfLogging = "master" }},
	{"dlrm.gpu-runtime", `"image_cuda" is not set`, exitcode.Precondition, func(t *testing.T, w *world) { w.cfg.ImageCUDA = "" }},
	{"dlrm.environment", "node.min_disk_gib is not set", exitcode.Precondition, func(t *testing.T, w *world) { w.cfg.Node.MinDiskGiB = 0 }},
	{"dlrm.source", "volumes.source.path", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Volumes.Source.Path = w.path("no-such-checkout")
	}},
	{"dlrm.data-classes", "overlap", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Volumes.Output.Path = w.path("volumes", "dataset")
	}},
	{"dlrm.data-classes", "carries what looks like a credential", exitcode.Precondition, func(t *testing.T, w *world) {
		w.cfg.Command = []string{"bash", "bench/run_and_time.sh", "--hf-token=hf_abcdefghijklmnopqrstuvwxyz"}
	}},
}

// TestEachRequirementMissing breaks one requirement at a time: the handoff
// fails with the right exit code and a line for that requirement only,
// and writes nothing.
func TestEachRequirementMissing(t *testing.T) {
	covered := map[string]bool{}
	for _, set := range []struct {
		newWorld func(testing.TB) *world
		cases    []missingCase
	}{{newMiniGoWorld, miniGoMissing}, {newDLRMWorld, dlrmMissing}} {
		for _, tc := range set.cases {
			t.Run(tc.req+"/"+tc.want, func(t *testing.T) {
				w := set.newWorld(t)
				tc.mut(t, w)
				w.reparse(t)
				p, err := Handoff(context.Background(), w.opts(TargetSlurm), w.out, false)
				if err == nil {
					t.Fatal("handoff succeeded with a requirement missing")
				}
				if got := exitcode.Of(err); got != tc.code {
					t.Fatalf("exit code %v, want %v (%v)", got, tc.code, err)
				}
				failed := p.Failed()
				if len(failed) != 1 || failed[0].Requirement != tc.req {
					var lines []string
					for _, r := range failed {
						lines = append(lines, r.Line())
					}
					t.Fatalf("failed requirements:\n%s\nwant only %s", strings.Join(lines, "\n"), tc.req)
				}
				if line := failed[0].Line(); !strings.Contains(line, tc.want) || strings.Contains(line, "\n") {
					t.Fatalf("line %q does not say %q", line, tc.want)
				}
				if _, err := os.Stat(w.out); !os.IsNotExist(err) {
					t.Fatalf("a bundle was written: %v", err)
				}
				covered[tc.req] = true
			})
		}
	}
	for _, name := range WorkloadNames() {
		w, _ := Lookup(name)
		for _, r := range w.Requirements {
			if r.ID == "minigo.pro-games" || covered[r.ID] {
				continue
			}
			t.Errorf("no test breaks requirement %s", r.ID)
		}
	}
	if !covered["minigo.pro-games"] {
		t.Error("no test breaks minigo.pro-games")
	}
}

// TestBareMachine: with no configuration every requirement that needs one
// fails, and nothing is written.
func TestBareMachine(t *testing.T) {
	for _, name := range WorkloadNames() {
		w, _ := Lookup(name)
		out := filepath.Join(t.TempDir(), "X")
		cat := newMiniGoWorld(t).cat
		if name == "dlrm" {
			cat = newDLRMWorld(t).cat
		}
		p, err := Handoff(context.Background(), Options{Workload: name, Catalog: cat, StateDir: t.TempDir()}, out, false)
		if exitcode.Of(err) != exitcode.Precondition {
			t.Fatalf("%s: %v, want a precondition error", name, err)
		}
		want := len(w.Requirements)
		if name == "minigo" {
			want-- // pro_games defaults to the reviewed "none"
		}
		if got := len(p.Failed()); got != want {
			t.Errorf("%s: %d requirements failed, want %d", name, got, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: bundle written", name)
		}
	}
}

// TestCompleteBundle writes bundles from complete fixture worlds for both
// targets; each verifies, and any edit to a bundle file is found.
func TestCompleteBundle(t *testing.T) {
	for _, nw := range []func(testing.TB) *world{newMiniGoWorld, newDLRMWorld} {
		for _, target := range []string{TargetSlurm, TargetKubernetes} {
			w := nw(t)
			m := w.bundle(t, target)
			t.Run(m.Workload+"/"+target, func(t *testing.T) {
				if !m.Ready || len(m.Missing) != 0 {
					t.Fatalf("manifest not ready: %+v", m.Missing)
				}
				got, err := VerifyBundle(w.out)
				if err != nil {
					t.Fatal(err)
				}
				if got.Digest != m.Digest || m.Image == "" {
					t.Fatalf("digest %s, want %s", got.Digest, m.Digest)
				}
				for _, f := range m.Files {
					if _, err := os.Stat(filepath.Join(w.out, f)); err != nil {
						t.Errorf("bundle lacks %s", f)
					}
				}
				wantPins := map[string]int{"minigo": 1 + 2 + 2, "dlrm": 1 + 1 + criteoDays + 3}[m.Workload]
				if len(m.Pins) != wantPins {
					t.Errorf("%d pins, want %d", len(m.Pins), wantPins)
				}
				seeds := map[int64]bool{}
				for _, r := range m.Runs {
					if seeds[r.Seed] {
						t.Errorf("seed %d repeats", r.Seed)
					}
					seeds[r.Seed] = true
				}
				if len(m.Runs) != map[string]int{"minigo": 10, "dlrm": 5}[m.Workload] {
					t.Errorf("%d runs", len(m.Runs))
				}
				for _, c := range m.Checks {
					if c.Where == Here && (c.Result != ResultOK || c.Host != "test-host" || c.At.IsZero()) {
						t.Errorf("check %+v not recorded as made here", c)
					}
					if c.Where != Here && c.Result != ResultDeferred {
						t.Errorf("check %+v not deferred", c)
					}
				}
				if len(m.Retention) == 0 || len(m.Relaxations) == 0 {
					t.Error("no retention rules or relaxations")
				}
				readme := string(must(os.ReadFile(filepath.Join(w.out, ReadmeFile))))
				for _, class := range []string{"### checkpoint", "### output", "who may read it", "how it is deleted", "rm -rf", "Relaxed controls", "read-only source"} {
					if m.Target == TargetKubernetes && class == "rm -rf" {
						class = "kubectl -n default delete pvc"
					}
					if !strings.Contains(readme, class) {
						t.Errorf("README lacks %q", class)
					}
				}
				for _, f := range m.Files {
					tamper(t, w.out, f)
				}
			})
		}
	}
}

// tamper changes one byte of a bundle file and checks that VerifyBundle
// refuses the bundle, then restores the file.
func tamper(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	orig := must(os.ReadFile(p))
	mod := append([]byte(nil), orig...)
	i := len(mod) / 2
	mod[i] ^= 0x01
	if err := os.WriteFile(p, mod, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBundle(dir); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("changing %s: VerifyBundle = %v, want an integrity error", name, err)
	}
	if err := os.WriteFile(p, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBundle(dir); err != nil {
		t.Fatalf("restored %s: %v", name, err)
	}
}

// TestPlanBundle: --plan writes a bundle marked not ready whose preflight
// refuses to run.
func TestPlanBundle(t *testing.T) {
	w := newDLRMWorld(t)
	w.cfg.CriteoLicense = nil
	w.reparse(t)
	p, err := Handoff(context.Background(), w.opts(TargetSlurm), w.out, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := VerifyBundle(w.out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Ready || len(m.Missing) != 1 || m.Missing[0].Requirement != "dlrm.license" || p.Ready() {
		t.Fatalf("plan manifest: ready=%v missing=%+v", m.Ready, m.Missing)
	}
	out, code := runPreflight(t, w.out, "")
	if code != 3 || !strings.Contains(out, "preflight: FAIL dlrm.ready: this bundle was written with --plan") {
		t.Fatalf("plan preflight exit %d:\n%s", code, out)
	}
	if !strings.Contains(string(must(os.ReadFile(filepath.Join(w.out, ReadmeFile)))), "PLAN, NOT READY") {
		t.Error("README does not say the bundle is a plan")
	}
}

// TestOutNotEmpty: a bundle never lands in a folder that has files.
func TestOutNotEmpty(t *testing.T) {
	w := newMiniGoWorld(t)
	writeFile(t, filepath.Join(w.out, "old.txt"), []byte("x"), 0o644)
	w.reparse(t)
	_, err := Handoff(context.Background(), w.opts(TargetSlurm), w.out, false)
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("got %v", err)
	}
	if err := os.Remove(filepath.Join(w.out, "old.txt")); err != nil {
		t.Fatal(err)
	}
	w.bundle(t, TargetSlurm) // an empty folder is fine
}

// TestCheckpointFirstUse: the first verification records the SHA-256; a
// later file with the same MD5 but other bytes would be refused. MD5
// collisions cannot be made here, so the record is edited to stand for
// the earlier file instead.
func TestCheckpointFirstUse(t *testing.T) {
	w := newDLRMWorld(t)
	m := w.bundle(t, TargetSlurm)
	fu := m.Decisions.CheckpointFirstUse
	if fu == nil || fu.SHA256 != fileSHA(t, w.path("volumes", "checkpoint", "tb00_40M.pt")) {
		t.Fatalf("first use not recorded: %+v", fu)
	}
	doc := must(readFirstUse(w.state))
	e := doc.Entries[idDLRMCheckpoint]
	e.SHA256 = strings.Repeat("0", 64)
	doc.Entries[idDLRMCheckpoint] = e
	writeFile(t, filepath.Join(w.state, firstUseName), must(json.Marshal(doc)), 0o600)
	os.RemoveAll(w.out)
	p, err := Handoff(context.Background(), w.opts(TargetSlurm), w.out, false)
	if exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("got %v, want an integrity error", err)
	}
	if f := p.Failed(); len(f) != 1 || !strings.Contains(f[0].Line(), "refusing a different file with the same MD5") {
		t.Fatalf("failed: %+v", f)
	}
}

// TestConfigOnlyForWorkload: fields of the other workload are a usage
// error, not silently ignored.
func TestConfigOnlyForWorkload(t *testing.T) {
	w := newMiniGoWorld(t)
	w.cfg.CriteoLicense = &LicenseAcceptance{License: "x"}
	_, err := Prepare(context.Background(), w.opts(TargetSlurm))
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "criteo_license") {
		t.Fatalf("got %v", err)
	}
	w = newDLRMWorld(t)
	w.cfg.Seeds = []int64{1, 2, 3, 4, 4}
	_, err = Prepare(context.Background(), w.opts(TargetSlurm))
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("got %v", err)
	}
}

// TestProGamesIncluded: a complete review of included games pins the game
// files in the dataset volume and says what the decision implies.
func TestProGamesIncluded(t *testing.T) {
	w := newMiniGoWorld(t)
	game := w.path("volumes", "dataset", "pro", "9x9_pro_IYHN.sgf")
	writeFile(t, game, []byte("(;GM[1]SZ[9];B[ee])"), 0o644)
	w.cfg.Volumes.Dataset = &Volume{Path: w.path("volumes", "dataset")}
	w.cfg.ProGames = &ProGamesDecision{Decision: "include", Reviewer: "R. Eviewer", Date: "2026-11-02",
		SourceURL:     "https://github.com/mlcommons/training/tree/ea50328d/reinforcement/tensorflow/minigo/benchmark_sgf",
		Files:         []PinnedFile{{Path: "pro/9x9_pro_IYHN.sgf", SHA256: fileSHA(t, game)}},
		LicenseRuling: &LicenseRuling{License: "none stated", Ruling: "usable for internal validation only", Reviewer: "L. Egal", Date: "2026-11-02"}}
	m := w.bundle(t, TargetSlurm)
	if m.Decisions.ProGames.Decision != "include" {
		t.Fatal("decision not recorded")
	}
	found := false
	for _, p := range m.Pins {
		found = found || (p.Class == ClassDataset && p.Path == "pro/9x9_pro_IYHN.sgf" && p.Origin == "review")
	}
	if v, ok := m.Volume(ClassDataset); !found || !ok || !v.ReadOnly {
		t.Fatalf("game file not pinned in a read-only dataset volume: %+v", m.Pins)
	}
	if !strings.Contains(string(must(os.ReadFile(filepath.Join(w.out, ReadmeFile)))), "implies the v0.5 quality metric") {
		t.Error("README does not say what including games implies")
	}
}
