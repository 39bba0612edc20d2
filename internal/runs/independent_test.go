package runs_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestIndependentVerifier checks a run with the independent verifier of
// runstest (DSSE PAE from the specification, Python's cryptography, the
// public key as PEM SubjectPublicKeyInfo) and that the verifier can fail:
// each change below must make it refuse the run.
func TestIndependentVerifier(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tamper     func(dir string)
	}{
		{"untouched", "verified 5 subjects", func(string) {}},
		{"an output byte", "REFUSED: file out.txt has sha256", func(dir string) {
			os.WriteFile(filepath.Join(dir, "out.txt"), []byte("hellp\n"), 0o644)
		}},
		{"a file added", "REFUSED: file added.txt is not a subject", func(dir string) {
			os.WriteFile(filepath.Join(dir, "added.txt"), nil, 0o644)
		}},
		{"the record", "REFUSED: file record.json has sha256", func(dir string) {
			p := filepath.Join(dir, "record.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"kind": "edm-fid"`), []byte(`"kind": "edm-fid "`), 1), 0o644)
		}},
		{"the signature", "REFUSED: no signature verifies", func(dir string) {
			p := filepath.Join(dir, "record.dsse.json")
			var env map[string]any
			b, _ := os.ReadFile(p)
			json.Unmarshal(b, &env)
			sig := env["signatures"].([]any)[0].(map[string]any)
			raw, _ := base64.StdEncoding.DecodeString(sig["sig"].(string))
			raw[0] ^= 1
			sig["sig"] = base64.StdEncoding.EncodeToString(raw)
			b, _ = json.Marshal(env)
			os.WriteFile(p, b, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			r, err := runs.Create(home, "edm-fid")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(r.Dir, "out.txt"), []byte("hello\n"), 0o644)
			os.MkdirAll(filepath.Join(r.Dir, "sub"), 0o755)
			os.WriteFile(filepath.Join(r.Dir, "sub", "n.json"), []byte("{}"), 0o644)
			if err := r.Finish(r.NewRecord("test"), 0); err != nil {
				t.Fatal(err)
			}
			tc.tamper(r.Dir)
			out, err := runstest.IndependentVerify(t, r.Dir, runs.LocalPublicKeyPath(home))
			if tc.name == "untouched" && err != nil || tc.name != "untouched" && err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("independent verifier: %v\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
}
