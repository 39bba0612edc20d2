package runs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
)

// TestListKeysMarksTheLocalKeyAfterRotation checks that after a rotation
// the trust file lists both keys and only the new one is marked local,
// and that an exported trust file carries the new key's window.
func TestListKeysMarksTheLocalKeyAfterRotation(t *testing.T) {
	home := t.TempDir()
	if _, err := ListKeys(home, ""); exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("ListKeys of a home without a trust file: %v, want a precondition error", err)
	}
	first, err := ExportKey(home, false)
	if err != nil {
		t.Fatal(err)
	}
	if first.Trust != nil {
		t.Errorf("ExportKey without trust returned a trust file")
	}
	oldID, newID, err := RotateKey(home, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if oldID != first.ID {
		t.Errorf("rotated key %s, want the exported %s", oldID, first.ID)
	}
	ks, err := ListKeys(home, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].ID != oldID || ks[0].Local || ks[1].ID != newID || !ks[1].Local {
		t.Fatalf("ListKeys after rotation = %+v, want %s (not local) then %s (local)", ks, oldID, newID)
	}
	if ks[0].NotAfter == nil || ks[1].NotBefore == nil {
		t.Errorf("the rotation's windows are missing: %+v", ks)
	}
	exp, err := ExportKey(home, true)
	if err != nil {
		t.Fatal(err)
	}
	if exp.ID != newID || exp.Trust == nil || len(exp.Trust.Keys) != 1 {
		t.Fatalf("ExportKey after rotation = %+v, want one trusted key %s", exp, newID)
	}
	if k := exp.Trust.Keys[0]; k.Name != ks[1].Name || k.NotBefore == nil || !k.NotBefore.Equal(*ks[1].NotBefore) {
		t.Errorf("exported trust entry %+v, want the name and window of %+v", k, ks[1])
	}
	pub, err := keys.ParsePublic(exp.PEM)
	if err != nil || keys.ID(pub) != newID {
		t.Errorf("exported PEM is key %v (%v), want %s", pub, err, newID)
	}
}

// TestNewStandaloneKeyNeverReplaces checks that a second key at the same
// path, or one whose .pub exists, is refused as a usage error and leaves
// the files as they were.
func TestNewStandaloneKeyNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sign.key")
	id, pubPath, err := NewStandaloneKey(out)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keys.LoadPublic(pubPath)
	if err != nil || keys.ID(pub) != id || pubPath != out+".pub" {
		t.Fatalf("public key %q: %v, id %s", pubPath, err, id)
	}
	if s, err := keys.LoadPrivate(out); err != nil || keys.ID(s.PublicKey()) != id {
		t.Fatalf("private key %q: %v", out, err)
	}
	before, _ := os.ReadFile(out)
	if _, _, err := NewStandaloneKey(out); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("second key at %q: %v, want a usage error", out, err)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Errorf("the refused key replaced %q", out)
	}
	other := filepath.Join(dir, "other.key")
	if err := os.WriteFile(other+".pub", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewStandaloneKey(other); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("key beside an existing .pub: %v, want a usage error", err)
	}
	if _, err := os.Lstat(other); !os.IsNotExist(err) {
		t.Errorf("a refused key left %q (%v)", other, err)
	}
}
