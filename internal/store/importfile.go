package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// Import stores a file the user already has (an air-gapped copy, a file
// from a lab share) under id. It is verified exactly like a download; the
// source must be a regular file.
func (s *Store) Import(ctx context.Context, id, path string, progress func(Event)) error {
	if progress == nil {
		progress = func(Event) {}
	}
	e, err := s.pinnedFile(id)
	if err != nil {
		return err
	}
	src, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "asset %s: cannot open %s: %v", id, path, unwrapPath(err))
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return exitcode.Errorf(exitcode.Usage, "asset %s: %s is not a regular file", id, path)
	}
	err = s.commitLocked(ctx, e, progress, func(partial string) (string, error) {
		f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		progress(Event{ID: id, Phase: PhaseStart, Source: path, Total: e.Size})
		v := digest.NewVerifier(src, "asset "+id+" from "+path, e.Size, *e.SHA256)
		if _, err := io.CopyBuffer(f, v, make([]byte, 1<<20)); err != nil {
			os.Remove(partial)
			var me *digest.MismatchError
			if errors.As(err, &me) {
				return "", exitcode.New(exitcode.Integrity, err)
			}
			return "", fmt.Errorf("asset %s: failed to import %s: %w", id, path, err)
		}
		return "file://" + path, nil
	})
	return err
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
