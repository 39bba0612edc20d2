package runs_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// members reads a tar file's regular members, in order.
func members(t *testing.T, p string) ([]*tar.Header, [][]byte) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hs []*tar.Header
	var data [][]byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hs, data = append(hs, h), append(data, b)
	}
}

// ChangedBundles writes, for each member of the tar file at p, a copy in
// which that member has one byte changed (the middle one, XOR 1), and
// returns them by member name.
func changedBundles(t *testing.T, p string) map[string]string {
	t.Helper()
	hs, data := members(t, p)
	out := map[string]string{}
	dir := t.TempDir()
	for i, h := range hs {
		if h.Typeflag != tar.TypeReg || len(data[i]) == 0 {
			continue
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for j, hj := range hs {
			b := data[j]
			if j == i {
				b = bytes.Clone(b)
				b[len(b)/2] ^= 1
			}
			hh := *hj
			if err := tw.WriteHeader(&hh); err != nil {
				t.Fatal(err)
			}
			tw.Write(b)
		}
		tw.Close()
		q := filepath.Join(dir, strings.ReplaceAll(h.Name, "/", "_")+".tar")
		if err := os.WriteFile(q, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out[h.Name] = q
	}
	return out
}

// TestCosignChecksABundle: an exported HumanEval+ run verifies with repro
// and with the maintainer's cosign check (scripts/check-bundle.sh, offline),
// and a copy with one byte changed in any member fails both.
func TestCosignChecksABundle(t *testing.T) {
	home := t.TempDir()
	id := runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Solution: "def f(): return 1\n", Pass: true},
		{Task: "HumanEval/1", Solution: "def g(): return 2\n", FailingInput: "[1]", Reason: "assertion"},
	}, runstest.HumanEvalOptions{})
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := runs.Export(home, id, bundle); err != nil {
		t.Fatal(err)
	}
	pub := runs.LocalPublicKeyPath(home)
	tf, err := runs.LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := runs.VerifyBundle(bundle, tf); err != nil || len(v.Attestations) != 2 {
		t.Fatalf("repro: %+v %v", v, err)
	}
	out, err := runstest.CheckBundle(t, bundle, pub)
	if err != nil || !strings.Contains(out, "every check passed") || !strings.Contains(out, "provenance.sigstore.json: https://slsa.dev/provenance/v1 over 1 outputs") {
		t.Fatalf("cosign check: %v\n%s", err, out)
	}
	changed := changedBundles(t, bundle)
	if len(changed) < 6 {
		t.Fatalf("only %d members", len(changed))
	}
	for name, p := range changed {
		if _, err := runs.VerifyBundle(p, tf); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("%s changed: repro: %v, want exit 4", name, err)
		}
		if out, err := runstest.CheckBundle(t, p, pub); err == nil || !strings.Contains(out, "REFUSED") {
			t.Errorf("%s changed: the cosign check passed it: %v\n%s", name, err, out)
		}
	}
	// The check can tell a trusted key from another.
	other := filepath.Join(t.TempDir(), "other.pub")
	os.WriteFile(other, []byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"), 0o644)
	if out, err := runstest.CheckBundle(t, bundle, other); err == nil || !strings.Contains(out, "signer.pub is not the trusted key") {
		t.Fatalf("another key: %v\n%s", err, out)
	}
}
