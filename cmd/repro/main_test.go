package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/catalog"
)

// reproBin is the repro binary built once for the end-to-end tests.
var reproBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "repro-bin-")
	if err != nil {
		panic(err)
	}
	reproBin = filepath.Join(dir, "repro")
	out, err := exec.Command("go", "build", "-o", reproBin, ".").CombinedOutput()
	if err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	// No test writes runs into the real REPRO_HOME.
	if os.Getenv("REPRO_HOME") == "" {
		os.Setenv("REPRO_HOME", filepath.Join(dir, "home"))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// repro runs the binary with a fresh REPRO_HOME unless env sets one.
func repro(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(reproBin, args...)
	cmd.Env = append(append(os.Environ(), "REPRO_HOME="+t.TempDir()), env...)
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

// sharedData finds ../shared/data beside the repository (REPRO_SHARED_DATA
// overrides it).
func sharedData(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("REPRO_SHARED_DATA"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	d := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data")
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("shared data not found at %s (set REPRO_SHARED_DATA): %v", d, err)
	}
	return d
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"catalog", "list", "--bogus"}, 2, "unknown flag"},
		{[]string{"catalog", "show"}, 2, "accepts 1 arg"},
		{[]string{"handoff", "minigo"}, 2, `required flag(s) "out" not set`},
		{[]string{"sandbox", "run", "--deadline", "soon", "true"}, 2, "invalid argument"},
		{[]string{"catalog", "show", "nope"}, 2, `no catalog entry "nope"`},
		{[]string{"fetch", "edm-cifar10-32x32-cond-vp"}, 3, "unpinned"},
		{[]string{"fetch", "inception-2015-12-05"}, 3, "repro catalog review inception-2015-12-05"},
		{[]string{"verify", "humaneval"}, 3, "not in the store"},
		{[]string{"fetch", "humaneval", "--from", "/nonexistent/file"}, 3, "cannot open"},
	} {
		r := repro(t, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("repro %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
		if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("repro %v: error is not one line: %q", tc.args, r.stderr)
		}
	}
}

func TestImportAndVerifySharedData(t *testing.T) {
	home := t.TempDir()
	env := []string{"REPRO_HOME=" + home}
	data := sharedData(t)
	r := repro(t, env, "fetch", "humanevalplus-v0.1.10", "--from", filepath.Join(data, "humanevalplus-v0.1.10", "HumanEvalPlus.jsonl.gz"))
	if r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	// The wrong file under an id is refused with the integrity code.
	r = repro(t, env, "fetch", "humaneval", "--from", filepath.Join(data, "humanevalplus-v0.1.10", "HumanEvalPlus-Mini.jsonl.gz"))
	if r.code != 4 || !strings.Contains(r.stderr, "humaneval") || !strings.Contains(r.stderr, "mismatch") {
		t.Fatalf("wrong file: %+v", r)
	}
	r = repro(t, env, "verify", "--json")
	var v struct {
		Results []struct {
			ID string `json:"id"`
			OK bool   `json:"ok"`
		} `json:"results"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || len(v.Results) != 1 || !v.Results[0].OK {
		t.Fatalf("verify: %+v", r)
	}
	// Corrupt the blob behind repro's back: verify quarantines it, exit 4.
	e, _ := catalog.Default().Lookup("humanevalplus-v0.1.10")
	blob := filepath.Join(home, "blobs", "sha256", e.SHA256.Hex())
	os.Chmod(blob, 0o644)
	f, _ := os.OpenFile(blob, os.O_WRONLY, 0)
	f.WriteAt([]byte{0}, 100)
	f.Close()
	r = repro(t, env, "verify")
	if r.code != 4 || !strings.Contains(r.stdout, "CORRUPT") || !strings.Contains(r.stderr, "humanevalplus-v0.1.10") {
		t.Fatalf("verify corrupt: %+v", r)
	}
	q, _ := os.ReadDir(filepath.Join(home, "quarantine"))
	if len(q) != 1 {
		t.Fatalf("quarantine holds %d files", len(q))
	}
}

// TestTwoProcessesOneDownload runs two repro processes that fetch the same
// id through a slow loopback mirror: one downloads, the other waits on the
// lock, and both end with the one verified blob.
func TestTwoProcessesOneDownload(t *testing.T) {
	data := sharedData(t)
	b, err := os.ReadFile(filepath.Join(data, "humanevalplus-v0.1.10", "HumanEvalPlus.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := catalog.Default().Lookup("humanevalplus-v0.1.10")
	var downloads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sha256/"+e.SHA256.Hex() {
			http.NotFound(w, r)
			return
		}
		downloads.Add(1)
		w.Header().Set("Content-Length", "925932")
		for i := 0; i < len(b); i += 100 << 10 { // about one second in all
			end := min(i+100<<10, len(b))
			w.Write(b[i:end])
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer srv.Close()
	home := t.TempDir()
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = repro(t, []string{"REPRO_HOME=" + home}, "fetch", "--mirror", srv.URL, "humanevalplus-v0.1.10")
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.code != 0 {
			t.Fatalf("fetch: %+v", r)
		}
	}
	if downloads.Load() != 1 {
		t.Fatalf("%d downloads, want 1", downloads.Load())
	}
	blobs, _ := os.ReadDir(filepath.Join(home, "blobs", "sha256"))
	if len(blobs) != 1 || blobs[0].Name() != e.SHA256.Hex() {
		t.Fatalf("blobs: %v", blobs)
	}
}

// TestMirrorCannotInject serves other bytes under the pinned digest's name:
// they are refused, and nothing is stored.
func TestMirrorCannotInject(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("evil"), 44877/4+1)[:44877])
	}))
	defer srv.Close()
	home := t.TempDir()
	r := repro(t, []string{"REPRO_HOME=" + home, "REPRO_MIRRORS=" + srv.URL + "/a," + srv.URL + "/b"}, "fetch", "humaneval")
	if r.code != 4 || !strings.Contains(r.stderr, "sha256 mismatch") {
		t.Fatalf("evil mirror: %+v", r)
	}
	blobs, _ := os.ReadDir(filepath.Join(home, "blobs", "sha256"))
	if len(blobs) != 0 {
		t.Fatal("evil bytes stored")
	}
}

// TestNoFlagOrEnvironmentChangesAPin sets every plausible override and checks
// that the catalog repro reports is byte for byte the compiled-in one.
func TestNoFlagOrEnvironmentChangesAPin(t *testing.T) {
	want, err := catalog.Default().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(t.TempDir(), "catalog.json")
	os.WriteFile(evil, []byte(`{"entries":[{"id":"humaneval","kind":"dataset","description":"x","license":"x","pin":"pinned","size":1,"urls":["https://evil/x"],"sha256":"`+strings.Repeat("0", 64)+`"}]}`), 0o644)
	env := []string{"REPRO_CATALOG=" + evil, "REPRO_CATALOG_FILE=" + evil, "REPRO_PIN_HUMANEVAL=" + strings.Repeat("0", 64),
		"REPRO_SHA256=" + strings.Repeat("0", 64), "REPRO_DIGEST=" + strings.Repeat("0", 64), "REPRO_ALLOW_UNPINNED=1", "REPRO_INSECURE=1"}
	r := repro(t, env, "catalog", "list", "--json")
	var got struct {
		Entries []catalog.Entry `json:"entries"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil {
		t.Fatalf("catalog list: %+v", r)
	}
	c, err := catalog.New(got.Entries)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Marshal()
	if !bytes.Equal(b, want) {
		t.Fatal("the catalog changed under environment overrides")
	}
	for _, flag := range []string{"--catalog", "--sha256", "--digest", "--pin", "--allow-unpinned", "--insecure"} {
		r := repro(t, env, "fetch", "humaneval", flag, evil)
		if r.code != 2 || !strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("fetch %s: %+v", flag, r)
		}
	}
	r = repro(t, env, "fetch", "edm-cifar10-32x32-cond-vp")
	if r.code != 3 {
		t.Fatalf("unpinned entry under overrides: %+v", r)
	}
}
