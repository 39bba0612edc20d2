package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/ociattest/ociattesttest"
)

// TestOCICommands: an OCI layout image built here is refused by 'oci
// verify' and by a production handoff until 'oci sign', 'oci sbom' and
// 'oci scan' (an OpenSSL-made image key) attach what the profile asks;
// then the handoff's image requirement holds, its plan bundle records the
// verification, and 'handoff verify' checks the kept evidence again.
func TestOCICommands(t *testing.T) {
	home := t.TempDir()
	env := []string{"REPRO_HOME=" + home}
	keyPath, key := imageKey(t)
	trustPath := writeTrust(t, key, `{"profile": "production"}`)
	dir := filepath.Join(t.TempDir(), "layout")
	dg := ociattesttest.Layout(t, dir, ociattesttest.Image(t, ociattesttest.Status, "cli"))
	ref := "registry.example/mlperf/dlrm@" + dg
	cfg := filepath.Join(t.TempDir(), "dlrm.json")
	b, _ := json.Marshal(map[string]any{"image": ref, "image_layout": dir})
	os.WriteFile(cfg, b, 0o644)
	imageOK := func(r result) (bool, string) {
		var doc struct {
			Requirements []struct {
				Requirement string   `json:"requirement"`
				OK          bool     `json:"ok"`
				Problems    []string `json:"problems"`
			} `json:"requirements"`
		}
		json.Unmarshal([]byte(r.stdout), &doc)
		for _, q := range doc.Requirements {
			if q.Requirement == "dlrm.image" {
				return q.OK, strings.Join(q.Problems, "; ")
			}
		}
		t.Fatalf("no dlrm.image result: %s %s", r.stdout, r.stderr)
		return false, ""
	}

	if r := repro(t, env, "oci", "verify", "--layout", dir, "--trust", trustPath, ref); r.code != 4 || !strings.Contains(r.stderr, "carries no signature") {
		t.Fatalf("verify unsigned: exit %d %s", r.code, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	r := repro(t, env, "handoff", "dlrm", "--config", cfg, "--trust", trustPath, "--out", out, "--json")
	if ok, why := imageOK(r); ok || r.code != 4 || !strings.Contains(why, "carries no signature") {
		t.Fatalf("handoff of an unsigned image: exit %d, image ok %v: %s", r.code, ok, why)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused handoff wrote %s", out)
	}

	for _, args := range [][]string{
		{"oci", "sign", "--key", keyPath, "--layout", dir, ref},
		{"oci", "sbom", "--key", keyPath, "--layout", dir, "--scheme", "cosign", ref},
		{"oci", "scan", "--key", keyPath, "--layout", dir, "--trust", trustPath, "--osv", ociattesttest.Feed(t), ref},
	} {
		r := repro(t, env, args...)
		// the scan finds one medium zlib advisory: exit 1, attached
		if want := map[string]int{"sign": 0, "sbom": 0, "scan": 1}[args[1]]; r.code != want {
			t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		t.Logf("%s", r.stdout)
	}
	r = repro(t, env, "oci", "verify", "--layout", dir, "--trust", trustPath, ref)
	if r.code != 0 || !strings.Contains(r.stdout, `signature by "lab-images"`) || !strings.Contains(r.stdout, "1 unwaived, highest medium (at most high)") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("oci verify:\n%s", r.stdout)

	r = repro(t, env, "handoff", "dlrm", "--config", cfg, "--trust", trustPath, "--out", out, "--json", "--plan")
	if ok, why := imageOK(r); !ok || r.code != 0 {
		t.Fatalf("handoff of an admitted image: exit %d, image ok %v: %s\n%s", r.code, ok, why, r.stderr)
	}
	r = repro(t, env, "handoff", "verify", out, "--trust", trustPath)
	if r.code != 0 || !strings.Contains(r.stdout, "its evidence verifies again") {
		t.Fatalf("handoff verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	_, other := imageKey(t)
	if r := repro(t, env, "handoff", "verify", out, "--trust", writeTrust(t, other, `{"profile": "production"}`)); r.code != 4 {
		t.Errorf("handoff verify under another key: exit %d %s", r.code, r.stderr)
	}
}
