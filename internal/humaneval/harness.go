package humaneval

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// The harness tree is the Python code that runs inside the evaluator
// container. It is compiled into repro and pinned by its tree digest.
//
//go:embed harness/supervisor.py
var harnessFS embed.FS

// HarnessDigest pins the harness tree (see TreeDigest). TestHarnessPin
// fails, printing the digest of the embedded tree, when the two disagree.
var HarnessDigest = digest.MustParse("sha256:8fd6fa3dad4d4c8ae2dac7e37f52c48a6a2cb16f6bc6e03da0e1ba5b51e30da3")

// HarnessTarget is where the harness tree is mounted in the container.
const HarnessTarget = "/harness"

// TreeDigest returns the digest of a file tree: SHA-256 over one line per
// entry, in byte order of the slash-separated relative paths,
//
//	"d <path>\n" for a folder (the root itself is not listed)
//	"f <x|-> <size> <sha256 hex> <path>\n" for a regular file, x if any
//	execute bit is set
//
// Links, devices and other special files, and paths with a newline, make
// the tree unusable: they are an error, never skipped.
func TreeDigest(fsys fs.FS) (digest.SHA256, error) {
	type entry struct {
		path string
		line string
	}
	var entries []entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.ContainsAny(p, "\n\r") {
			return fmt.Errorf("path %q has a line break", p)
		}
		if p == "." {
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			entries = append(entries, entry{p, "d " + p + "\n"})
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := fsys.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			n, err := io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			x := "-"
			if info.Mode().Perm()&0o111 != 0 {
				x = "x"
			}
			entries = append(entries, entry{p, fmt.Sprintf("f %s %d %x %s\n", x, n, h.Sum(nil), p)})
		default:
			return fmt.Errorf("%s is a %v, not a file or folder", p, t)
		}
		return nil
	})
	if err != nil {
		return digest.SHA256{}, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	h := sha256.New()
	for _, e := range entries {
		io.WriteString(h, e.line)
	}
	var d digest.SHA256
	h.Sum(d[:0])
	return d, nil
}

// harnessTree returns the embedded tree rooted at harness/.
func harnessTree() fs.FS {
	sub, err := fs.Sub(harnessFS, "harness")
	if err != nil {
		panic(err)
	}
	return sub
}

// WriteHarness writes the harness tree into dir (created, must not exist),
// makes it read-only, and checks that what is on disk has the pinned digest.
// It returns the folder to mount.
func WriteHarness(dir string) (string, error) {
	tree := harnessTree()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the harness folder: %w", err)
	}
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.Mkdir(dst, 0o755)
		}
		b, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(dst, b, 0o444)
	})
	if err != nil {
		return "", fmt.Errorf("failed to write the harness: %w", err)
	}
	if err := CheckHarness(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// CheckHarness verifies that the tree at dir has the pinned HarnessDigest;
// a difference is an integrity error.
func CheckHarness(dir string) error {
	got, err := TreeDigest(os.DirFS(dir))
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "harness tree %s: %v", dir, err)
	}
	if got != HarnessDigest {
		return exitcode.Errorf(exitcode.Integrity, "harness tree %s has digest %s, not the pinned %s", dir, got, HarnessDigest)
	}
	return nil
}

// CheckTree verifies a tree against a pin; a difference is an integrity
// error naming what.
func CheckTree(dir, what string, want digest.SHA256) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "%s: %v", what, err)
	}
	if !fi.IsDir() {
		return exitcode.Errorf(exitcode.Precondition, "%s: %s is not a folder", what, dir)
	}
	got, err := TreeDigest(os.DirFS(dir))
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "%s at %s: %v", what, dir, err)
	}
	if got != want {
		return exitcode.Errorf(exitcode.Integrity, "%s at %s has tree digest %s, not the pinned %s", what, dir, got, want)
	}
	return nil
}

// harnessFile returns one embedded harness file (for tests and docs).
func harnessFile(name string) []byte {
	b, err := fs.ReadFile(harnessTree(), path.Clean(name))
	if err != nil {
		panic(err)
	}
	return bytes.Clone(b)
}

var _ = errors.New
