package store

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// Sealed is a verified copy of an asset in a sealed memory file: the bytes
// were hashed while they were copied in, and the seals (F_SEAL_WRITE,
// F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL) make it impossible for anyone,
// this process included, to change them afterwards. The file can be handed
// to a child process (exec.Cmd.ExtraFiles).
type Sealed struct {
	File   *os.File
	ID     string
	SHA256 digest.SHA256
	Size   int64
}

// Close releases the memory file.
func (s *Sealed) Close() error { return s.File.Close() }

// ReaderAt returns a reader over the sealed bytes that does not move the
// file offset.
func (s *Sealed) ReaderAt() io.ReaderAt { return s.File }

// requiredSeals are the seals OpenSealed applies and callers may check.
const requiredSeals = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// OpenSealed copies the stored blob of id into a sealed memory file while
// hashing it, checks size and digest against the pin, seals it and returns
// it rewound to offset 0. Errors and ctx are those of OpenVerified.
func (s *Store) OpenSealed(ctx context.Context, id string) (*Sealed, error) {
	e, err := s.pinnedFile(id)
	if err != nil {
		return nil, err
	}
	src, err := s.openBlob(e)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("repro:"+id, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "asset %s: cannot create a sealed memory file: %v", id, err)
	}
	mf := os.NewFile(uintptr(fd), "memfd:repro:"+id)
	ok := false
	defer func() {
		if !ok {
			mf.Close()
		}
	}()
	// Copy at most one byte past the pin so an overlong blob is caught
	// without filling memory.
	got, n, err := digest.ReaderFrom(io.TeeReader(io.LimitReader(contextReader{ctx, src}, e.Size+1), mf))
	if err != nil {
		return nil, fmt.Errorf("asset %s: failed to copy into memory: %w", id, err)
	}
	if err := checkPin(e, got, n); err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(mf.Fd(), unix.F_ADD_SEALS, requiredSeals); err != nil {
		return nil, fmt.Errorf("asset %s: failed to seal memory file: %w", id, err)
	}
	if _, err := mf.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ok = true
	return &Sealed{File: mf, ID: id, SHA256: got, Size: n}, nil
}

// CheckSealed reports whether f carries every seal OpenSealed applies; a
// receiver of a descriptor uses it before trusting the bytes.
func CheckSealed(f *os.File) error {
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("not a sealed memory file: %w", err)
	}
	if seals&requiredSeals != requiredSeals {
		return fmt.Errorf("memory file is not fully sealed (seals %#x)", seals)
	}
	return nil
}
