// Package atomicfile writes files so that a reader sees either the old
// content or the complete new content, never a mix, and so that the new
// content survives a crash once Write returns.
//
// The sequence is the one every write in repro uses: a temporary file in the
// destination folder, write, fsync, re-read and verify, rename over the
// destination (or, for CreateFile, link to it where it does not exist),
// fsync the folder. The temporary file is removed on any error.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data and the given permissions.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, fillWith(data), verifyIs(data))
}

// CreateFile writes data to path as WriteFile does, but only where path
// does not exist yet (see Create): where it exists it returns an error that
// matches fs.ErrExist and leaves path as it was, so that of several writers
// the first one's content stays.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	base := filepath.Base(path)
	_, err := write(filepath.Dir(path), base, perm, fillWith(data), verifyIs(data), func() (string, error) { return base, nil }, linkNew)
	return err
}

func fillWith(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

func verifyIs(data []byte) func(*os.File) error {
	return func(f *os.File) error {
		got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("content read back differs from content written")
		}
		return nil
	}
}

// Write atomically replaces path with what fill writes. verify, when not nil,
// is handed the temporary file, rewound to offset 0, after it was synced and
// before it is renamed into place; an error from it aborts the write.
func Write(path string, perm os.FileMode, fill func(io.Writer) error, verify func(*os.File) error) error {
	base := filepath.Base(path)
	_, err := write(filepath.Dir(path), base, perm, fill, verify, func() (string, error) { return base, nil }, os.Rename)
	return err
}

// Create writes what fill writes to a new file in dir, as Write does, whose
// name name gives once fill and verify have run (so that a name may follow
// from the content, such as its digest), and puts it in place only where
// no file of that name exists: the temporary file is linked to the name
// instead of renamed over it, and a link fails where the name exists
// (atomically, also on NFS). It returns the file's path, and, where a file
// of that name exists, an error that matches fs.ErrExist with that file
// left as it was. On a file system without hard links it renames the file
// into place where it finds no file of that name, so that a writer at the
// same instant may replace it there.
func Create(dir string, perm os.FileMode, fill func(io.Writer) error, verify func(*os.File) error, name func() (string, error)) (string, error) {
	return write(dir, "new", perm, fill, verify, name, linkNew)
}

// linkNew puts tmp at path where no file is there (see Create).
func linkNew(tmp, path string) error {
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		// In place under its name; the temporary name is only a second
		// link to it, left (hidden, harmless) where it cannot be removed.
		os.Remove(tmp)
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	}
	// A file system without hard links (vfat, many FUSE ones, CIFS
	// without Unix extensions): a rename where nothing is there.
	if _, lerr := os.Lstat(path); lerr == nil {
		return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	} else if !errors.Is(lerr, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, path)
}

// write writes a temporary file in dir with fill, syncs and verifies it,
// and puts it in place under the name name gives, with place; label names
// the file in errors before it has a name. It returns the file's path.
func write(dir, label string, perm os.FileMode, fill func(io.Writer) error, verify func(*os.File) error, name func() (string, error), place func(tmp, path string) error) (path string, err error) {
	what := filepath.Join(dir, label)
	f, err := os.CreateTemp(dir, "."+label+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("failed to create temporary file for %s: %w", what, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", what, err)
	}
	if err = f.Sync(); err != nil {
		return "", fmt.Errorf("failed to sync %s: %w", what, err)
	}
	if verify != nil {
		if _, err = f.Seek(0, io.SeekStart); err != nil {
			return "", fmt.Errorf("failed to rewind %s: %w", what, err)
		}
		if err = verify(f); err != nil {
			return "", fmt.Errorf("failed to verify %s: %w", what, err)
		}
	}
	if err = f.Chmod(perm); err != nil {
		return "", fmt.Errorf("failed to set mode of %s: %w", what, err)
	}
	if err = f.Close(); err != nil {
		return "", fmt.Errorf("failed to close %s: %w", what, err)
	}
	base, err := name()
	if err != nil {
		return "", fmt.Errorf("failed to name %s: %w", what, err)
	}
	path = filepath.Join(dir, base)
	if err = place(tmp, path); err != nil {
		return path, fmt.Errorf("failed to move %s into place: %w", path, err)
	}
	return path, SyncDir(dir)
}

// SyncDir fsyncs a folder so that a rename or create inside it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("failed to sync folder %s: %w", dir, err)
	}
	return nil
}
