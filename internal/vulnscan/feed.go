package vulnscan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// Bounds on a feed folder.
const (
	MaxFeedFiles = digest.MaxTreeFiles
	MaxFeedBytes = 2 << 30
)

// Feed is a folder of OSV records (one record per *.json file, as the
// per-ecosystem archives unpack), read once: Digest is its tree digest
// (internal/digest's repro-tree v1 manifest) over exactly the bytes that
// were parsed.
type Feed struct {
	Dir     string
	Digest  digest.SHA256
	Files   int
	Records []*Record
}

// LoadFeed reads and parses every *.json file under dir (other files are
// digested, not parsed). A missing or empty folder, a symbolic link or
// special file, a file over MaxRecordBytes, more than MaxFeedFiles files
// or MaxFeedBytes bytes, or a record that does not parse is an
// exitcode.Precondition error naming the file: no scan runs on a feed it
// cannot read whole.
func LoadFeed(dir string) (*Feed, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OSV feed %q is not a folder (%v): download and unpack the Debian OSV records into it", dir, errOr(err, "not a folder"))
	}
	f := &Feed{Dir: dir}
	var m digest.Manifest
	var total int64
	err = digest.WalkTree(dir, func(p, rel string, d fs.DirEntry) error {
		if !utf8.ValidString(rel) || len(rel) > digest.MaxPathBytes || strings.ContainsFunc(rel, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%q: a feed file name must be UTF-8 without control characters", rel)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%q is not a regular file (%s)", rel, d.Type())
		}
		if len(m) >= MaxFeedFiles {
			return fmt.Errorf("the feed has more than %d files", MaxFeedFiles)
		}
		b, err := safefile.ReadFile(p, MaxRecordBytes)
		if err != nil {
			return err
		}
		if total += int64(len(b)); total > MaxFeedBytes {
			return fmt.Errorf("the feed holds more than %d bytes", int64(MaxFeedBytes))
		}
		mode := digest.ModeFile
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o111 != 0 {
			mode = digest.ModeExec
		}
		m = append(m, digest.TreeFile{Path: rel, Mode: mode, SHA256: digest.Of(b)})
		if !strings.HasSuffix(rel, ".json") {
			return nil
		}
		r, err := ParseOSV(b)
		if err != nil {
			return fmt.Errorf("%q: %v", rel, err)
		}
		f.Records = append(f.Records, r)
		return nil
	})
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OSV feed %q cannot be used: %v", dir, err)
	}
	if len(f.Records) == 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OSV feed %q holds no *.json record: download and unpack the Debian OSV records into it", dir)
	}
	// The digest is that of digest.Tree over the same folder.
	sort.Slice(m, func(i, j int) bool { return m[i].Path < m[j].Path })
	f.Digest, f.Files = m.Digest(), len(m)
	return f, nil
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}
