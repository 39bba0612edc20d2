package sandbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// capBuffer keeps the first cap bytes written to it and drops the rest, so
// that a flood of output costs memory only up to the cap while the writer
// keeps draining the stream. Writes never block. Reads block until data
// arrives or the buffer is closed.
type capBuffer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte // unread bytes
	off    int    // read offset into buf
	total  int64  // bytes accepted so far
	cap    int64
	hit    bool
	closed bool
	keep   bool // keep everything for Bytes (Run) instead of discarding what was read
}

func newCapBuffer(limit int64, keep bool) *capBuffer {
	b := &capBuffer{cap: limit, keep: keep}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.cap - b.total; int64(len(p)) > room {
		p = p[:room]
		b.hit = true
	}
	if len(p) > 0 {
		b.buf = append(b.buf, p...)
		b.total += int64(len(p))
		b.cond.Broadcast()
	}
	return n, nil
}

func (b *capBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.off == len(b.buf) && !b.closed {
		b.cond.Wait()
	}
	if b.off == len(b.buf) {
		return 0, io.EOF
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	if !b.keep && b.off == len(b.buf) {
		b.buf, b.off = b.buf[:0], 0
	}
	return n, nil
}

func (b *capBuffer) close() {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// bytes returns a copy of everything kept (keep mode).
func (b *capBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

func (b *capBuffer) capHit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hit
}

// Stream identifiers of the engine's multiplexed attach stream.
const (
	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3
)

// maxFrame bounds one frame of the multiplexed stream. The engine writes
// frames of at most 32 KiB; a larger header means the stream is corrupt and
// nothing of that size is allocated.
const maxFrame = 1 << 20

// demux copies the engine's multiplexed stream (8-byte headers: stream type,
// three zero bytes, big-endian payload length) into stdout and stderr. It
// returns nil at a clean end of the stream.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("failed to read the output stream: %w", err)
		}
		size := binary.BigEndian.Uint32(hdr[4:])
		if hdr[1] != 0 || hdr[2] != 0 || hdr[3] != 0 || size > maxFrame {
			return fmt.Errorf("corrupt output stream: bad frame header %x", hdr)
		}
		var w io.Writer
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			w = io.Discard
		default:
			return fmt.Errorf("corrupt output stream: unknown stream %d", hdr[0])
		}
		for remaining := int(size); remaining > 0; {
			chunk := buf
			if remaining < len(chunk) {
				chunk = chunk[:remaining]
			}
			n, err := io.ReadFull(r, chunk)
			w.Write(chunk[:n])
			remaining -= n
			if err != nil {
				return fmt.Errorf("failed to read the output stream: %w", err)
			}
		}
	}
}
