package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestParseDpkgStatus(t *testing.T) {
	status := `Package: python3
Status: install ok installed
Version: 3.11.2-1+b1

Package: removed
Status: deinstall ok config-files
Version: 1.0

Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.36-9+deb12u10
`
	got := parseDpkgStatus([]byte(status))
	if !slices.Equal(got, []string{"libc6=2.36-9+deb12u10", "python3=3.11.2-1+b1"}) {
		t.Errorf("packages %v", got)
	}
}

func FuzzParseDpkgStatus(f *testing.F) {
	f.Add([]byte("Package: a\nStatus: install ok installed\nVersion: 1\n\n"))
	f.Add([]byte("Package:\n\n\nVersion: : :"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range parseDpkgStatus(b) {
			if len(p) < 3 {
				t.Fatalf("bad entry %q", p)
			}
		}
		pkgs := parseDpkgPackages(b)
		if len(pkgs) != len(parseDpkgStatus(b)) {
			t.Fatalf("%d packages, %d name=version entries", len(pkgs), len(parseDpkgStatus(b)))
		}
		for _, p := range pkgs {
			if p.Name == "" || p.Version == "" || p.Source == "" || p.SourceVersion == "" {
				t.Fatalf("bad package %+v", p)
			}
		}
	})
}

func TestReadPin(t *testing.T) {
	home := t.TempDir()
	if _, err := ReadPin(home); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("no pin: %v", err)
	}
	os.MkdirAll(filepath.Join(home, "sandbox"), 0o755)
	for _, bad := range []string{`{`, `{"id":"sha256:abc","manifest_digest":"sha256:abc"}`, `{"id":"latest"}`} {
		os.WriteFile(pinPath(home), []byte(bad), 0o644)
		if _, err := ReadPin(home); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("pin %s: %v", bad, err)
		}
	}
}
