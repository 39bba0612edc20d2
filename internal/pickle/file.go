package pickle

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// ScanFile scans the file at path (a command-line path) against p
// without executing it. Its errors carry exit codes: path not a regular
// file (a FIFO cannot stall it) is exit 2; one that cannot be opened or
// stat'ed exit 3; one over MaxInputSize, or that cannot be decoded, exit
// 4; a decoding error that is the profile's (*PolicyError) exit 1. The
// report's own verdict is left to the caller ((*Report).VerdictError).
func ScanFile(path string, p *Profile) (*Report, error) {
	return decodeFile(path, p, Scan)
}

// ConvertFile converts the file at path against p like Convert and
// writes the exported module into the folder dir with WriteFiles (mode
// 0644). dir must be an existing folder (exit 3, path unread, if not);
// path's errors are those of ScanFile, and a file the profile rejects is
// exit 1 with nothing written.
func ConvertFile(path string, p *Profile, dir string) (*WrittenModel, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, exitcode.Errorf(exitcode.Precondition, "output folder %q does not exist; create it first", dir)
	}
	m, err := decodeFile(path, p, Convert)
	if err != nil {
		return nil, err
	}
	return m.WriteFiles(dir, 0o644)
}

// VerdictError is nil for a clean report, else the report's error naming
// path: exit 1 when the profile rejected the file, exit 4 when it is
// malformed.
func (r *Report) VerdictError(path string) error {
	switch r.Verdict {
	case Clean:
		return nil
	case Rejected:
		return exitcode.Errorf(exitcode.Negative, "%q: %v", path, r.Err())
	default:
		return exitcode.Errorf(exitcode.Integrity, "%q: %v", path, r.Err())
	}
}

// openFile opens a command-line path for reading (safefile.OpenNamed: a
// regular file, a FIFO cannot stall it) and returns the size to read.
func openFile(path string) (*os.File, int64, error) {
	f, err := safefile.OpenNamed(path)
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, 0, exitcode.New(exitcode.Usage, err)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot open %q: %v", path, errors.Unwrap(err))
		}
		return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot open %q: %v", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot stat %q: %v", path, err)
	}
	if fi.Size() > MaxInputSize {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Integrity, "%q: %d bytes exceed the limit of %d", path, fi.Size(), int64(MaxInputSize))
	}
	return f, fi.Size(), nil
}

// decodeFile opens path with openFile and decodes it with decode (Scan
// or Convert) against p. A decoding error is exit 1 when the profile
// rejects the file (*PolicyError) and exit 4 otherwise.
func decodeFile[T any](path string, p *Profile, decode func(io.ReaderAt, int64, *Profile) (T, error)) (T, error) {
	var zero T
	f, size, err := openFile(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := decode(f, size, p)
	if err != nil {
		var pe *PolicyError
		if errors.As(err, &pe) {
			return zero, exitcode.Errorf(exitcode.Negative, "%q: %v", path, err)
		}
		return zero, exitcode.Errorf(exitcode.Integrity, "%q: %v", path, err)
	}
	return v, nil
}
