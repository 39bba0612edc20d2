package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func finishedRun(t *testing.T) (string, *Run) {
	t.Helper()
	home := t.TempDir()
	r, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "results.json"), []byte(`{"pass":1}`), 0o644)
	os.MkdirAll(filepath.Join(r.Dir, "workspace"), 0o755)
	os.WriteFile(filepath.Join(r.Dir, "workspace", "samples.jsonl"), []byte("x\n"), 0o444)
	rec := r.NewRecord("test")
	rec.Assets = []Asset{{ID: "humanevalplus-v0.1.10", SHA256: strings.Repeat("a", 64), Size: 1}}
	rec.Summary = map[string]float64{"pass@1": 1}
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	return home, r
}

func TestRecordVerifies(t *testing.T) {
	home, r := finishedRun(t)
	r2, err := Open(home, r.ID[:12])
	if err != nil {
		t.Fatal(err)
	}
	rec, problems, err := r2.Verify()
	if err != nil || len(problems) != 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	if rec.Status != "ok" || len(rec.Files) != 4 || rec.Host.CPUs == 0 || rec.Schema != Schema {
		t.Fatalf("record: %+v", rec)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	for name, tamper := range map[string]func(dir string){
		"result changed": func(dir string) { os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"pass":0}`), 0o644) },
		"file added":     func(dir string) { os.WriteFile(filepath.Join(dir, "extra"), nil, 0o644) },
		"file removed":   func(dir string) { os.Remove(filepath.Join(dir, "results.json")) },
		"record edited": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, recordFile))
			os.WriteFile(filepath.Join(dir, recordFile), []byte(strings.Replace(string(b), `"pass@1": 1`, `"pass@1": 0.5`, 1)), 0o644)
		},
		"record and envelope rewritten without the key": func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, recordFile))
			nb := []byte(strings.Replace(string(b), `"pass@1": 1`, `"pass@1": 0.5`, 1))
			os.WriteFile(filepath.Join(dir, recordFile), nb, 0o644)
			var env map[string]any
			eb, _ := os.ReadFile(filepath.Join(dir, envelopeFile))
			json.Unmarshal(eb, &env)
			env["payload"] = b64(nb)
			eb, _ = json.Marshal(env)
			os.WriteFile(filepath.Join(dir, envelopeFile), eb, 0o644)
		},
		"envelope removed": func(dir string) { os.Remove(filepath.Join(dir, envelopeFile)) },
		"symlink planted":  func(dir string) { os.Symlink("/etc/shadow", filepath.Join(dir, "link")) },
	} {
		t.Run(name, func(t *testing.T) {
			_, r := finishedRun(t)
			tamper(r.Dir)
			_, problems, err := r.Verify()
			if exitcode.Of(err) != exitcode.Integrity || len(problems) == 0 {
				t.Fatalf("tampering not detected: %v %v", problems, err)
			}
		})
	}
}

func TestOpenUnknown(t *testing.T) {
	home, _ := finishedRun(t)
	if _, err := Open(home, "nope"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("Open unknown: %v", err)
	}
}

func TestSummaries(t *testing.T) {
	home, r := finishedRun(t)
	if err := os.WriteFile(filepath.Join(home, "runs", r.ID, "record.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	home2, r2 := finishedRun(t)
	for _, tc := range []struct {
		home, id, status string
	}{{home, r.ID, "unreadable"}, {home2, r2.ID, "ok"}} {
		s, err := Summaries(tc.home)
		if err != nil || len(s) != 1 || s[0].ID != tc.id || s[0].Status != tc.status {
			t.Errorf("Summaries = %+v, %v; want %s %s", s, err, tc.id, tc.status)
		}
	}
}

// TestGitFolderOfARunCounts: a run folder is not a source tree, so a .git
// folder in it is part of its file set: a file added there after signing
// is refused, and one present at signing is signed and exported.
func TestGitFolderOfARunCounts(t *testing.T) {
	home, r := finishedRun(t)
	os.MkdirAll(filepath.Join(r.Dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(r.Dir, ".git", "eval_results.json"), []byte(`{"pass":0}`), 0o644)
	_, problems, err := r.Verify()
	if exitcode.Of(err) != exitcode.Integrity || len(problems) != 1 || problems[0].Path != ".git/eval_results.json" || problems[0].What != "file not in the signed record" {
		t.Fatalf("a file added under .git: %v %+v", err, problems)
	}

	r2, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(r2.Dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(r2.Dir, ".git", "HEAD"), []byte("ref: x\n"), 0o644)
	if err := r2.Finish(r2.NewRecord("test"), 0); err != nil {
		t.Fatal(err)
	}
	rec, _, err := r2.Verify()
	if err != nil || len(rec.Files) != 3 || rec.Files[0].Path != ".git/HEAD" { // and the two standard attestations
		t.Fatalf("a run with a .git folder: %v %+v", err, rec)
	}
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r2.ID, bundle); err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r2.Dir, ".git", "HEAD"), []byte("ref: y\n"), 0o644)
	if _, _, err := r2.Verify(); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("a changed .git/HEAD verifies: %v", err)
	}
	v, err := VerifyBundle(bundle, tf)
	if err != nil || len(v.Record.Files) != 3 {
		t.Fatalf("its bundle: %v", err)
	}
}

// TestReadRecordOf: a run found by id prefix gives its record.json as it
// is on disk; an unknown id is a usage error, a record that does not
// decode an integrity error.
func TestReadRecordOf(t *testing.T) {
	home, r := finishedRun(t)
	raw, err := ReadRecordOf(home, r.ID[:12])
	want, _ := os.ReadFile(filepath.Join(r.Dir, recordFile))
	if err != nil || string(raw) != string(want) {
		t.Fatalf("record: %v\n%s", err, raw)
	}
	if _, err := ReadRecordOf(home, "nope"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown run: %v", err)
	}
	os.WriteFile(filepath.Join(r.Dir, recordFile), []byte(`{"id": `), 0o644)
	if _, err := ReadRecordOf(home, r.ID); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("undecodable record: %v", err)
	}
}
