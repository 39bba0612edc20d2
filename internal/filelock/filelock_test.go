package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLockExcludes: a second Lock on a held file waits (calling wait
// once) until the first is released, gives up when its context is done,
// and never follows a symbolic link.
func TestLockExcludes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	unlock, err := Lock(context.Background(), path, 0o600, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	waits := 0
	if _, err := Lock(ctx, path, 0o600, time.Millisecond, func() { waits++ }); !errors.Is(err, context.DeadlineExceeded) || waits != 1 {
		t.Fatalf("a held lock: %v after %d waits, want the context's end after one", err, waits)
	}
	got := make(chan error, 1)
	go func() {
		u, err := Lock(context.Background(), path, 0o600, time.Millisecond, nil)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a second holder got the lock while the first held it: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(context.Background(), link, 0o600, time.Millisecond, nil); err == nil {
		t.Fatal("a lock taken through a symbolic link")
	}
}
