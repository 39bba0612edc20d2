package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new content"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "new content" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", b, fi.Mode())
	}
	assertOnly(t, dir, "f")
}

// A failing fill or verify leaves the old content and no temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("boom")
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("fill error: %v", err)
	}
	err = Write(p, 0o644, func(w io.Writer) error {
		_, err := w.Write([]byte("bad"))
		return err
	}, func(*os.File) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("verify error: %v", err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "old" {
		t.Fatalf("old content lost: %q", b)
	}
	assertOnly(t, dir, "f")
}

func TestWriteMissingFolder(t *testing.T) {
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "f"), nil, 0o644); err == nil {
		t.Fatal("write into a missing folder succeeded")
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("folder holds %v, want %v", got, names)
	}
}
