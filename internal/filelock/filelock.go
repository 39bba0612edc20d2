// Package filelock takes exclusive OS locks on lock files, so that repro
// processes that share a folder (two fetches of one blob, shards computing
// one task's ground truth) never do one thing at once. A lock is flock(2)
// on the file: the kernel drops it however its holder ends.
package filelock

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive lock on the file at path, created with perm
// where it is missing and never opened through a symbolic link. Where
// another process holds it, Lock calls wait (if not nil) once and tries
// again every poll until it gets the lock or ctx is done (ctx's error).
// unlock releases the lock and closes the file.
func Lock(ctx context.Context, path string, perm os.FileMode, poll time.Duration, wait func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, fmt.Errorf("failed to open lock %s: %w", path, err)
	}
	waited := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", path, err)
		}
		if !waited && wait != nil {
			wait()
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
