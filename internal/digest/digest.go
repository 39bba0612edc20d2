// Package digest provides typed SHA-256 digests and a reader that checks the
// size and digest of an untrusted stream while it is read.
package digest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
)

// SHA256 is a SHA-256 digest. The zero value means "no digest".
type SHA256 [sha256.Size]byte

// Parse reads a digest written as 64 lowercase hex digits, with or without a
// "sha256:" prefix.
func Parse(s string) (SHA256, error) {
	var d SHA256
	if len(s) > 7 && s[:7] == "sha256:" {
		s = s[7:]
	}
	if len(s) != 2*sha256.Size {
		return d, fmt.Errorf("invalid sha256 %q: want 64 hex digits, got %d characters", clip(s), len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, fmt.Errorf("invalid sha256 %q: want lowercase hex digits", clip(s))
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("invalid sha256 %q: %v", clip(s), err)
	}
	return d, nil
}

// MustParse is Parse for constants; it panics on a malformed digest.
func MustParse(s string) SHA256 {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Of returns the digest of b.
func Of(b []byte) SHA256 { return sha256.Sum256(b) }

// IsZero reports whether d is the zero value.
func (d SHA256) IsZero() bool { return d == SHA256{} }

// Hex returns the 64 lowercase hex digits.
func (d SHA256) Hex() string { return hex.EncodeToString(d[:]) }

// String returns "sha256:" followed by the hex digits.
func (d SHA256) String() string { return "sha256:" + d.Hex() }

// MarshalText writes the hex digits (no prefix).
func (d SHA256) MarshalText() ([]byte, error) { return []byte(d.Hex()), nil }

// UnmarshalText parses with Parse.
func (d *SHA256) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MismatchError reports bytes that do not match their pin.
type MismatchError struct {
	What       string // what was checked, e.g. an asset id or a path
	WantSize   int64
	GotSize    int64 // more than WantSize means "at least one byte more"
	WantDigest SHA256
	GotDigest  SHA256 // zero when the size already differed
}

func (e *MismatchError) Error() string {
	if e.GotSize > e.WantSize {
		return fmt.Sprintf("%s: size mismatch: expected %d bytes, got more", e.What, e.WantSize)
	}
	if e.GotSize != e.WantSize {
		return fmt.Sprintf("%s: size mismatch: expected %d bytes, got %d", e.What, e.WantSize, e.GotSize)
	}
	return fmt.Sprintf("%s: sha256 mismatch: expected %s, got %s", e.What, e.WantDigest.Hex(), e.GotDigest.Hex())
}

// ErrTooLong is returned by a Verifier whose stream holds more bytes than the
// expected size.
var ErrTooLong = errors.New("more bytes than the pinned size")

// Verifier reads an untrusted stream and fails at its end unless exactly
// Size bytes with the expected digest were read. It never returns more than
// Size bytes to its caller.
type Verifier struct {
	r    io.Reader
	h    hash.Hash
	what string
	size int64
	want SHA256
	n    int64
	done bool
}

// NewVerifier wraps r. what names the stream in errors.
func NewVerifier(r io.Reader, what string, size int64, want SHA256) *Verifier {
	return &Verifier{r: r, h: sha256.New(), what: what, size: size, want: want}
}

// Resume returns a Verifier for the rest of a stream whose first start bytes
// were already read and written into h.
func Resume(r io.Reader, h hash.Hash, start int64, what string, size int64, want SHA256) *Verifier {
	return &Verifier{r: r, h: h, what: what, size: size, want: want, n: start}
}

func (v *Verifier) Read(p []byte) (int, error) {
	if v.done {
		return 0, io.EOF
	}
	if rem := v.size - v.n; int64(len(p)) > rem+1 {
		p = p[:rem+1] // read at most one byte past the pin to detect overlong streams
	}
	n, err := v.r.Read(p)
	if v.n+int64(n) > v.size {
		return 0, &MismatchError{What: v.what, WantSize: v.size, GotSize: v.n + int64(n), WantDigest: v.want}
	}
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == io.EOF {
		v.done = true
		if v.n != v.size {
			return n, &MismatchError{What: v.what, WantSize: v.size, GotSize: v.n, WantDigest: v.want}
		}
		var got SHA256
		v.h.Sum(got[:0])
		if got != v.want {
			return n, &MismatchError{What: v.what, WantSize: v.size, GotSize: v.n, WantDigest: v.want, GotDigest: got}
		}
	}
	return n, err
}

// N returns how many bytes were read so far.
func (v *Verifier) N() int64 { return v.n }

// tally hashes and counts the bytes that pass through a Reader or Writer.
type tally struct {
	h hash.Hash
	n int64
}

func newTally() tally { return tally{h: sha256.New()} }

func (t *tally) add(p []byte) {
	t.h.Write(p)
	t.n += int64(len(p))
}

// Sum returns the digest of the bytes so far and their count.
func (t *tally) Sum() (SHA256, int64) {
	var d SHA256
	t.h.Sum(d[:0])
	return d, t.n
}

// Reader hashes everything read through it; Sum returns the digest of
// what was read so far and its length.
type Reader struct {
	r io.Reader
	tally
}

// NewReader wraps r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r, tally: newTally()} }

func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.add(p[:n])
	return n, err
}

// bufSize is the read size used for hashing: large enough to keep SHA-NI
// busy, small enough to keep memory flat.
const bufSize = 1 << 20

// ReaderFrom hashes all of r with a fixed buffer and returns digest and size.
func ReaderFrom(r io.Reader) (SHA256, int64, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, r, make([]byte, bufSize))
	var d SHA256
	h.Sum(d[:0])
	return d, n, err
}

// File hashes the file at path.
func File(path string) (SHA256, int64, error) {
	return FileContext(context.Background(), path)
}

// FileContext is File that stops within one read (at most bufSize) once
// ctx is done, returning ctx's error.
func FileContext(ctx context.Context, path string) (SHA256, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return SHA256{}, 0, err
	}
	defer f.Close()
	return ReaderFrom(ContextReader(ctx, f))
}

// ContextReader reads r until ctx is done, then returns ctx's error: a
// long read through it stops within one Read call of a cancellation.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return contextReader{ctx, r}
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Hash is a running SHA-256 (a hash.Hash) that also gives its digest as a
// SHA256. Packages hash through it, never through crypto/sha256 directly.
type Hash struct{ hash.Hash }

// NewHash returns an empty running SHA-256.
func NewHash() *Hash { return &Hash{sha256.New()} }

// Digest returns the digest of what was written so far.
func (h *Hash) Digest() SHA256 {
	var d SHA256
	h.Sum(d[:0])
	return d
}

// NewHMAC returns a running HMAC-SHA256 under key; Digest gives the tag,
// and Reset starts a new message under the same key.
func NewHMAC(key []byte) *Hash { return &Hash{hmac.New(sha256.New, key)} }

// Writer hashes and counts everything written through it to w; Sum
// returns the digest of what was written so far and its length.
type Writer struct {
	w io.Writer
	tally
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, tally: newTally()} }

func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.add(p[:n])
	return n, err
}
