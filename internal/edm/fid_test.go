package edm

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// fidCase makes features and reference statistics with numpy and computes
// the FID independently with EDM's formula (scipy.linalg.sqrtm, real part).
const fidCaseScript = `
import json, sys
import numpy as np, scipy.linalg
n, nref, d, seed, compressed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
rng = np.random.default_rng(seed)
mix = rng.normal(size=(d, d)) / np.sqrt(d)
feats = (rng.normal(size=(n, d)) @ mix + 0.3).astype(np.float32)
ref = rng.normal(size=(nref, d)) @ (mix + 0.1 * rng.normal(size=(d, d))) - 0.2
np.save("features.npy", feats)
def stats(x):
    x = x.astype(np.float64)
    mu = x.sum(0) / len(x)
    sigma = (x.T @ x - np.outer(mu, mu) * len(x)) / (len(x) - 1)
    return mu, sigma
mu_r, sigma_r = stats(ref)
(np.savez_compressed if compressed else np.savez)("ref.npz", mu=mu_r, sigma=sigma_r)
mu, sigma = stats(feats)
np.save("cov.npy", np.cov(feats.astype(np.float64), rowvar=False))
s, _ = scipy.linalg.sqrtm(np.dot(sigma, sigma_r), disp=False)
fid = float(np.real(np.square(mu - mu_r).sum() + np.trace(sigma + sigma_r - s * 2)))
print(json.dumps({"fid": fid}))
`

func TestFIDMatchesScipy(t *testing.T) {
	needPython(t, "numpy", "scipy")
	for _, c := range []struct {
		name             string
		n, nref, d, seed int
		compressed       bool
		tol              float64
	}{
		{"full-rank", 400, 600, 48, 1, false, 1e-8},
		{"compressed-npz", 300, 300, 32, 2, true, 1e-8},
		// Fewer vectors than dimensions: a singular covariance, where
		// scipy's Schur square root is itself only approximate.
		{"rank-deficient", 20, 300, 40, 3, false, 1e-5},
		{"both-rank-deficient", 20, 30, 40, 4, false, 1e-5},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := runPython(t, dir, fidCaseScript, strconv.Itoa(c.n), strconv.Itoa(c.nref), strconv.Itoa(c.d), strconv.Itoa(c.seed), map[bool]string{true: "1", false: "0"}[c.compressed])
			var want struct{ FID float64 }
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatalf("python output %q: %v", out, err)
			}
			f, err := os.Open(filepath.Join(dir, "features.npy"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ReadFeatures(f, c.n, c.d)
			if err != nil {
				t.Fatal(err)
			}
			ref := readRefFile(t, filepath.Join(dir, "ref.npz"), c.d)
			fid, err := FrechetDistance(got, ref)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(fid-want.FID) > c.tol*math.Max(1, math.Abs(want.FID)) {
				t.Fatalf("FID = %.12g, numpy/scipy = %.12g", fid, want.FID)
			}
			// EDM's covariance is numpy's unbiased one.
			cov := readNPYFile(t, filepath.Join(dir, "cov.npy"), c.d*c.d)
			for i, v := range cov {
				if math.Abs(got.Sigma[i]-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Fatalf("sigma[%d] = %g, np.cov = %g", i, got.Sigma[i], v)
				}
			}
			t.Logf("FID %.10g (scipy %.10g)", fid, want.FID)
		})
	}
}

// Both routes of the trace computation agree where both apply.
func TestTraceSqrtRoutesAgree(t *testing.T) {
	a, b := randomStats(64, 5), randomStats(64, 6)
	fast, err := traceSqrtProduct(a.Sigma, b.Sigma, 64)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := traceSqrtEigen(mat.NewSymDense(64, a.Sigma), mat.NewSymDense(64, b.Sigma), 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fast-slow) > 1e-9*slow {
		t.Fatalf("Cholesky route %.15g, eigenvector route %.15g", fast, slow)
	}
}

func TestFIDOfIdenticalStatsIsZero(t *testing.T) {
	st := Stats{Dim: 2, Mu: []float64{1, 2}, Sigma: []float64{2, 0.5, 0.5, 1}}
	fid, err := FrechetDistance(st, st)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fid) > 1e-12 {
		t.Fatalf("FID of identical statistics = %g", fid)
	}
	// Diagonal case by hand: mu differ by (3, 4), Σa = diag(4, 9), Σb = diag(1, 1):
	// 25 + (4+9+1+1) − 2(2+3) = 30.
	a := Stats{Dim: 2, Mu: []float64{3, 4}, Sigma: []float64{4, 0, 0, 9}}
	b := Stats{Dim: 2, Mu: []float64{0, 0}, Sigma: []float64{1, 0, 0, 1}}
	if fid, err = FrechetDistance(a, b); err != nil || math.Abs(fid-30) > 1e-12 {
		t.Fatalf("FID = %v, %v; want 30", fid, err)
	}
	if _, err := FrechetDistance(a, Stats{Dim: 3}); err == nil {
		t.Fatal("mismatched dimensions accepted")
	}
}

func readRefFile(t testing.TB, path string, dim int) Stats {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st, err := ReadReference(f, fi.Size(), dim)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readNPYFile(t testing.TB, path string, n int) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := readNPYHeader(f, path, int64(n)*8)
	if err != nil {
		t.Fatal(err)
	}
	if h.count() != int64(n) {
		t.Fatalf("%s has %d values, want %d", path, h.count(), n)
	}
	out := make([]float64, n)
	if err := readFloats(f, h, path, out); err != nil {
		t.Fatal(err)
	}
	return out
}
