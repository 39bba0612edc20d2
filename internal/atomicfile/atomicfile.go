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
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data and the given permissions.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, perm, fillWith(data), verifyIs(data), os.Rename)
}

// CreateFile writes data to path as WriteFile does, but only where path
// does not exist yet: the temporary file is linked into place instead of
// renamed over it, and a link fails where the name exists (atomically,
// also on NFS). Where path exists it returns an error that matches
// fs.ErrExist and leaves path as it was, so that of several writers the
// first one's content stays.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	return write(path, perm, fillWith(data), verifyIs(data), func(tmp, path string) error {
		err := os.Link(tmp, path)
		if rerr := os.Remove(tmp); err == nil && rerr != nil {
			err = rerr
		}
		return err
	})
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
	return write(path, perm, fill, verify, os.Rename)
}

// write is Write with place putting the synced temporary file at path.
func write(path string, perm os.FileMode, fill func(io.Writer) error, verify func(*os.File) error, place func(tmp, path string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("failed to create temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", path, err)
	}
	if verify != nil {
		if _, err = f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("failed to rewind %s: %w", path, err)
		}
		if err = verify(f); err != nil {
			return fmt.Errorf("failed to verify %s: %w", path, err)
		}
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("failed to set mode of %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("failed to close %s: %w", path, err)
	}
	if err = place(tmp, path); err != nil {
		return fmt.Errorf("failed to move %s into place: %w", path, err)
	}
	return SyncDir(dir)
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
