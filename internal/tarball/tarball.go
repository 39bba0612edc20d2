// Package tarball writes the one tar form repro exchanges (evidence
// bundles, image bundles and the image archives inside them) and reads
// back exactly that form, so that every tar reader sees the bytes repro
// checked.
//
// The form is what Writer writes: regular files only, each a POSIX ustar
// header block of Go's PAX form (mode 0644, owner 0, no user or group
// names, a modification time in whole seconds), preceded by a PAX
// extended header only where a field does not fit the block, holding
// only the records "path" (a long or non-ASCII name) and "size" (8 GiB
// or more); the data padded with zeros to a 512-byte block; then the
// end-of-archive marker (two zero blocks). Names are clean relative
// slash-separated paths of valid UTF-8 without control characters or
// backslashes, each once, no name a folder of another.
//
// Reader refuses anything else and names the reason: other entry types
// (links, folders, devices, sparse files, GNU long names, global
// headers), any other PAX record (GNU.sparse.*, uid, mtime, ...), a
// header byte other than the writer's for the same name, size and time,
// non-zero padding, a missing end marker, and anything but at most one
// tar record (10240 bytes) of zeros after it. Different tar readers
// disagree on exactly these (GNU tar reads a PAX GNU.sparse.realsize
// without a map as the entry's length, Go's archive/tar ignores it, and
// either may stop at the end marker or read on), so an archive this
// reader accepts unpacks to the same bytes with GNU tar, bsdtar and
// Python's tarfile (see the package's tests). Every bound counts bytes
// actually read.
package tarball

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// BlockSize is the tar block size.
const BlockSize = 512

// MaxTrailingZeros is the most zero bytes accepted after the end marker:
// one tar record (GNU tar pads archives to records of 20 blocks).
const MaxTrailingZeros = 20 * BlockSize

// maxTime is the first modification time a ustar header cannot hold
// (eleven octal digits).
const maxTime = 1 << 33

// maxHeader bounds the header bytes of one entry the reader holds: the
// writer's longest is a PAX header for a name of a few KiB and a ustar
// block.
const maxHeader = 16 << 10

// header is the header the writer writes for a file.
func header(name string, size int64, mtime time.Time) (*tar.Header, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("%q: negative size %d", name, size)
	}
	if s := mtime.Unix(); s < 0 || s >= maxTime || mtime.Nanosecond() != 0 {
		return nil, fmt.Errorf("%q: modification time %s is not whole seconds between 1970 and 2242", name, mtime.UTC().Format(time.RFC3339Nano))
	}
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: mtime.UTC(), Format: tar.FormatPAX}, nil
}

// encodeHeader is the header bytes the writer writes for a file.
func encodeHeader(name string, size int64, mtime time.Time) ([]byte, error) {
	h, err := header(name, size, mtime)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tar.NewWriter(&b).WriteHeader(h); err != nil {
		return nil, fmt.Errorf("%q: %v", name, err)
	}
	return b.Bytes(), nil
}

// CheckName reports whether name may name an entry: a clean relative
// slash-separated path of valid UTF-8, without ".", ".." or empty
// elements, control characters or backslashes.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case !utf8.ValidString(name):
		return fmt.Errorf("name %q is not valid UTF-8", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }):
		return fmt.Errorf("name %q has a control character", name)
	case strings.Contains(name, `\`):
		return fmt.Errorf("name %q has a backslash", name)
	case strings.HasPrefix(name, "/") || path.Clean(name) != name:
		return fmt.Errorf("name %q is not a clean relative path", name)
	}
	for _, e := range strings.Split(name, "/") {
		if e == "." || e == ".." {
			return fmt.Errorf("name %q is not a clean relative path", name)
		}
	}
	return nil
}

// names holds the names of an archive so far: each once, and no name
// both a file and a folder of another.
type names struct {
	files, dirs map[string]bool
}

func (s *names) add(name string) error {
	if s.files == nil {
		s.files, s.dirs = map[string]bool{}, map[string]bool{}
	}
	switch {
	case s.files[name]:
		return fmt.Errorf("%q appears twice", name)
	case s.dirs[name]:
		return fmt.Errorf("%q is also the folder of an earlier entry", name)
	}
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if s.files[d] {
			return fmt.Errorf("%q lies inside %q, an earlier file", name, d)
		}
		s.dirs[d] = true
	}
	s.files[name] = true
	return nil
}

// Writer writes an archive in repro's form.
type Writer struct {
	tw    *tar.Writer
	names names
}

// NewWriter writes an archive to w.
func NewWriter(w io.Writer) *Writer { return &Writer{tw: tar.NewWriter(w)} }

// Add writes a regular file name of size bytes, copied from r, with
// modification time mtime (whole seconds, 1970 to 2242). A name that is
// not valid (CheckName) or already written, and r holding fewer or more
// than size bytes, are errors.
func (w *Writer) Add(name string, size int64, mtime time.Time, r io.Reader) error {
	h, err := header(name, size, mtime)
	if err != nil {
		return err
	}
	if err := w.names.add(name); err != nil {
		return err
	}
	if err := w.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%q: %v", name, err)
	}
	n, err := io.Copy(w.tw, r)
	if errors.Is(err, tar.ErrWriteTooLong) {
		return fmt.Errorf("%q: more than %d bytes (it changed while it was written)", name, size)
	}
	if err != nil {
		return fmt.Errorf("%q: %v", name, err)
	}
	if n != size {
		return fmt.Errorf("%q: %d of %d bytes (it changed while it was written)", name, n, size)
	}
	return nil
}

// AddBytes writes a regular file holding b.
func (w *Writer) AddBytes(name string, mtime time.Time, b []byte) error {
	return w.Add(name, int64(len(b)), mtime, bytes.NewReader(b))
}

// Close writes the end-of-archive marker. It does not close the
// underlying writer.
func (w *Writer) Close() error { return w.tw.Close() }

// Limits bound what Reader reads.
type Limits struct {
	Entries   int   // most entries
	EntrySize int64 // most bytes of one entry
	Bytes     int64 // most bytes of the archive, headers and padding included
	NameBytes int   // longest name, in bytes
}

// Entry is a regular file of an archive.
type Entry struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// FormatError says where and why an archive is not in repro's form.
type FormatError struct {
	Offset int64  // where the entry or the problem starts
	Entry  string // the entry's name, if known
	Reason string
}

func (e *FormatError) Error() string {
	if e.Entry != "" {
		return fmt.Sprintf("entry %q (at byte %d): %s", e.Entry, e.Offset, e.Reason)
	}
	return fmt.Sprintf("at byte %d: %s", e.Offset, e.Reason)
}

// Reader reads an archive in repro's form, entry by entry, and refuses
// anything else with a *FormatError.
type Reader struct {
	raw   *rawReader
	tr    *tar.Reader
	lim   Limits
	n     int
	cur   *Entry
	pad   int   // padding after the current entry's data
	start int64 // offset of the current entry's header
	names names
	err   error // sticky: every later call returns it
}

// NewReader reads an archive from r within lim.
func NewReader(r io.Reader, lim Limits) *Reader {
	raw := &rawReader{r: r, limit: lim.Bytes}
	return &Reader{raw: raw, tr: tar.NewReader(raw), lim: lim}
}

var (
	errTooLarge   = errors.New("archive too large")
	errHeaderLong = errors.New("header too long")
)

// rawReader counts the bytes read, stops past limit, and records the
// header bytes the tar reader reads while recording is on.
type rawReader struct {
	r         io.Reader
	n, limit  int64
	recording bool
	rec       []byte
}

func (r *rawReader) Read(p []byte) (int, error) {
	if r.n > r.limit {
		return 0, errTooLarge
	}
	if max := r.limit + 1 - r.n; int64(len(p)) > max {
		p = p[:max]
	}
	if r.recording {
		room := maxHeader - len(r.rec)
		if room <= 0 {
			return 0, errHeaderLong
		}
		if len(p) > room {
			p = p[:room]
		}
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.recording {
		r.rec = append(r.rec, p[:n]...)
	}
	if r.n > r.limit {
		return n, errTooLarge
	}
	return n, err
}

// Next advances to the next entry. At the end of the archive it returns
// io.EOF, once the end marker and what follows it are checked. Unread
// bytes of the current entry are read and dropped. Any error is final.
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err, r.cur = err, nil
	}
	return e, err
}

func (r *Reader) fail(name, format string, a ...any) error {
	return &FormatError{Offset: r.start, Entry: name, Reason: fmt.Sprintf(format, a...)}
}

// ioErr describes a failure of the underlying reads.
func (r *Reader) ioErr(name string, err error) error {
	switch {
	case errors.Is(err, errTooLarge):
		return &FormatError{Offset: r.lim.Bytes, Entry: name, Reason: fmt.Sprintf("the archive is larger than %d bytes", r.lim.Bytes)}
	case errors.Is(err, errHeaderLong):
		return r.fail(name, "a header longer than %d bytes (repro writes at most a PAX header and a block)", maxHeader)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return r.fail(name, "truncated")
	}
	var fe *FormatError
	if errors.As(err, &fe) {
		return err
	}
	return r.fail(name, "%v", err)
}

func (r *Reader) next() (*Entry, error) {
	if r.cur != nil {
		if _, err := io.Copy(io.Discard, r.tr); err != nil {
			return nil, r.ioErr(r.cur.Name, err)
		}
	}
	prev, pad := "", r.pad
	if r.cur != nil {
		prev = r.cur.Name
	}
	r.raw.recording, r.raw.rec = true, r.raw.rec[:0]
	h, err := r.tr.Next()
	r.raw.recording = false
	rec := r.raw.rec
	r.start = r.raw.n - int64(len(rec)) + int64(pad)
	if len(rec) >= pad && !allZero(rec[:pad]) {
		r.start -= int64(pad)
		return nil, r.fail(prev, "non-zero bytes in the padding after its data")
	}
	if len(rec) < pad {
		return nil, r.ioErr(prev, io.ErrUnexpectedEOF)
	}
	hdr := rec[pad:]
	r.cur, r.pad = nil, 0
	if err == io.EOF {
		return nil, r.end(hdr)
	}
	if err != nil {
		if errors.Is(err, tar.ErrHeader) && len(hdr) >= 2*BlockSize && allZero(hdr[:BlockSize]) {
			return nil, r.fail("", "a zero block followed by more data: an end-of-archive block with entries after it")
		}
		if errors.Is(err, errTooLarge) || errors.Is(err, errHeaderLong) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, r.ioErr("", err)
		}
		return nil, r.fail("", "not a readable tar header: %v", err)
	}
	if r.n++; r.n > r.lim.Entries {
		return nil, r.fail(h.Name, "more than %d entries", r.lim.Entries)
	}
	if err := r.check(h, hdr); err != nil {
		return nil, err
	}
	r.cur = &Entry{Name: h.Name, Size: h.Size, ModTime: h.ModTime}
	r.pad = int((BlockSize - h.Size%BlockSize) % BlockSize)
	return r.cur, nil
}

// typeNames names the tar entry types other than regular files.
var typeNames = map[byte]string{
	tar.TypeLink: "hard link", tar.TypeSymlink: "symbolic link", tar.TypeChar: "character device",
	tar.TypeBlock: "block device", tar.TypeDir: "folder", tar.TypeFifo: "FIFO", tar.TypeCont: "contiguous file",
	tar.TypeXGlobalHeader: "PAX global header", tar.TypeGNUSparse: "GNU sparse file", 'D': "GNU dump folder",
	'M': "GNU multi-volume continuation", 'V': "GNU volume label",
}

// check holds header h, read from the bytes hdr, to repro's form.
func (r *Reader) check(h *tar.Header, hdr []byte) error {
	name := h.Name
	if h.Typeflag != tar.TypeReg {
		what := typeNames[h.Typeflag]
		if what == "" {
			what = "unknown type"
		}
		return r.fail(name, "tar type %q (%s): repro's archives hold only regular files", h.Typeflag, what)
	}
	for k := range h.PAXRecords {
		switch {
		case k == "path" || k == "size":
		case strings.HasPrefix(k, "GNU.sparse."):
			return r.fail(name, "PAX record %s marks a sparse file: repro's archives hold no sparse entries (tar readers disagree on their length)", k)
		default:
			return r.fail(name, "PAX record %.40q, which repro never writes", k)
		}
	}
	if h.Format&tar.FormatGNU != 0 {
		return r.fail(name, "a GNU tar header (GNU extensions are not part of repro's form)")
	}
	if len(name) > r.lim.NameBytes {
		return r.fail(name[:min(len(name), 80)]+"...", "a name of %d bytes, at most %d", len(name), r.lim.NameBytes)
	}
	if err := CheckName(name); err != nil {
		return r.fail(name, "%v", err)
	}
	if h.Size > r.lim.EntrySize {
		return r.fail(name, "%d bytes, at most %d", h.Size, r.lim.EntrySize)
	}
	want, err := encodeHeader(name, h.Size, h.ModTime)
	if err != nil {
		return r.fail(name, "%v", err)
	}
	if !bytes.Equal(hdr, want) {
		return r.fail(name, "%s", headerDiff(hdr, want))
	}
	if err := r.names.add(name); err != nil {
		return r.fail(name, "%v", err)
	}
	return nil
}

// ustarFields are the fields of a ustar header block by offset.
var ustarFields = []struct {
	end  int
	name string
}{{100, "name"}, {108, "mode"}, {116, "uid"}, {124, "gid"}, {136, "size"}, {148, "mtime"}, {156, "checksum"},
	{157, "typeflag"}, {257, "linkname"}, {263, "magic"}, {265, "version"}, {297, "uname"}, {329, "gname"},
	{337, "devmajor"}, {345, "devminor"}, {500, "prefix"}, {512, "padding"}}

// headerDiff says how header bytes got differ from the writer's want.
func headerDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("a header of %d bytes where repro writes %d (an extended header repro does not write)", len(got), len(want))
	}
	i := 0
	for got[i] == want[i] {
		i++
	}
	if i < len(want)-BlockSize {
		return "its PAX extended header is not the one repro writes"
	}
	// The first field that differs, the checksum only if nothing else does.
	blk := len(want) - BlockSize
	diff := "checksum"
	start := 0
	for _, f := range ustarFields {
		if f.name != "checksum" && !bytes.Equal(got[blk+start:blk+f.end], want[blk+start:blk+f.end]) {
			diff = f.name
			break
		}
		start = f.end
	}
	return fmt.Sprintf("header field %s is not as repro writes it", diff)
}

// end checks what follows the last entry: the end marker hdr, then at
// most MaxTrailingZeros zero bytes and nothing else.
func (r *Reader) end(hdr []byte) error {
	switch {
	case !allZero(hdr):
		return r.fail("", "a header with no entry after it (a truncated archive)")
	case len(hdr) == 0:
		return r.fail("", "no end-of-archive marker (a truncated archive)")
	case len(hdr) != 2*BlockSize:
		return r.fail("", "an end-of-archive marker of one zero block, not two")
	}
	off := r.raw.n
	rest, err := io.ReadAll(io.LimitReader(r.raw, MaxTrailingZeros+1))
	if err != nil {
		return r.ioErr("", err)
	}
	if !allZero(rest) {
		return &FormatError{Offset: off, Reason: "data after the end-of-archive marker (a reader that reads on would see more entries)"}
	}
	if len(rest) > MaxTrailingZeros {
		return &FormatError{Offset: off, Reason: fmt.Sprintf("more than %d zero bytes after the end-of-archive marker", MaxTrailingZeros)}
	}
	return io.EOF
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Read reads the current entry's data; io.EOF at its end.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.cur == nil {
		return 0, io.EOF
	}
	n, err := r.tr.Read(p)
	if err != nil && err != io.EOF {
		err = r.ioErr(r.cur.Name, err)
		r.err = err
	}
	return n, err
}

// Offset is how many bytes of the archive were read so far.
func (r *Reader) Offset() int64 { return r.raw.n }
