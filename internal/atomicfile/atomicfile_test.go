package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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

// TestCreateFileKeepsTheFirst: CreateFile writes a file that is not
// there, and where one is (another writer's, first) it fails with
// fs.ErrExist and leaves that file as it was; no temporary file is left
// either way.
func TestCreateFileKeepsTheFirst(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := CreateFile(path, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(path, []byte("second"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second CreateFile: %v, want fs.ErrExist", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "first" {
		t.Fatalf("after a second CreateFile the file holds %q (%v), want the first", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Fatalf("the created file: %v, %v", fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the folder holds %d entries, want the file alone", len(ents))
	}
}

// TestCreateNamesByContent: Create names the file once its content is
// written (here by its length), and a second file of the same name is not
// put in place: the first stays, and no temporary file is left.
func TestCreateNamesByContent(t *testing.T) {
	dir := t.TempDir()
	create := func(content string) (string, error) {
		return Create(dir, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}, nil, func() (string, error) { return fmt.Sprintf("len-%d", len(content)), nil })
	}
	p1, err := create("abc")
	if err != nil || filepath.Base(p1) != "len-3" {
		t.Fatalf("first: %q, %v", p1, err)
	}
	p2, err := create("xyz")
	if !errors.Is(err, fs.ErrExist) || p2 != p1 {
		t.Fatalf("second of the same name: %q, %v; want %q and fs.ErrExist", p2, err, p1)
	}
	if b, _ := os.ReadFile(p1); string(b) != "abc" {
		t.Fatalf("the file holds %q, want the first's", b)
	}
	if _, err := Create(dir, 0o644, func(io.Writer) error { return nil }, nil, func() (string, error) { return "", errors.New("no name") }); err == nil {
		t.Fatal("a name that fails: no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the folder holds %d entries, want the first file alone", len(ents))
	}
}
