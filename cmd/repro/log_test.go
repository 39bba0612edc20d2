package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestPublishedBoardHistory: an exported board carries its log; repro log
// verify checks a run's inclusion and, after a second export, that the
// new log extends the checkpoint a reader kept; a data tile edited on the
// way fails with exit 4; no --key is exit 3, a malformed one exit 2.
func TestPublishedBoardHistory(t *testing.T) {
	home := t.TempDir()
	env := []string{"REPRO_HOME=" + home}
	samples := []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", Pass: true}}
	first := runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Label: "model-a", Model: "org/model-a"})
	site := filepath.Join(t.TempDir(), "site")
	r := repro(t, env, "report", "--leaderboard", "humanevalplus-v0.1.10", "--out", site)
	if r.code != 0 || !strings.Contains(r.stderr, "1 runs in the board log (1 new)") {
		t.Fatalf("report --leaderboard: %d %s", r.code, r.stderr)
	}
	k := repro(t, env, "log", "key")
	key := strings.TrimSpace(k.stdout)
	if k.code != 0 || !strings.HasPrefix(key, "repro-board+") || !strings.Contains(r.stderr, "--key "+key) {
		t.Fatalf("log key: %d %q %s", k.code, k.stdout, k.stderr)
	}
	kept := filepath.Join(t.TempDir(), "checkpoint")
	b, err := os.ReadFile(filepath.Join(site, "log", "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(kept, b, 0o644)

	runstest.HumanEvalRun(t, home, samples, runstest.HumanEvalOptions{Label: "model-b", Model: "org/model-b"})
	// A lab's run, imported: its entry names the bundle's digest.
	bundle, lab := labBundle(t, "model-c", "lab-c")
	submitters := filepath.Join(t.TempDir(), "submitters.json")
	tb, _ := json.Marshal(map[string]any{"version": 1, "keys": []map[string]any{lab}})
	os.WriteFile(submitters, tb, 0o644)
	imp := repro(t, env, "runs", "import", bundle, "--trust", submitters, "--json")
	var imported struct {
		Bundles []struct{ ID string } `json:"bundles"`
	}
	if imp.code != 0 || json.Unmarshal([]byte(imp.stdout), &imported) != nil || len(imported.Bundles) != 1 {
		t.Fatalf("runs import: %d %s %s", imp.code, imp.stdout, imp.stderr)
	}
	if r := repro(t, env, "report", "--leaderboard", "humanevalplus-v0.1.10", "--out", site); r.code != 0 || !strings.Contains(r.stderr, "3 runs in the board log (2 new)") {
		t.Fatalf("second export: %d %s", r.code, r.stderr)
	}
	v := repro(t, nil, "log", "verify", site, "--key", key, "--run", first, "--since", kept, "--json")
	var rep struct {
		Size int64 `json:"size"`
		Run  []struct {
			Index int64 `json:"index"`
		} `json:"run"`
		Since *struct {
			Size int64 `json:"size"`
		} `json:"since"`
	}
	if v.code != 0 || json.Unmarshal([]byte(v.stdout), &rep) != nil || rep.Size != 3 || len(rep.Run) != 1 || rep.Run[0].Index != 0 || rep.Since == nil || rep.Since.Size != 1 {
		t.Fatalf("log verify: %d %s %s", v.code, v.stdout, v.stderr)
	}

	vi := repro(t, nil, "log", "verify", site, "--key", key, "--run", imported.Bundles[0].ID, "--json")
	var inc struct {
		Run []struct {
			Entry struct {
				Label  string `json:"label"`
				Bundle string `json:"bundle_sha256"`
			} `json:"entry"`
		} `json:"run"`
	}
	bb, _ := os.ReadFile(bundle)
	if vi.code != 0 || json.Unmarshal([]byte(vi.stdout), &inc) != nil || len(inc.Run) != 1 || inc.Run[0].Entry.Label != "model-c" || inc.Run[0].Entry.Bundle != digest.Of(bb).Hex() {
		t.Fatalf("log verify --run of the imported run: %d %s %s", vi.code, vi.stdout, vi.stderr)
	}

	// The same log, served by repro serve on a loopback port.
	srv := exec.Command(reproBin, "serve", "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "REPRO_HOME="+home)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	u := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if u == "" {
		t.Fatalf("repro serve printed %q", line)
	}
	if r := repro(t, nil, "log", "verify", u+"board/log/humanevalplus-v0.1.10", "--key", key, "--run", first, "--since", kept); r.code != 0 {
		t.Fatalf("log verify of the served log: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := repro(t, nil, "log", "verify", u+"board/log/mbppplus-v0.2.0", "--key", key); r.code != int(exitcode.Precondition) {
		t.Errorf("log verify of a board with no log: %d %s", r.code, r.stderr)
	}
	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()

	if r := repro(t, nil, "log", "verify", site); r.code != int(exitcode.Precondition) || !strings.Contains(r.stderr, "--key") {
		t.Errorf("without --key: %d %s", r.code, r.stderr)
	}
	if r := repro(t, nil, "log", "verify", site, "--key", "not-a-key"); r.code != int(exitcode.Usage) {
		t.Errorf("a malformed --key: %d %s", r.code, r.stderr)
	}
	if r := repro(t, nil, "log", "verify", t.TempDir(), "--key", key); r.code != int(exitcode.Precondition) {
		t.Errorf("a folder without a log: %d %s", r.code, r.stderr)
	}
	if r := repro(t, nil, "log", "verify", site, "--key", key, "--run", "humaneval-20990101T000000Z-00000000"); r.code != int(exitcode.Integrity) {
		t.Errorf("--run of a run not on the board: %d %s", r.code, r.stderr)
	}

	tile := filepath.Join(site, "log", "tile", "8", "data", "000.p", "3")
	d, err := os.ReadFile(tile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tile, bytes.Replace(d, []byte(`label "model-a"`), []byte(`label "model-z"`), 1), 0o644)
	if r := repro(t, nil, "log", "verify", site, "--key", key, "--json"); r.code != int(exitcode.Integrity) || !strings.Contains(r.stdout+r.stderr, "not the entry the checkpoint's tree holds") {
		t.Errorf("an edited entry: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
