package wire

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
)

// The harness tree is the Python code that runs inside the evaluator
// container. It is compiled into repro and pinned by its tree digest.
//
//go:embed harness/supervisor.py harness/evalplus_driver.py
var harnessFS embed.FS

// HarnessDigest pins the harness tree (a repro-tree v1 digest, see
// digest.Tree). TestHarnessPin
// fails, printing the digest of the embedded tree, when the two disagree.
var HarnessDigest = digest.MustParse("sha256:ee2441ba2718b094ba2660b17bb991544b981c42c3ed7a35a1ce3dd2def38fc0")

// HarnessTarget is where the harness tree is mounted in the container.
const HarnessTarget = "/harness"

// HarnessTree returns the embedded tree rooted at harness/ (read-only;
// the integrity tests run edited copies of it).
func HarnessTree() fs.FS {
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
	tree := HarnessTree()
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
	m, err := digest.Tree(dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "harness tree %s: %v", dir, err)
	}
	if got := m.Digest(); got != HarnessDigest {
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
	m, err := digest.Tree(dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "%s at %s: %v", what, dir, err)
	}
	if got := m.Digest(); got != want {
		return exitcode.Errorf(exitcode.Integrity, "%s at %s has tree digest %s, not the pinned %s", what, dir, got, want)
	}
	return nil
}

// embeddedHarnessDigest is the tree digest of the harness compiled in.
func embeddedHarnessDigest() (digest.SHA256, error) {
	m, err := digest.TreeFS(harnessFS, "harness")
	if err != nil {
		return digest.SHA256{}, err
	}
	return m.Digest(), nil
}

// SBOMTrees are the trees the evaluator image's SBOM lists besides its
// Debian packages: the harness that every sandboxed HumanEval run mounts.
func SBOMTrees() []sandbox.SBOMTree {
	return []sandbox.SBOMTree{{Name: "repro-humaneval-harness", Digest: HarnessDigest}}
}
