package wire

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestHarnessPin(t *testing.T) {
	got, err := embeddedHarnessDigest()
	if err != nil {
		t.Fatal(err)
	}
	if got != HarnessDigest {
		t.Fatalf("the embedded harness has digest %s; update HarnessDigest (now %s)", got, HarnessDigest)
	}
}

func TestWriteHarnessChecksTheTree(t *testing.T) {
	dir, err := WriteHarness(filepath.Join(t.TempDir(), "h"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHarness(dir); err != nil {
		t.Fatal(err)
	}
	// An extra file, or a changed one, is refused with exit 4.
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte("x=1\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := CheckHarness(dir); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("extra file: got %v, want an integrity error", err)
	}
	os.Remove(filepath.Join(dir, "sitecustomize.py"))
	p := filepath.Join(dir, "supervisor.py")
	os.Chmod(p, 0o644)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, '#'), 0o444)
	if err := CheckHarness(dir); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("changed file: got %v, want an integrity error", err)
	}
}
