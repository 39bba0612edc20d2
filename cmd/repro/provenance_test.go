package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
)

// signedRun makes a finished, signed run in a new REPRO_HOME through the
// runs API and returns the home and the run id.
func signedRun(t *testing.T) (home, id string) {
	t.Helper()
	home = t.TempDir()
	r, err := runs.Create(home, "handoff-ingest")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "ingest.json"), []byte(`{"verdict":"ok"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(r.NewRecord("test"), 0); err != nil {
		t.Fatal(err)
	}
	return home, r.ID
}

func noPrivateKey(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, "PRIVATE KEY") {
		t.Fatalf("a private key was printed:\n%s%s", r.stdout, r.stderr)
	}
}

// TestBundleVerifiedInAFreshHome exports a run, verifies the bundle with a
// trust file in a REPRO_HOME that never saw the run, and checks that a
// tampered bundle is refused with exit 4.
func TestBundleVerifiedInAFreshHome(t *testing.T) {
	home, id := signedRun(t)
	at := []string{"REPRO_HOME=" + home}
	if r := repro(t, at, "runs", "verify", id); r.code != 0 || !strings.Contains(r.stdout, `signed by trusted key "local"`) {
		t.Fatalf("runs verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	pemOut := repro(t, at, "keys", "export")
	noPrivateKey(t, pemOut)
	pub, err := keys.ParsePublic([]byte(pemOut.stdout))
	if err != nil || pemOut.code != 0 {
		t.Fatalf("keys export: %d %v %s", pemOut.code, err, pemOut.stderr)
	}
	local, _ := keys.LoadPublic(runs.LocalPublicKeyPath(home))
	if !pub.Equal(local) {
		t.Fatal("keys export printed another key")
	}
	tr := repro(t, at, "keys", "export", "--trust-file")
	trustPath := filepath.Join(t.TempDir(), "lab-trust.json")
	os.WriteFile(trustPath, []byte(tr.stdout), 0o644)
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if r := repro(t, at, "runs", "export", id, "--out", bundle); r.code != 0 {
		t.Fatalf("runs export: %d %s", r.code, r.stderr)
	}

	fresh := []string{"REPRO_HOME=" + t.TempDir()}
	if r := repro(t, fresh, "runs", "verify", "--bundle", bundle, "--trust", trustPath); r.code != 0 || !strings.Contains(r.stdout, "matches its signed record") {
		t.Fatalf("bundle in a fresh home: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := repro(t, fresh, "runs", "verify", "--bundle", bundle); r.code != 3 || !strings.Contains(r.stderr, "no trust file") {
		t.Fatalf("bundle without a trust file: %d %s", r.code, r.stderr)
	}
	if r := repro(t, fresh, "runs", "verify", id, "--bundle", bundle); r.code != 2 {
		t.Fatalf("run id and bundle together: %d %s", r.code, r.stderr)
	}

	// --extract writes the verified bytes; a smuggling bundle (GNU tar
	// would unpack a forged file from it) is refused and writes nothing.
	out := filepath.Join(t.TempDir(), "reviewed")
	r := repro(t, fresh, "runs", "verify", "--bundle", bundle, "--trust", trustPath, "--extract", out)
	if r.code != 0 || !strings.Contains(r.stdout, "verified files written to "+out) {
		t.Fatalf("--extract: %d %s %s", r.code, r.stdout, r.stderr)
	}
	rec, err := os.ReadFile(filepath.Join(out, "run", "record.json"))
	if want, _ := os.ReadFile(filepath.Join(home, "runs", id, "record.json")); err != nil || !bytes.Equal(rec, want) {
		t.Fatalf("extracted record.json differs from the run's: %v", err)
	}
	raw, _ := os.ReadFile(bundle)
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	forged := slices.Clone(files)
	forged[0].Data = []byte(`{"forged": true}`)
	smuggled := filepath.Join(t.TempDir(), "smuggled.tar")
	os.WriteFile(smuggled, tarballtest.Smuggle(files, append(forged, files[0])), 0o644)
	out2 := filepath.Join(t.TempDir(), "smuggled")
	if r := repro(t, fresh, "runs", "verify", "--bundle", smuggled, "--trust", trustPath, "--extract", out2); r.code != 4 || !strings.Contains(r.stderr, "GNU.sparse.realsize") {
		t.Fatalf("a smuggling bundle: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(out2); err == nil {
		t.Fatal("a refused bundle was extracted")
	}
	if r := repro(t, at, "runs", "verify", id, "--extract", out2); r.code != 2 {
		t.Fatalf("--extract without --bundle: %d %s", r.code, r.stderr)
	}

	// One tampered copy: an extra file in the run.
	tampered := filepath.Join(t.TempDir(), "tampered.tar")
	keep := func(string, io.Reader) []byte { return nil }
	rewriteTar(t, bundle, tampered, keep, tarMember{"run/extra.txt", []byte("planted")})
	r = repro(t, fresh, "runs", "verify", "--bundle", tampered, "--trust", trustPath)
	if r.code != 4 || !strings.Contains(r.stderr, "extra.txt: file not in the signed record") {
		t.Fatalf("tampered bundle: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestKeysCommands(t *testing.T) {
	home, id := signedRun(t)
	at := []string{"REPRO_HOME=" + home}
	list := repro(t, at, "keys", "list")
	noPrivateKey(t, list)
	if list.code != 0 || !strings.Contains(list.stdout, "local") || !strings.Contains(list.stdout, "run-records") {
		t.Fatalf("keys list: %d %s %s", list.code, list.stdout, list.stderr)
	}
	rot := repro(t, at, "keys", "rotate")
	noPrivateKey(t, rot)
	if rot.code != 0 {
		t.Fatalf("keys rotate: %d %s", rot.code, rot.stderr)
	}
	if r := repro(t, at, "runs", "verify", id); r.code != 0 {
		t.Fatalf("a run signed before the rotation: %d %s", r.code, r.stderr)
	}
	if r := repro(t, at, "keys", "list", "--json"); r.code != 0 || strings.Count(r.stdout, `"key_id"`) != 2 || strings.Count(r.stdout, `"local": true`) != 1 {
		t.Fatalf("keys list after rotation: %s", r.stdout)
	}

	k := filepath.Join(t.TempDir(), "image-signing.key")
	nk := repro(t, at, "keys", "new", "--out", k)
	noPrivateKey(t, nk)
	if nk.code != 0 {
		t.Fatalf("keys new: %d %s", nk.code, nk.stderr)
	}
	s, err := keys.LoadPrivate(k)
	if err != nil {
		t.Fatal(err)
	}
	if pub, err := keys.LoadPublic(k + ".pub"); err != nil || !pub.Equal(s.PublicKey()) || !strings.Contains(nk.stdout, keys.ID(pub)) {
		t.Fatalf("keys new public key: %v %s", err, nk.stdout)
	}
	if r := repro(t, at, "keys", "new", "--out", k); r.code != 2 || !strings.Contains(r.stderr, "refusing to replace") {
		t.Fatalf("keys new over an existing key: %d %s", r.code, r.stderr)
	}

	os.Chmod(runs.LocalKeyPath(home), 0o644)
	if r := repro(t, at, "keys", "export"); r.code != 3 || !strings.Contains(r.stderr, "mode 0644") {
		t.Fatalf("run key of mode 0644: %d %s", r.code, r.stderr)
	}
}
