package task

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// ProgramFile keeps the programs of a sample set on disk rather than in
// memory, so that what a run holds of its samples does not grow with
// their programs: each program is appended once as it is read, and the
// Sample keeps only where it is and its SHA-256. Every read is checked
// against that digest: a program that reads back as anything else is an
// integrity error, never run. The file is unlinked as soon as it is made,
// so a run that is killed leaves nothing behind and no other process can
// open it by name.
type ProgramFile struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	off    int64
	closed bool
}

// NewProgramFile makes a program file in dir.
func NewProgramFile(dir string) (*ProgramFile, error) {
	f, err := safefile.CreateUnlinked(dir, ".programs-*")
	if err != nil {
		return nil, fmt.Errorf("cannot make the samples' program file: %w", err)
	}
	return &ProgramFile{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// keptProgram is where a Sample's program is in its ProgramFile.
type keptProgram struct {
	file *ProgramFile
	off  int64
	n    int
	sum  digest.SHA256
}

// keep moves s's program (s.Solution) into p: s keeps its place and
// digest, and its Solution is emptied.
func (p *ProgramFile) keep(s *Sample) error {
	if s.kept != nil {
		return fmt.Errorf("sample %s: program is already kept on disk", s.Origin)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the samples' program file is closed")
	}
	n, err := p.w.WriteString(s.Solution)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot write the samples' program file: %v", err)
	}
	s.kept = &keptProgram{file: p, off: p.off, n: n, sum: digest.Of([]byte(s.Solution))}
	s.Solution = ""
	p.off += int64(n)
	return nil
}

// Flush writes the programs kept so far to the file, so that a full disk
// shows while the samples are read, not when a job starts. A failure is a
// precondition error.
func (p *ProgramFile) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the samples' program file is closed")
	}
	if err := p.w.Flush(); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot write the samples' program file: %v", err)
	}
	return nil
}

// read reads back the program at k and checks it: a program that is not
// all there, or whose bytes do not hash to its digest, is an integrity
// error.
func (p *ProgramFile) read(k *keptProgram) ([]byte, error) {
	if err := p.Flush(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	end := p.off
	p.mu.Unlock()
	if k.off < 0 || k.n < 0 || k.n > MaxProgram || k.off+int64(k.n) > end {
		return nil, exitcode.Errorf(exitcode.Integrity, "a program at %d (%d bytes) is outside the samples' program file of %d bytes", k.off, k.n, end)
	}
	b := make([]byte, k.n)
	if _, err := p.f.ReadAt(b, k.off); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, exitcode.Errorf(exitcode.Integrity, "a program was cut short on disk while it waited to run (sha256 %s)", k.sum.Hex())
	} else if err != nil {
		return nil, fmt.Errorf("cannot read the samples' program file: %w", err)
	}
	if got := digest.Of(b); got != k.sum {
		return nil, exitcode.Errorf(exitcode.Integrity, "a program changed on disk while it waited to run (sha256 %s, read back as %s)", k.sum.Hex(), got.Hex())
	}
	return b, nil
}

// Close releases the file (which has no name to remove). A sample it
// holds cannot be read after.
func (p *ProgramFile) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.f.Close()
}

// Program returns the program that runs: Solution, or, for a sample whose
// program a ProgramFile keeps, the program read back from it and checked
// against its digest.
func (s *Sample) Program() ([]byte, error) {
	if s.kept == nil {
		return []byte(s.Solution), nil
	}
	b, err := s.kept.file.read(s.kept)
	if err != nil {
		return nil, fmt.Errorf("sample %s: %w", s.Origin, err)
	}
	return b, nil
}

// ProgramSum is the SHA-256 of the program that runs, known without
// reading it back.
func (s *Sample) ProgramSum() digest.SHA256 {
	if s.kept == nil {
		return digest.Of([]byte(s.Solution))
	}
	return s.kept.sum
}
