package edm

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/testenv"
)

// scipyFID computes the FID of a features file against a reference with
// numpy and scipy, as EDM's fid.py does.
const scipyFID = `
import json, sys
import numpy as np, scipy.linalg
x = np.load(sys.argv[1]).astype(np.float64)
ref = np.load(sys.argv[2])
mu = x.sum(0) / len(x)
sigma = (x.T @ x - np.outer(mu, mu) * len(x)) / (len(x) - 1)
s, _ = scipy.linalg.sqrtm(np.dot(sigma, ref["sigma"]), disp=False)
print(json.dumps({"fid": float(np.real(np.square(mu - ref["mu"]).sum() + np.trace(sigma + ref["sigma"] - s * 2)))}))
`

func TestFIDFixtureRunOnCPU(t *testing.T) {
	needPython(t, "torch", "numpy", "scipy")
	dir := fixtures(t)
	st := fixtureStore(t, defaultSet(dir))
	seeds := []int64{0, 1, 2, 3, 4, 5, 6}
	opts := cpuOptions(t, seeds)
	res, err := RunFID(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Images != len(seeds) || res.Seeds != "0-6" || res.Comparable || res.Note == "" {
		t.Fatalf("result %+v", res)
	}
	if res.RuntimeDigest != RuntimeTreeDigest || res.Source.TreeDigest.IsZero() || len(res.Assets) != 3 {
		t.Fatalf("provenance missing: %+v", res)
	}

	// The runtime's features are what PyTorch computes directly from the
	// same pickles with the same seeds, labels and sampler.
	sampler, _ := json.Marshal(fastSampler.kwargs())
	direct := t.TempDir()
	for _, f := range []string{"checkpoint.pkl", "detector.pkl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(direct, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"features", srcTree(t), direct}
	for _, s := range seeds {
		args = append(args, strconv.FormatInt(s, 10))
	}
	t.Setenv("SAMPLER", string(sampler))
	t.Setenv("BATCH", strconv.Itoa(opts.Batch))
	runScript(t, makeFixtures, args...)
	want := readNPYFile(t, filepath.Join(direct, "direct-features.npy"), len(seeds)*fixtureFeatureDim)
	got := readNPYFile(t, res.Features.Path, len(seeds)*fixtureFeatureDim)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("feature %d: runtime %g, direct %g", i, got[i], want[i])
		}
	}

	// The FID is numpy/scipy's for the same features.
	out := runPython(t, ".", scipyFID, res.Features.Path, filepath.Join(dir, "ref.npz"))
	var ref struct{ FID float64 }
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.FID-ref.FID) > 1e-8*math.Max(1, ref.FID) {
		t.Fatalf("FID %.12g, numpy/scipy %.12g", res.FID, ref.FID)
	}
	b, err := os.ReadFile(filepath.Join(opts.RunDir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored FIDResult
	if err := json.Unmarshal(b, &stored); err != nil || stored.FID != res.FID {
		t.Fatalf("result.json: %v, %s", err, b)
	}
	t.Logf("fixture FID %.6f (scipy %.6f)", res.FID, ref.FID)
}

// pythonCanary returns an interpreter wrapper that leaves a file behind
// when it is started, and that file's path.
func pythonCanary(t *testing.T) (python, canary string) {
	dir := t.TempDir()
	canary = filepath.Join(dir, "python-started")
	python = filepath.Join(dir, "python3")
	script := "#!/bin/sh\ntouch '" + canary + "'\nexec " + systemPython + " \"$@\"\n"
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return python, canary
}

func TestFIDFailsClosedBeforePython(t *testing.T) {
	dir := fixtures(t)
	m, _ := LookupModel(fixtureModel)
	for _, c := range []struct {
		name     string
		unpinned []string
		prepare  func(t *testing.T, opts *FIDOptions, st storeHandle)
		code     exitcode.Code
		want     string
	}{
		{name: "unpinned-checkpoint", unpinned: []string{m.Checkpoint}, code: exitcode.Precondition, want: "repro catalog review " + m.Checkpoint},
		{name: "all-unpinned", unpinned: []string{m.Checkpoint, m.Detector, m.Reference}, code: exitcode.Precondition,
			want: "unpinned as well: " + m.Detector + ", " + m.Reference},
		{name: "not-fetched", prepare: func(t *testing.T, _ *FIDOptions, st storeHandle) { st.remove(t, m.Detector) },
			code: exitcode.Precondition, want: "repro fetch " + m.Detector},
		{name: "tampered-checkpoint", prepare: func(t *testing.T, _ *FIDOptions, st storeHandle) { st.corrupt(t, m.Checkpoint) },
			code: exitcode.Integrity, want: "sha256 mismatch"},
		{name: "tampered-reference", prepare: func(t *testing.T, _ *FIDOptions, st storeHandle) { st.corrupt(t, m.Reference) },
			code: exitcode.Integrity, want: m.Reference},
		{name: "no-source", prepare: func(t *testing.T, o *FIDOptions, _ storeHandle) { o.SourceDir = "" },
			code: exitcode.Precondition, want: "git clone https://github.com/NVlabs/edm"},
		{name: "missing-source", prepare: func(t *testing.T, o *FIDOptions, _ storeHandle) { o.SourceDir = filepath.Join(t.TempDir(), "edm") },
			code: exitcode.Precondition, want: "is missing"},
		{name: "modified-source", prepare: func(t *testing.T, o *FIDOptions, _ storeHandle) {
			o.SourceDir = copySource(t)
			appendFile(t, filepath.Join(o.SourceDir, "generate.py"), "\nimport os\n")
		}, code: exitcode.Integrity, want: "does not match its pin"},
		{name: "source-with-bytecode", prepare: func(t *testing.T, o *FIDOptions, _ storeHandle) {
			o.SourceDir = copySource(t)
			os.Mkdir(filepath.Join(o.SourceDir, "__pycache__"), 0o700)
			appendFile(t, filepath.Join(o.SourceDir, "__pycache__", "generate.cpython-311.pyc"), "x")
		}, code: exitcode.Integrity, want: "remove every __pycache__ folder"},
		{name: "no-interpreter", prepare: func(t *testing.T, o *FIDOptions, _ storeHandle) { o.Python = "/nonexistent/python3" },
			code: exitcode.Precondition, want: "no Python interpreter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := fixtureStore(t, defaultSet(dir), c.unpinned...)
			opts := cpuOptions(t, []int64{0, 1})
			python, canary := pythonCanary(t)
			opts.Python = python
			if c.prepare != nil {
				c.prepare(t, &opts, storeHandle{st.Home()})
			}
			_, err := RunFID(context.Background(), st, opts)
			wantCode(t, err, c.code, c.want)
			if len(c.unpinned) > 0 && !errors.Is(err, catalog.ErrUnpinned) {
				t.Fatalf("error %v is not ErrUnpinned", err)
			}
			if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("Python was started")
			}
		})
	}
}

func TestGPUPreflight(t *testing.T) {
	dir := fixtures(t)
	st := fixtureStore(t, defaultSet(dir))

	// No driver: nvidia-smi is not on PATH.
	t.Setenv("PATH", t.TempDir())
	opts := cpuOptions(t, []int64{0, 1})
	opts.test.cpu = false
	python, canary := pythonCanary(t)
	opts.Python = python
	_, err := RunFID(context.Background(), st, opts)
	wantCode(t, err, exitcode.Precondition, "nvidia-smi not found")
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("Python was started without a GPU")
	}

	// A driver that answers, and a PyTorch without CUDA (Debian's CPU
	// build) on a machine without a GPU: the runtime's own torch check
	// stops the run. On a GPU machine the CUDA half belongs to
	// TestRuntimeWithEDMSource.
	if testenv.HasGPU() {
		t.Log("this machine has a GPU: the no-CUDA preflight is checked where there is none")
		return
	}
	bin := t.TempDir()
	smi := "#!/bin/sh\necho '0, NVIDIA H200, 580.159.03, 143771, 143000'\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	opts.RunDir = filepath.Join(t.TempDir(), "run")
	_, err = RunFID(context.Background(), st, opts)
	wantCode(t, err, exitcode.Precondition, "torch.cuda.is_available() false")
	if _, err := os.Stat(canary); err != nil {
		t.Fatal("the torch preflight did not run in Python")
	}
	if _, err := os.Stat(filepath.Join(opts.RunDir, "features.npy")); err == nil {
		t.Fatal("features were written although the preflight failed")
	}
}

func TestParseNvidiaSMI(t *testing.T) {
	gpus, err := parseNvidiaSMI([]byte("0, NVIDIA H200, 580.159.03, 143771, 143000\n1, NVIDIA A100-SXM4-80GB, 535.54.03, 81920, 100\n"))
	if err != nil || len(gpus) != 2 || gpus[0].Name != "NVIDIA H200" || gpus[1].FreeMiB != 100 || gpus[0].Driver != "580.159.03" {
		t.Fatalf("%+v, %v", gpus, err)
	}
	for _, bad := range []string{"", "No devices were found\n", "0, x, 1.0, a, 3\n", "0, x, , 1, 1\n", "-1, x, 1, 1, 1\n"} {
		if _, err := parseNvidiaSMI([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// storeHandle reaches into a test store's files.
type storeHandle struct{ home string }

func (h storeHandle) blob(t *testing.T, id string) string {
	b, err := os.ReadFile(filepath.Join(h.home, "refs", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct{ SHA256 string }
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(h.home, "blobs", "sha256", ref.SHA256)
}

func (h storeHandle) remove(t *testing.T, id string) {
	if err := os.Remove(h.blob(t, id)); err != nil {
		t.Fatal(err)
	}
}

func (h storeHandle) corrupt(t *testing.T, id string) {
	p := h.blob(t, id)
	os.Chmod(p, 0o600)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copySource(t *testing.T) string {
	dst := filepath.Join(t.TempDir(), "edm")
	if err := copyTree(srcTree(t), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func appendFile(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
