package store

import (
	"context"
	"time"

	"github.com/reprolab/repro/internal/filelock"
)

// lock takes an exclusive OS lock on name (one lock file per digest), so
// that two repro processes never write the same blob at once. It polls until
// ctx is done; wait is called once if another process holds the lock.
func (s *Store) lock(ctx context.Context, name string, wait func()) (unlock func(), err error) {
	return filelock.Lock(ctx, s.dir.Lock(name), 0o600, 100*time.Millisecond, wait)
}
