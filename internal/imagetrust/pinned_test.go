package imagetrust_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/testenv"
)

// TestSignPinned: the key is loaded first (an unusable one is exit 3 and
// nothing is read or signed), then the pinned SBOM is checked and the
// image signed; the signature verifies under a trust file listing the key.
func TestSignPinned(t *testing.T) {
	home, pin := fakeHome(t)
	testenv.NoDockerEngine(t)
	wantCode(t, "a missing key", func() error {
		_, err := imagetrust.SignPinned(context.Background(), home, filepath.Join(home, "missing.key"), nil, time.Now())
		return err
	}(), exitcode.Precondition, "the image key")
	if _, err := os.Stat(imagetrust.SignaturePath(home)); !os.IsNotExist(err) {
		t.Fatalf("signed without a key: %v", err)
	}
	keyPath, k := opensslKey(t)
	s, err := imagetrust.SignPinned(context.Background(), home, keyPath, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := k.KeyID()
	if s.Path != imagetrust.SignaturePath(home) || s.KeyID != id || s.ImageID != pin.ID || s.SBOMDigest != pin.SBOMDigest {
		t.Fatalf("signed: %+v", s)
	}
	if _, err := imagetrust.Check(home, imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), k, `{"require_signature": true}`)}, pin, pin.SBOMDigest); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	// An SBOM that is not the pinned one is refused.
	os.WriteFile(layout.Home(home).ImageSBOM(), []byte(`{"bomFormat": "other"}`), 0o644)
	if _, err := imagetrust.SignPinned(context.Background(), home, keyPath, nil, time.Now()); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("a changed SBOM: %v", err)
	}
}

// TestEngineFirst: export and import need the engine before anything
// else; without it they are exit 3.
func TestEngineFirst(t *testing.T) {
	home, _ := fakeHome(t)
	testenv.NoDockerEngine(t)
	if _, err := imagetrust.ExportPinned(context.Background(), home, filepath.Join(home, "e.tar")); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("export: %v", err)
	}
	if _, err := imagetrust.ImportBundle(context.Background(), home, filepath.Join(home, "missing.tar"), "", time.Now()); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("import: %v", err)
	}
}
