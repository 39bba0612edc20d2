package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	edmBinaryOnce sync.Once
	edmBinary     string
	edmBinaryErr  error
)

// buildEDMBinary builds repro once for these tests.
func buildEDMBinary(t *testing.T) string {
	t.Helper()
	edmBinaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "repro-edm-bin-")
		if err != nil {
			edmBinaryErr = err
			return
		}
		edmBinary = filepath.Join(dir, "repro")
		out, err := exec.Command("go", "build", "-o", edmBinary, ".").CombinedOutput()
		if err != nil {
			edmBinaryErr = errors.New(string(out))
		}
	})
	if edmBinaryErr != nil {
		t.Fatal(edmBinaryErr)
	}
	return edmBinary
}

// Against the compiled-in catalog every EDM entry is unpinned: each edm
// command that would use one stops with exit 3 and the reviewer's
// instructions before it touches the store or starts Python.
func TestEDMCommandsFailClosedOnRealCatalog(t *testing.T) {
	bin := buildEDMBinary(t)
	for _, args := range [][]string{
		{"edm", "fid", "edm-cifar10-32x32-cond-vp"},
		{"edm", "fid", "edm-imagenet-64x64-cond-adm", "--safe", "--seeds", "0-9", "--edm-source", "/nonexistent"},
		{"edm", "fid", "edm-ffhq-64x64-uncond-vp", "--json"},
		{"edm", "convert", "edm-cifar10-32x32-uncond-vp"},
		{"edm", "convert", "inception-2015-12-05", "--json"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "REPRO_HOME="+home, "PATH=/nonexistent")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit %v, want 3; stderr %s", err, stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, "is unpinned") || !strings.Contains(msg, "repro catalog review "+args[2]) || strings.Count(msg, "\n") != 1 {
				t.Fatalf("stderr does not give the reviewer's one-line instructions: %q", msg)
			}
			if stdout.Len() != 0 {
				t.Fatalf("wrote to stdout: %q", stdout.String())
			}
			if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the store was touched before the pin check: %v", err)
			}
		})
	}
}

func TestEDMCommandUsageErrors(t *testing.T) {
	bin := buildEDMBinary(t)
	for _, args := range [][]string{
		{"edm", "fid", "no-such-model"},
		{"edm", "fid", "edm-cifar10-32x32-cond-vp", "--seeds", "9-1"},
		{"edm", "convert", "fid-ref-cifar10-32x32"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "REPRO_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: exit %v, want 2: %s", args, err, out)
		}
	}
}

func TestEDMModelsJSON(t *testing.T) {
	bin := buildEDMBinary(t)
	out, err := exec.Command(bin, "edm", "models", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID       string  `json:"id"`
		PaperFID float64 `json:"paper_fid"`
		Pinned   bool    `json:"pinned"`
		Sampler  struct {
			NumSteps int     `json:"num_steps"`
			NFE      int     `json:"nfe"`
			SChurn   float64 `json:"S_churn"`
			SMax     any     `json:"S_max"`
		} `json:"sampler"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string][3]float64{ // paper FID, steps, S_churn
		"edm-cifar10-32x32-cond-vp":   {1.79, 18, 0},
		"edm-cifar10-32x32-uncond-vp": {1.97, 18, 0},
		"edm-ffhq-64x64-uncond-vp":    {2.39, 40, 0},
		"edm-afhqv2-64x64-uncond-vp":  {1.96, 40, 0},
		"edm-imagenet-64x64-cond-adm": {1.36, 256, 40},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d models", len(rows))
	}
	for _, r := range rows {
		w, ok := want[r.ID]
		if !ok || r.PaperFID != w[0] || float64(r.Sampler.NumSteps) != w[1] || r.Sampler.SChurn != w[2] ||
			r.Sampler.NFE != 2*r.Sampler.NumSteps-1 || r.Pinned {
			t.Errorf("model %+v", r)
		}
	}
}
