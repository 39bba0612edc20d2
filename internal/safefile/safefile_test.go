package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("12345"), 0o644)
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	os.Symlink(p, filepath.Join(dir, "link"))
	if _, err := ReadFile(filepath.Join(dir, "link"), 100); err == nil {
		t.Fatal("followed a symbolic link")
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(filepath.Join(dir, "fifo"), 100); err == nil {
		t.Fatal("read a FIFO")
	}
	if _, err := ReadFile(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("read a folder: %v", err)
	}
}

// TestAtMost: read in small parts, a stream of max bytes reads whole and
// one byte more fails with ErrTooLarge, as ReadAtMost decides of each.
func TestAtMost(t *testing.T) {
	for _, c := range []struct {
		data string
		max  int64
		ok   bool
	}{{"12345", 5, true}, {"12345", 6, true}, {"12345", 4, false}, {"", 0, true}, {"1", 0, false}} {
		b, err := io.ReadAll(io.LimitReader(AtMost(byteAtATime(c.data), "f", c.max), 1<<20))
		_, whole := ReadAtMost(strings.NewReader(c.data), "f", c.max)
		if (err == nil) != c.ok || (whole == nil) != c.ok || c.ok && string(b) != c.data || !c.ok && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%q at most %d: read %q, %v (ReadAtMost: %v)", c.data, c.max, b, err, whole)
		}
	}
}

// byteAtATime is a reader of s that yields a byte at a time.
func byteAtATime(s string) io.Reader { return &oneByte{s} }

type oneByte struct{ s string }

func (o *oneByte) Read(p []byte) (int, error) {
	if o.s == "" {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], o.s = o.s[0], o.s[1:]
	return 1, nil
}

func TestOpenNamed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("12345"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(p, link)
	f, err := OpenNamed(link)
	if err != nil {
		t.Fatalf("OpenNamed did not follow the link the user named: %v", err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, filepath.Join(dir, "fifolink"))
	for _, bad := range []string{fifo, filepath.Join(dir, "fifolink"), dir} {
		if _, err := OpenNamed(bad); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenNamed(%q) = %v; want ErrNotRegular", bad, err)
		}
	}
}

// TestOpenBeneath swaps a listed folder for a link, as a concurrent writer
// of a samples folder could between its listing and its read, and checks
// that no element of the path is followed and nothing outside root opens.
func TestOpenBeneath(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(root, "task"), filepath.Join(elsewhere, "task")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "task", "0.py"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(elsewhere, "task", "0.py"), []byte("theirs"), 0o644)
	os.WriteFile(filepath.Join(elsewhere, "outside.py"), []byte("theirs"), 0o644)
	f, err := OpenBeneath(root, "task/0.py")
	if err != nil {
		t.Fatalf("OpenBeneath of a plain file: %v", err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "mine" {
		t.Fatalf("read %q; want %q", b, "mine")
	}

	// The folder, swapped for a link to another folder of the same shape.
	if err := os.Rename(filepath.Join(root, "task"), filepath.Join(root, "aside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "task"), filepath.Join(root, "task")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(root, "aside", "0.py"), filepath.Join(root, "aside", "link.py"))
	os.Symlink(elsewhere, filepath.Join(root, "up"))
	for _, link := range []string{"task/0.py", "aside/link.py", "up/outside.py"} {
		if _, err := OpenBeneath(root, link); !errors.Is(err, ErrLink) {
			t.Errorf("OpenBeneath(root, %q) = %v; want ErrLink", link, err)
		}
	}
	rel, _ := filepath.Rel(root, filepath.Join(elsewhere, "outside.py"))
	for _, bad := range []string{"task/0.py", "aside/link.py", "up/outside.py", rel, filepath.Join(elsewhere, "outside.py")} {
		if f, err := OpenBeneath(root, bad); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Errorf("OpenBeneath(root, %q) opened a file holding %q; want an error", bad, b)
		} else if !strings.Contains(err.Error(), filepath.Join(root, bad)) && !filepath.IsAbs(bad) {
			t.Errorf("OpenBeneath(root, %q) = %v; want the error to name the path", bad, err)
		}
	}

	// What it opens must still be a regular file, and root no link.
	if err := syscall.Mkfifo(filepath.Join(root, "aside", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBeneath(root, "aside/fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenBeneath of a FIFO = %v; want ErrNotRegular", err)
	}
	if _, err := OpenBeneath(root, "aside"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenBeneath of a folder = %v; want ErrNotRegular", err)
	}
	rootLink := filepath.Join(elsewhere, "rootlink")
	os.Symlink(root, rootLink)
	if _, err := OpenBeneath(rootLink, "aside/0.py"); err == nil {
		t.Error("OpenBeneath followed a link given as its root")
	}
}

// TestCreateUnlinked: the file has no name in its folder from the start,
// and its descriptor still writes and reads it.
func TestCreateUnlinked(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateUnlinked(dir, ".x-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("folder holds %v (%v), want nothing", ents, err)
	}
	if _, err := f.WriteString("kept"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "kept" {
		t.Errorf("read back %q, %v", b, err)
	}
	if _, err := CreateUnlinked(filepath.Join(dir, "missing"), ".x-*"); err == nil {
		t.Error("a file made in a folder that does not exist")
	}
}
