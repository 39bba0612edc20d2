// Package safefile reads files whose path or content is untrusted: it never
// follows a symbolic link in the last path element, never blocks on a FIFO
// or device, accepts regular files only, and bounds what it reads.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is returned when a file holds more than the allowed bytes.
var ErrTooLarge = errors.New("file is larger than allowed")

// ErrNotRegular is returned (wrapped) for a folder, FIFO, device or socket.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path read-only with O_NOFOLLOW|O_NONBLOCK and returns it
// only if it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	return open(path, unix.O_NOFOLLOW)
}

// OpenNamed opens a path the user named on the command line: like
// OpenRegular, but a symbolic link the user gave is followed (it is theirs
// to choose); what it leads to must still be a regular file, and a FIFO
// cannot stall the open.
func OpenNamed(path string) (*os.File, error) {
	return open(path, 0)
}

// OpenBeneath opens rel, a local path inside the folder root, like
// OpenRegular, and also follows no link in any of rel's elements, so it
// cannot leave root: each folder on the way is opened from the one before
// it with O_NOFOLLOW, as is the file. A folder of rel swapped for a link
// after it was listed is an error (ErrLink), not a read of the link's
// target. root itself is opened without following a link. Errors name
// root joined with rel.
func OpenBeneath(root, rel string) (*os.File, error) {
	name := filepath.Join(root, rel)
	if !filepath.IsLocal(rel) {
		return nil, &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("not a path inside %q", root)}
	}
	dir, err := openat(unix.AT_FDCWD, root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	elems := strings.Split(filepath.Clean(rel), string(filepath.Separator))
	for _, e := range elems[:len(elems)-1] {
		next, err := openat(dir, e, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		unix.Close(dir)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		dir = next
	}
	fd, err := openat(dir, elems[len(elems)-1], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW)
	unix.Close(dir)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return regular(os.NewFile(uintptr(fd), name), name)
}

// ErrLink is returned (wrapped) by OpenBeneath for a link on the way.
var ErrLink = errors.New("a link, which is not followed")

// openat opens name relative to the folder dir with flags and O_CLOEXEC,
// again if a signal interrupts it; a link where a folder or the file
// should be is ErrLink.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		case unix.ELOOP, unix.ENOTDIR:
			var st unix.Stat_t
			if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, ErrLink
			}
		}
		return -1, err
	}
}

func open(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// regular returns f if it is a regular file, and closes it otherwise.
func regular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is %w (%s)", path, ErrNotRegular, fi.Mode().Type())
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
	return ReadAtMost(f, path, max)
}

// ReadAtMost reads r, which was opened from path, to its end if that is at
// most max bytes; more is an error wrapping ErrTooLarge, detected without
// reading more than max+1 bytes.
func ReadAtMost(r io.Reader, path string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%q: %w (%d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}

// AtMost returns a reader of r, which was opened from path, for a caller
// that reads it in parts rather than whole: once r has yielded max bytes,
// a read that finds more fails with an error wrapping ErrTooLarge, as
// ReadAtMost would refuse the whole.
func AtMost(r io.Reader, path string, max int64) io.Reader {
	return &atMost{r: r, path: path, max: max, left: max}
}

type atMost struct {
	r         io.Reader
	path      string
	max, left int64
}

func (a *atMost) Read(p []byte) (int, error) {
	if a.left <= 0 {
		// One byte more tells an end at max from a file that goes on.
		var one [1]byte
		if n, err := a.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%q: %w (%d bytes)", a.path, ErrTooLarge, a.max)
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	return n, err
}

// CreateUnlinked makes a new file in dir (os.CreateTemp's pattern) and
// removes its name at once: only the returned descriptor reaches it, and
// it leaves nothing behind when the process ends, however it ends.
func CreateUnlinked(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
