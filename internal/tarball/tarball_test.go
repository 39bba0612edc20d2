package tarball_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/tarball"
	tt "github.com/reprolab/repro/internal/tarball/tarballtest"
)

var lim = tarball.Limits{Entries: 64, EntrySize: 1 << 20, Bytes: 8 << 20, NameBytes: 1024}

var mtime = time.Unix(tt.Mtime, 0)

// write is the archive Writer makes of files.
func write(t testing.TB, files ...tt.File) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tarball.NewWriter(&b)
	for _, f := range files {
		if err := w.AddBytes(f.Name, mtime, f.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// read is every file of archive as Reader reads it, or its error.
func read(archive []byte, lim tarball.Limits) ([]tt.File, error) {
	es, err := readEntries(archive, lim)
	var out []tt.File
	for _, e := range es {
		out = append(out, e.File)
	}
	return out, err
}

// entry is a file as Reader reads it, with its modification time.
type entry struct {
	tt.File
	mtime time.Time
}

func readEntries(archive []byte, lim tarball.Limits) ([]entry, error) {
	r := tarball.NewReader(bytes.NewReader(archive), lim)
	var out []entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return out, err
		}
		if int64(len(b)) != e.Size {
			return out, fmt.Errorf("entry %q: read %d of %d bytes", e.Name, len(b), e.Size)
		}
		out = append(out, entry{tt.File{Name: e.Name, Data: b}, e.ModTime})
	}
}

// shapes are files of every shape the writer encodes differently: names
// in the block, names of exactly 100 bytes, names in a PAX record (long,
// non-ASCII), empty files, data around block boundaries.
func shapes() []tt.File {
	return []tt.File{
		{Name: "record.json", Data: []byte(`{"a":1}`)},
		{Name: "empty", Data: nil},
		{Name: "run/" + strings.Repeat("n", 96), Data: []byte("exactly 100 bytes of name")},
		{Name: "run/" + strings.Repeat("l", 200) + "/long.txt", Data: []byte("a long name")},
		{Name: "run/résumé ☃.txt", Data: []byte("non-ASCII")},
		{Name: "blocks/511", Data: bytes.Repeat([]byte{1}, 511)},
		{Name: "blocks/512", Data: bytes.Repeat([]byte{2}, 512)},
		{Name: "blocks/513", Data: bytes.Repeat([]byte{3}, 513)},
		{Name: "blocks/zeros", Data: make([]byte, 2048)},
	}
}

// TestRoundTrip: what Writer writes, Reader reads back unchanged.
func TestRoundTrip(t *testing.T) {
	files := shapes()
	got, err := read(write(t, files...), lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("read %d files, wrote %d", len(got), len(files))
	}
	for i := range files {
		if got[i].Name != files[i].Name || !bytes.Equal(got[i].Data, files[i].Data) {
			t.Errorf("file %d: read %q (%d bytes), wrote %q (%d bytes)", i, got[i].Name, len(got[i].Data), files[i].Name, len(files[i].Data))
		}
	}
	// A record's padding of zeros after the end marker, as GNU tar writes.
	arch := write(t, files...)
	padded := append(arch, make([]byte, tarball.MaxTrailingZeros)...)
	if _, err := read(padded, lim); err != nil {
		t.Fatalf("an archive padded with %d zero bytes: %v", tarball.MaxTrailingZeros, err)
	}
}

// TestWriterRefuses: the writer writes only what the reader accepts.
func TestWriterRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		mtime time.Time
		data  string
		size  int64
		want  string
	}{
		{"../x", mtime, "x", 1, "not a clean relative path"},
		{"a\x1b[2Jb", mtime, "x", 1, "control character"},
		{"x", mtime.Add(time.Millisecond), "x", 1, "whole seconds"},
		{"x", time.Unix(-1, 0), "x", 1, "whole seconds"},
		{"x", mtime, "xy", 1, "changed while it was written"},
		{"x", mtime, "x", 2, "changed while it was written"},
	} {
		w := tarball.NewWriter(io.Discard)
		err := w.Add(c.name, c.size, c.mtime, strings.NewReader(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%q, %d, %s, %q) = %v, want an error saying %q", c.name, c.size, c.mtime, c.data, err, c.want)
		}
	}
	w := tarball.NewWriter(io.Discard)
	w.AddBytes("a/b", mtime, nil)
	for _, n := range []string{"a/b", "a", "a/b/c"} {
		if err := w.AddBytes(n, mtime, nil); err == nil {
			t.Errorf("Add(%q) after a/b: no error", n)
		}
	}
}

// hostile is an archive the reader must refuse, with the reason it must
// name.
type hostile struct {
	name, reason string
	archive      []byte
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// gnu turns header block b into a GNU one (magic "ustar  \x00").
func gnu(b []byte) []byte {
	copy(b[257:265], "ustar  \x00")
	return tt.Checksum(b)
}

// hostiles are archives of every way a tar file can differ from repro's
// form; several are read differently by GNU tar, bsdtar, Python's tarfile
// or Go's archive/tar (TestHostileArchivesAreReadDifferently).
func hostiles(t testing.TB) []hostile {
	good := write(t, tt.File{Name: "a.txt", Data: []byte("good")})
	body := good[:len(good)-1024]
	files := []tt.File{{Name: "record.json", Data: []byte("{}")}, {Name: "results.json", Data: []byte(`{"pass":1}`)}}
	forged := []tt.File{files[0], {Name: "results.json", Data: []byte(`{"pass":0}`)}}
	field := func(off int, val string) []byte {
		out := bytes.Clone(good)
		copy(out[off:], val)
		tt.Checksum(out[:512])
		return out
	}
	hugeSparse := cat(tt.PAX('x', "GNU.sparse.major=1", "GNU.sparse.minor=0", "GNU.sparse.name=big", "GNU.sparse.realsize=68719476736"),
		tt.Block("GNUSparseFile.0/big", '0', 512), tt.Pad([]byte("1\n68719476735\n1\n")), tt.End())
	return []hostile{
		{"GNU.sparse.realsize without a map", "PAX record GNU.sparse.realsize", tt.Smuggle(files, forged)},
		{"PAX sparse 1.0 of 64 GiB of hole", "PAX record GNU.sparse.", hugeSparse},
		{"PAX sparse 0.1 map", "PAX record GNU.sparse.", cat(tt.PAX('x', "GNU.sparse.size=1048576", "GNU.sparse.map=0,1", "GNU.sparse.numblocks=1"), tt.Entry("s", []byte("x")), tt.End())},
		{"old GNU sparse type", "GNU sparse file", cat(gnu(tt.Block("s", 'S', 0)), tt.End())},
		{"entries after the end marker", "data after the end-of-archive marker", cat(good, tt.Entry("b.txt", []byte("forged")), tt.End())},
		{"an entry after one zero block", "zero block followed by more data", cat(body, make([]byte, 512), tt.Entry("b.txt", []byte("forged")), tt.End())},
		{"junk after the end marker", "data after the end-of-archive marker", cat(good, []byte{1})},
		{"too much zero padding", "zero bytes after the end-of-archive marker", cat(good, make([]byte, tarball.MaxTrailingZeros+1))},
		{"no end marker", "no end-of-archive marker", body},
		{"an end marker of one block", "one zero block", cat(body, make([]byte, 512))},
		{"a truncated entry", "truncated", good[:600]},
		{"a PAX header and then the end", "a header with no entry after it", cat(tt.PAX('x', "path=b.txt"))},
		{"non-zero padding", "padding after its data", field(512+4, "\x01")},
		{"a PAX global header", "PAX global header", cat(tt.PAX('g', "comment=x"), body, tt.End())},
		{"a PAX uid record", "PAX record \"uid\"", cat(tt.PAX('x', "uid=1000"), body, tt.End())},
		{"a PAX mtime record", "PAX record \"mtime\"", cat(tt.PAX('x', "mtime=1700000000.5"), body, tt.End())},
		{"a PAX linkpath record", "PAX record \"linkpath\"", cat(tt.PAX('x', "linkpath=/etc/shadow"), body, tt.End())},
		{"a PAX path record for a short name", "header of", cat(tt.PAX('x', "path=a.txt"), body, tt.End())},
		{"a GNU long name", "GNU tar header", cat(gnu(tt.Block("././@LongLink", 'L', 6)), tt.Pad([]byte("b.txt\x00")), gnu(tt.Block("b", '0', 0)), tt.End())},
		{"a GNU long name before a POSIX header", "header of 1536 bytes", cat(gnu(tt.Block("././@LongLink", 'L', 6)), tt.Pad([]byte("b.txt\x00")), body, tt.End())},
		{"a GNU header", "GNU tar header", field(257, "ustar  \x00")},
		{"a v7 header", "header field magic", field(257, "\x00\x00\x00\x00\x00\x00\x00\x00")},
		{"an old-style regular type", "header field typeflag", field(156, "\x00")},
		{"mode 0755", "header field mode", field(100, "0000755\x00")},
		{"a user name", "header field uname", field(265, "root")},
		{"a uid", "header field uid", field(108, "0001750\x00")},
		{"a name after a NUL", "header field name", field(5, "\x00junk")},
		{"a ustar prefix", "is not as repro writes it", field(345, "run")},
		{"base-256 size", "header field size", field(124, "\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04")},
		{"a symbolic link", "symbolic link", cat(tt.Block("l", '2', 0), tt.End())},
		{"a hard link", "hard link", cat(tt.Block("h", '1', 0), tt.End())},
		{"a folder", "folder", cat(tt.Block("d/", '5', 0), tt.End())},
		{"a character device", "character device", cat(tt.Block("c", '3', 0), tt.End())},
		{"a FIFO", "FIFO", cat(tt.Block("f", '6', 0), tt.End())},
		{"a duplicate", "appears twice", cat(body, body, tt.End())},
		{"a file that is also a folder", "lies inside", cat(body, tt.Entry("a.txt/b", nil), tt.End())},
		{"a climbing name", "not a clean relative path", cat(tt.Entry("../etc/passwd", nil), tt.End())},
		{"an absolute name", "not a clean relative path", cat(tt.Entry("/etc/passwd", nil), tt.End())},
		{"a double slash", "not a clean relative path", cat(tt.Entry("a//b", nil), tt.End())},
		{"a dot element", "not a clean relative path", cat(tt.Entry("a/./b", nil), tt.End())},
		{"a backslash", "backslash", cat(tt.Entry(`a\b`, nil), tt.End())},
		{"an escape sequence", "control character", cat(tt.Entry("a\x1b]0;x\x07", nil), tt.End())},
		{"a C1 control", "control character", cat(tt.Entry("a\u009bb", nil), tt.End())},
		{"invalid UTF-8", "not valid UTF-8", cat(tt.Entry("a\xffb", nil), tt.End())},
		{"a name too long", "a name of 1029 bytes", write(t, tt.File{Name: strings.Repeat("n/", 514) + "x", Data: nil})},
		{"an entry too large", "at most 1048576", cat(tt.Block("big", '0', 1<<30), tt.End())},
		{"too many entries", "more than 64 entries", func() []byte {
			var fs []tt.File
			for i := range 65 {
				fs = append(fs, tt.File{Name: fmt.Sprint(i), Data: nil})
			}
			return write(t, fs...)
		}()},
		{"a bad checksum", "not a readable tar header", func() []byte { b := bytes.Clone(good); b[150]++; return b }()},
		{"not a tar file", "not a readable tar header", bytes.Repeat([]byte("x"), 1024)},
	}
}

// TestHostileArchivesAreRefused: each is refused with a *FormatError
// naming its reason.
func TestHostileArchivesAreRefused(t *testing.T) {
	for _, h := range hostiles(t) {
		_, err := read(h.archive, lim)
		var fe *tarball.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), h.reason) {
			t.Errorf("%s: %v, want a format error naming %q", h.name, err, h.reason)
		}
	}
}

// TestBoundsCountBytesRead: a sparse entry declaring 64 GiB is refused
// after reading its headers, and an archive is cut at Limits.Bytes.
func TestBoundsCountBytesRead(t *testing.T) {
	for _, h := range hostiles(t) {
		if h.name != "PAX sparse 1.0 of 64 GiB of hole" {
			continue
		}
		r := tarball.NewReader(bytes.NewReader(h.archive), lim)
		if _, err := r.Next(); err == nil {
			t.Fatal("sparse entry accepted")
		}
		if r.Offset() > int64(len(h.archive)) {
			t.Fatalf("read %d bytes of a %d-byte archive", r.Offset(), len(h.archive))
		}
	}
	big := write(t, tt.File{Name: "a", Data: make([]byte, 5000)})
	small := lim
	small.Bytes = 4096
	r := tarball.NewReader(bytes.NewReader(big), small)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes") || r.Offset() > 4097 {
		t.Fatalf("read %d bytes (%d of the archive), err %v; want a stop at 4096", n, r.Offset(), err)
	}
}

// TestReaderStopsAtTheFirstError: after an error, Next and Read keep
// returning it.
func TestReaderStopsAtTheFirstError(t *testing.T) {
	arch := cat(tt.Entry("a", []byte("x")), tt.Block("l", '2', 0), tt.Entry("b", []byte("y")), tt.End())
	r := tarball.NewReader(bytes.NewReader(arch), lim)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := r.Next()
	_, err2 := r.Next()
	_, err3 := r.Read(make([]byte, 1))
	if err1 == nil || err2 != err1 || err3 != err1 {
		t.Fatalf("errors %v, %v, %v; want the first one three times", err1, err2, err3)
	}
}
