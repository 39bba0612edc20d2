// Package safefile reads files whose path or content is untrusted: it never
// follows a symbolic link in the last path element, never blocks on a FIFO
// or device, accepts regular files only, and bounds what it reads.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is returned when a file holds more than the allowed bytes.
var ErrTooLarge = errors.New("file is larger than allowed")

// OpenRegular opens path read-only with O_NOFOLLOW|O_NONBLOCK and returns it
// only if it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is not a regular file", path)
	}
	return f, nil
}

// ReadFile reads a regular file of at most max bytes; a larger file is an
// error wrapping ErrTooLarge, detected without reading more than max+1 bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%q: %w (%d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}
