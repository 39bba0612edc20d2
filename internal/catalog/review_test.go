package catalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

func TestReview(t *testing.T) {
	c := Default()
	file := filepath.Join(t.TempDir(), "copy.pkl")
	if err := os.WriteFile(file, []byte("reviewed bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	const id = "edm-cifar10-32x32-cond-vp"
	before, _ := c.Lookup(id)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e, err := c.Review(id, file, now)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := digest.File(file)
	if e.Pin != Pinned || e.Size != 14 || *e.SHA256 != want || e.Facts["reviewed_at"] != "2026-01-02T03:04:05Z" {
		t.Errorf("reviewed entry: pin %s, size %d, sha %v, facts %v", e.Pin, e.Size, e.SHA256, e.Facts)
	}
	if after, _ := c.Lookup(id); after.Pin != before.Pin || after.Facts["reviewed_at"] != "" {
		t.Errorf("Review changed the compiled-in catalog: %+v", after)
	}
	var tree string
	for _, x := range c.Entries() {
		if x.Kind == SourceTree {
			tree = x.ID
			break
		}
	}
	for _, tc := range []struct {
		id, file string
		want     exitcode.Code
	}{
		{tree, file, exitcode.Usage},
		{id, filepath.Join(t.TempDir(), "missing"), exitcode.Precondition},
		{id, t.TempDir(), exitcode.Usage},
		{"no-such-id", file, exitcode.Usage},
	} {
		if _, err := c.Review(tc.id, tc.file, now); exitcode.Of(err) != tc.want {
			t.Errorf("Review(%q, %q): %v, want exit %d", tc.id, tc.file, err, tc.want)
		}
	}
}

// TestDigestTreeRefusesWhatIsNoFolder checks the exit codes of
// DigestTree and that a folder's manifest is digest.Tree's.
func TestDigestTreeRefusesWhatIsNoFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DigestTree(filepath.Join(dir, "missing")); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("missing folder: %v, want a precondition error", err)
	}
	if _, err := DigestTree(filepath.Join(dir, "a")); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("a file: %v, want a usage error", err)
	}
	m, err := DigestTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := digest.Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m.Digest() != want.Digest() {
		t.Errorf("DigestTree = %d files, %s; want 1 file, %s", len(m), m.Digest().Hex(), want.Digest().Hex())
	}
}
