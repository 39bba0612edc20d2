package store

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive OS lock on name (one lock file per digest), so
// that two repro processes never write the same blob at once. It polls until
// ctx is done; wait is called once if another process holds the lock.
func (s *Store) lock(ctx context.Context, name string, wait func()) (unlock func(), err error) {
	p := s.dir.Lock(name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open lock %s: %w", p, err)
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
			return nil, fmt.Errorf("failed to lock %s: %w", p, err)
		}
		if !waited && wait != nil {
			wait()
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
