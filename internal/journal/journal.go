// Package journal is an append-only log whose entries are chained by
// SHA-256: each entry's hash covers the previous entry's hash, its
// sequence number and its body, so that a changed, removed or reordered
// entry breaks the chain at that point. Entries are written as JSON
// lines and made durable in batches (fsync after BatchEntries entries or
// BatchInterval, whichever comes first, and on Sync and Close), so that
// a process killed at any moment leaves every batch it synced and at most
// a torn last line, which Scan drops.
//
// File format (one JSON object a line):
//
//	{"seq":0,"prev":"","body":{...},"hash":"<hex>"}
//	{"seq":1,"prev":"<hash of 0>","body":{...},"hash":"<hex>"}
//
// hash = SHA-256("repro.journal/v1\n" || prev || "\n" || decimal seq || "\n" || body),
// body being the exact bytes written. Entry 0 is the header that says
// what the journal belongs to.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/strictjson"
)

// Domain separates journal hashes from any other SHA-256 repro computes.
const Domain = "repro.journal/v1\n"

// Bounds of what Scan accepts.
const (
	MaxLine    = 1 << 20   // one entry
	MaxEntries = 1 << 22   // entries in one journal
	MaxBytes   = 512 << 20 // the whole file
)

// Batching of fsync.
const (
	BatchEntries  = 64
	BatchInterval = 200 * time.Millisecond
)

// Entry is one line of a journal.
type Entry struct {
	Seq  int             `json:"seq"`
	Prev string          `json:"prev"`
	Body json.RawMessage `json:"body"`
	Hash string          `json:"hash"`
}

// Hash is the chain hash of an entry with sequence seq, previous hash
// prev and body.
func Hash(seq int, prev string, body []byte) string {
	h := digest.NewHash()
	h.Write([]byte(Domain))
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write([]byte(strconv.Itoa(seq)))
	h.Write([]byte{'\n'})
	h.Write(body)
	return h.Digest().Hex()
}

// Summary is what Scan found in a journal, without its entries.
type Summary struct {
	// Entries counts the entries of the intact chain; Head is the hash of
	// the last one, "" for none.
	Entries int
	Head    string
	// Valid is the length in bytes of the intact prefix (every entry,
	// with its newline).
	Valid int64
	// Torn reports an incomplete last line (a write cut short), dropped.
	Torn bool
}

// Scan reads and checks a journal from r entry by entry, holding one
// entry at a time, and hands each entry of the chain to each in order:
// every complete line must be an entry with the next sequence number,
// the previous entry's hash and its own correct hash, written exactly as
// the Writer writes it (keys in order, compact, body as json.Marshal
// gives it), so that Scan accepts exactly the journals a Writer writes. A last line without
// its newline is a torn write and is dropped (Torn); anything else that
// does not check is an error naming the line, as is an error of each,
// which stops the scan.
func Scan(r io.Reader, each func(Entry) error) (*Summary, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxBytes+1), 1<<16)
	s := &Summary{}
	var total int64
	for line := 1; ; line++ {
		b, err := readLine(br)
		total += int64(len(b))
		if total > MaxBytes {
			return nil, fmt.Errorf("journal is larger than %d bytes", MaxBytes)
		}
		if err == io.EOF {
			if len(b) > 0 {
				s.Torn = true
			}
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("journal line %d: %v", line, err)
		}
		if s.Entries >= MaxEntries {
			return nil, fmt.Errorf("journal has more than %d entries", MaxEntries)
		}
		var e Entry
		if err := strictjson.Decode(bytes.TrimSuffix(b, []byte{'\n'}), &e); err != nil {
			return nil, fmt.Errorf("journal line %d: %v", line, err)
		}
		seq := s.Entries
		switch {
		case e.Seq != seq:
			return nil, fmt.Errorf("journal line %d: sequence %d, want %d", line, e.Seq, seq)
		case e.Prev != s.Head:
			return nil, fmt.Errorf("journal line %d: previous hash %.16s does not chain to entry %d", line, e.Prev, seq-1)
		case len(e.Body) == 0:
			return nil, fmt.Errorf("journal line %d: no body", line)
		case e.Hash != Hash(seq, s.Head, e.Body):
			return nil, fmt.Errorf("journal line %d: hash does not match the entry", line)
		case !writerForm(e, b):
			return nil, fmt.Errorf("journal line %d: entry is not in the form the writer gives it", line)
		}
		if err := each(e); err != nil {
			return nil, fmt.Errorf("journal line %d: %w", line, err)
		}
		s.Entries++
		s.Valid = total
		s.Head = e.Hash
	}
}

// writerForm reports whether line is entry e as the Writer writes it
// (json.Marshal of the Entry, its body compact with HTML characters
// escaped, then a newline): the chain's hashes cover seq, prev and body
// only, so this is what makes a journal that reads one that was written,
// byte for byte, and never two files for one chain.
func writerForm(e Entry, line []byte) bool {
	m, err := json.Marshal(e)
	return err == nil && len(line) == len(m)+1 && bytes.Equal(line[:len(m)], m) && line[len(m)] == '\n'
}

// readLine reads up to and including '\n', at most MaxLine bytes; it
// returns io.EOF with the bytes of an unterminated last line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		frag, err := br.ReadSlice('\n')
		out = append(out, frag...)
		if len(out) > MaxLine {
			return nil, fmt.Errorf("entry longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return out, err
		}
	}
}

// ScanFile scans the journal at path (see Scan).
func ScanFile(path string, each func(Entry) error) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Scan(f, each)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Held reports whether a live Writer (in this or another process) holds
// the journal at path: a journal whose writer is still running is not
// finished, whatever it holds so far.
func Held(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	default:
		return false, fmt.Errorf("cannot check the lock of journal %s: %v", path, err)
	}
}

// Writer appends entries to a journal file. It is safe for concurrent
// use.
type Writer struct {
	mu      sync.Mutex
	f       *os.File
	bw      *bufio.Writer
	seq     int
	prev    string
	pending int
	synced  time.Time
	err     error
}

// Create makes a new journal at path (which must not exist) whose header
// (entry 0) is header, written and synced before Create returns.
func Create(path string, header any) (*Writer, error) {
	w, err := open(path)
	if err != nil {
		return nil, err
	}
	return w.started(path, w.add(header))
}

// Continue makes a new journal at path (which must not exist) holding
// first the chain of the journal at from, copied entry by entry as a Scan
// checks it, each in the writer's form (byte for byte for a journal a
// Writer wrote; a torn last line is left out), then next
// as a further entry when not nil; both are synced before Continue
// returns. The chain copied must be the one want sums up (the Summary
// of the scan its caller decided on: the same number of entries, ending
// at the same head), so that what is continued is what was read, even if
// from changed in between. A resumed run continues the journal of the
// run it resumes this way, so that one chain covers every verdict, while
// holding one entry at a time. When Continue fails it removes what it
// wrote at path.
func Continue(path, from string, want *Summary, next any) (*Writer, error) {
	w, err := open(path)
	if err != nil {
		return nil, err
	}
	s, err := ScanFile(from, func(e Entry) error {
		if w.seq >= want.Entries {
			return fmt.Errorf("more entries than the %d read before", want.Entries)
		}
		return w.writeEntry(e)
	})
	if err == nil && (s.Entries != want.Entries || s.Head != want.Head) {
		err = fmt.Errorf("journal %s changed since it was read (%d entries ending at %.16s, read as %d ending at %.16s)", from, s.Entries, s.Head, want.Entries, want.Head)
	}
	if err == nil && next != nil {
		err = w.add(next)
	}
	return w.started(path, err)
}

// open creates the journal file at path, which must not exist, and
// locks it for the writer's life.
func open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	// The writer holds the journal locked for its life (the kernel drops
	// the lock when the process ends, however it ends): see Held.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("cannot lock journal %s: %v", path, err)
	}
	return &Writer{f: f, bw: bufio.NewWriterSize(f, 1<<16), synced: time.Now()}, nil
}

// started syncs the entries written so far and the folder of path, or,
// where err (the writing's) or the syncing failed, closes and removes the
// file.
func (w *Writer) started(path string, err error) (*Writer, error) {
	if err == nil {
		err = w.Sync()
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		w.f.Close()
		os.Remove(path)
		return nil, err
	}
	return w, nil
}

func (w *Writer) writeEntry(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(b)+1 > MaxLine {
		return fmt.Errorf("journal entry of %d bytes is larger than %d", len(b)+1, MaxLine)
	}
	if _, err := w.bw.Write(append(b, '\n')); err != nil {
		return err
	}
	w.seq, w.prev = e.Seq+1, e.Hash
	w.pending++
	return nil
}

func (w *Writer) add(body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return w.writeEntry(Entry{Seq: w.seq, Prev: w.prev, Body: b, Hash: Hash(w.seq, w.prev, b)})
}

// Add appends body (marshalled as JSON) as the next entry, and syncs the
// batch when it is full or old enough. After a failed write every call
// returns that error.
func (w *Writer) Add(body any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.err = w.add(body); w.err != nil {
		return w.err
	}
	if w.pending >= BatchEntries || time.Since(w.synced) >= BatchInterval {
		w.err = w.syncLocked()
	}
	return w.err
}

// Sync writes and fsyncs every entry added so far.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = w.syncLocked()
	return w.err
}

func (w *Writer) syncLocked() error {
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	w.pending, w.synced = 0, time.Now()
	return nil
}

// Head returns the hash of the last entry added and the number of
// entries.
func (w *Writer) Head() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prev, w.seq
}

// Close syncs and closes the journal.
func (w *Writer) Close() error {
	err := w.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
