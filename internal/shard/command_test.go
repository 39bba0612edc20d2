package shard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// fakeSlurm puts an sbatch and a squeue first on PATH: sbatch runs script
// (sh) and squeue prints nothing (the job has left the queue).
func fakeSlurm(t *testing.T, sbatch string) (marker string) {
	t.Helper()
	bin := t.TempDir()
	marker = filepath.Join(t.TempDir(), "sbatch-ran")
	os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\necho \"$PWD $*\" > "+marker+"\n"+sbatch+"\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "squeue"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	t.Setenv("PATH", bin)
	return marker
}

// signedBundle writes a bundle folder holding only a signed plan.
func signedBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := writeSigned(filepath.Join(dir, PlanFile), filepath.Join(dir, PlanSigFile), filepath.Join(dir, HomeDir), planPayload, validPlan()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSubmitBundle: sbatch runs in the bundle only once its plan
// verifies, its job id is returned, and with Wait the bundle is merged
// once squeue no longer lists the job.
func TestSubmitBundle(t *testing.T) {
	dir := signedBundle(t)
	marker := fakeSlurm(t, `echo "4242;cluster"`)
	s, err := SubmitBundle(context.Background(), SubmitRequest{Bundle: dir})
	if err != nil || s.Job != "4242" || s.Dir != dir || s.Merged != nil {
		t.Fatalf("submitted: %+v %v", s, err)
	}
	if b, _ := os.ReadFile(marker); string(b) != dir+" --parsable "+SbatchFile+"\n" {
		t.Fatalf("sbatch ran as %q", b)
	}
	ended := ""
	home := filepath.Join(t.TempDir(), "home")
	s, err = SubmitBundle(context.Background(), SubmitRequest{Bundle: dir, Wait: true, Home: home, Version: "test", Ended: func(job string) { ended = job }})
	if s == nil || ended != "4242" || err == nil {
		t.Fatalf("waited: %+v %v, ended %q (a bundle without its dataset does not merge)", s, err, ended)
	}
	if _, err := os.Stat(home); err != nil {
		t.Errorf("the merge did not open the store of home: %v", err)
	}

	os.Remove(marker)
	os.WriteFile(filepath.Join(dir, PlanFile), []byte("{}"), 0o644)
	if s, err := SubmitBundle(context.Background(), SubmitRequest{Bundle: dir}); s != nil || exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("a plan that does not verify: %+v %v", s, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("sbatch ran for a plan that does not verify")
	}
}

// TestSubmitBundleRefused: no sbatch, or an sbatch that fails or prints no
// job id, is a precondition error naming what sbatch said.
func TestSubmitBundleRefused(t *testing.T) {
	dir := signedBundle(t)
	fakeSlurm(t, `echo "no partition" >&2; exit 1`)
	if s, err := SubmitBundle(context.Background(), SubmitRequest{Bundle: dir}); s != nil || exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "no partition") {
		t.Fatalf("sbatch failed: %+v %v", s, err)
	}
	fakeSlurm(t, `exit 0`)
	if s, err := SubmitBundle(context.Background(), SubmitRequest{Bundle: dir}); s != nil || exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("no job id: %+v %v", s, err)
	}
	t.Setenv("PATH", t.TempDir())
	if s, err := SubmitBundle(context.Background(), SubmitRequest{Bundle: dir}); s != nil || exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "sbatch not found") {
		t.Fatalf("no sbatch: %+v %v", s, err)
	}
}

// TestRunShardAtChecksFirst: --parallel out of range is refused before
// the bundle is read.
func TestRunShardAtChecksFirst(t *testing.T) {
	for _, p := range []int{-1, 65} {
		if _, err := RunShardAt(context.Background(), filepath.Join(t.TempDir(), "missing"), RunOptions{Parallel: p}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--parallel") {
			t.Errorf("--parallel %d: %v", p, err)
		}
	}
}
