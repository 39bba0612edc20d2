package catalog

import (
	"fmt"
	"os"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// Review returns the entry id pinned to the bytes of file, a local copy of
// its upstream file that a reviewer checked, stamped reviewed_at now. It
// changes nothing: the reviewer commits the entry. A source tree is pinned
// by its tree digest instead (exit 2); a missing file is exit 3.
func (c *Catalog) Review(id, file string, now time.Time) (Entry, error) {
	e, err := c.Lookup(id)
	if err != nil {
		return Entry{}, err
	}
	if e.Kind == SourceTree {
		return Entry{}, exitcode.Errorf(exitcode.Usage, "%s is a source tree: use `repro catalog digest-tree DIR`", e.ID)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return Entry{}, exitcode.Errorf(exitcode.Precondition, "cannot read %q: %v", file, err)
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, exitcode.Errorf(exitcode.Usage, "%q is not a regular file", file)
	}
	sum, n, err := digest.File(file)
	if err != nil {
		return Entry{}, fmt.Errorf("failed to hash %q: %w", file, err)
	}
	e.Size, e.SHA256, e.Pin = n, &sum, Pinned
	facts := map[string]string{}
	for k, v := range e.Facts {
		facts[k] = v
	}
	facts["reviewed_at"] = now.UTC().Format(time.RFC3339)
	e.Facts = facts
	if _, err := New([]Entry{e}); err != nil {
		return Entry{}, fmt.Errorf("the reviewed entry would be invalid: %w", err)
	}
	return e, nil
}

// DigestTree returns the canonical manifest of the source folder dir, whose
// digest is what the catalog pins a source tree by (digest.Tree: every
// regular file and symbolic link, a .git folder at the top left out). A
// dir that cannot be read is an exitcode.Precondition error; one that is
// not a folder, or holds what a tree digest refuses, is an exitcode.Usage
// error.
func DigestTree(dir string) (digest.Manifest, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot read %q: %v", dir, err)
	}
	if !fi.IsDir() {
		return nil, exitcode.Errorf(exitcode.Usage, "%q is not a folder", dir)
	}
	m, err := digest.Tree(dir)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	return m, nil
}
