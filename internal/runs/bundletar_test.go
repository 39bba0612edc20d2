package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
	"github.com/reprolab/repro/internal/trust"
)

// TestSmuggledBundleIsRefused is the attack of a PAX record
// GNU.sparse.realsize without a sparse map: Go's archive/tar ignores it
// and stops at the first end marker, GNU tar takes it as the first
// entry's length and then extracts entries appended after the marker. The
// control shows GNU tar unpacking a forged results.json from the bundle;
// repro must refuse the bundle, naming the record.
func TestSmuggledBundleIsRefused(t *testing.T) {
	bundle, trustPath := exportedBundle(t)
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"pass":0}`)
	var evil []tarballtest.File
	for _, f := range files {
		if f.Name == "run/results.json" {
			f.Data = forged
		}
		evil = append(evil, f)
	}
	attack := filepath.Join(t.TempDir(), "attack.tar")
	if err := os.WriteFile(attack, tarballtest.Smuggle(files, evil), 0o644); err != nil {
		t.Fatal(err)
	}
	gnu := tarballtest.Tools(t)[0]
	got, err := gnu.Unpack(t, attack)
	if err != nil || string(got["run/results.json"]) != string(forged) {
		t.Fatalf("control: GNU tar does not unpack the forged results.json (%v, %q): the attack is not what it claims", err, got["run/results.json"])
	}
	tf, err := trust.Load(trustPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyBundle(attack, tf)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "GNU.sparse.realsize") {
		t.Fatalf("a bundle that GNU tar unpacks to a forged results.json: %v, want exit 4 naming GNU.sparse.realsize", err)
	}
}
