package edm

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

// TestRuntimeWithEDMSource runs the runtime end to end against the EDM
// source tree named by REPRO_EDM_SOURCE (a checkout of NVlabs/edm, which is
// never committed): the fixture network is a tiny SongUNet built from that
// tree's own training/networks.py and pickled by its own persistence
// module, and generation uses that tree's generate.py (EDM's sampler) with
// the CIFAR-10 settings of the model table. REPRO_EDM_PYTHON picks the
// interpreter (default /usr/bin/python3); REPRO_EDM_GPU=1 keeps the whole
// GPU preflight and generates on the GPU; REPRO_EDM_REPORT names a folder
// for the results. It is the one GPU-only test: skipped on a machine
// without a GPU (CI has none), and on one with a GPU it needs
// REPRO_EDM_SOURCE (bench/edm-gpu-check.sh sets these).
func TestRuntimeWithEDMSource(t *testing.T) {
	testenv.SkipWithoutGPU(t)
	src := testenv.Getenv(t, "REPRO_EDM_SOURCE", "a checkout of NVlabs/edm to run the runtime on EDM's own code")
	python := os.Getenv("REPRO_EDM_PYTHON")
	if python == "" {
		python = systemPython
	}
	gpu := os.Getenv("REPRO_EDM_GPU") == "1"
	m, err := digest.Tree(src)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := catalog.Default().Lookup(SourceID); err == nil && e.TreeDigest != nil && *e.TreeDigest == m.Digest() {
		t.Logf("%s is the pinned EDM source (commit %s)", src, e.Facts["commit"])
	} else {
		t.Logf("%s has tree digest %s, not the pinned one", src, m.Digest().Hex())
	}
	dir := t.TempDir()
	// EDM's own networks.py takes EDM's SongUNet options; the stand-in
	// tree's does not.
	mode := "real"
	if nets, err := os.ReadFile(filepath.Join(src, "training", "networks.py")); err == nil && !bytes.Contains(nets, []byte("embedding_type")) {
		mode = "plain"
	}
	args := []string{"-B", makeFixtures, mode, src, dir, strconv.Itoa(fixtureFeatureDim)}
	if mode == "plain" {
		args = append(args[:2], args[3:]...)
	}
	cmd := exec.Command(python, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making fixtures from %s: %v\n%s", src, err, out)
	}
	st := fixtureStoreSrc(t, defaultSet(dir), src)
	report := os.Getenv("REPRO_EDM_REPORT")
	var results []*FIDResult
	for _, safe := range []bool{false, true} {
		opts := FIDOptions{
			Model: fixtureModel, Seeds: []int64{0, 1, 2, 3, 4, 5, 6, 7}, Batch: 4, Safe: safe,
			SourceDir: src, Python: python, RunDir: filepath.Join(t.TempDir(), "run"), Log: testLog{t},
			test: &testHooks{cpu: !gpu, featureDim: fixtureFeatureDim},
		}
		res, err := RunFID(context.Background(), st, opts)
		if err != nil {
			t.Fatalf("safe=%v: %v", safe, err)
		}
		t.Logf("safe=%v: %s; runtime %s", safe, res.Summary(), res.Runtime)
		results = append(results, res)
		if report != "" {
			b, _ := json.MarshalIndent(res, "", "  ")
			os.WriteFile(filepath.Join(report, "result-safe-"+strconv.FormatBool(safe)+".json"), b, 0o644)
		}
	}
	a, b := results[0], results[1]
	if !gpu && a.Features.SHA256 != b.Features.SHA256 {
		t.Fatalf("the safe path generated other features on the CPU")
	}
	if math.Abs(a.FID-b.FID) > 1e-3*math.Max(1, a.FID) {
		t.Fatalf("pickle path FID %g, safe path %g", a.FID, b.FID)
	}
	for _, r := range results {
		if gpu && (r.Torch == nil || !r.Torch.CUDAAvailable || len(r.GPUs) == 0) {
			t.Fatalf("no GPU preflight recorded: %+v", r)
		}
	}
}
