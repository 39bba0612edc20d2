package safefile

import (
	"errors"
	"os"
	"path/filepath"
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
