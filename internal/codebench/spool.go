package codebench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// ResultSource is a scoring pass's results, read one sample at a time in
// the order of its samples. A ResultSlice holds them in memory; a
// VerdictSpool holds them on disk, so that a pass over many samples keeps
// a few bytes a sample in memory rather than the results.
type ResultSource interface {
	// Len is the number of samples.
	Len() int
	// Each calls fn with every sample's result in order, and stops at the
	// first error, which it returns. fn must not keep r after it returns.
	Each(fn func(r *SampleResult) error) error
}

// ResultSlice is a ResultSource held in memory.
type ResultSlice []*SampleResult

// Len is the number of results.
func (s ResultSlice) Len() int { return len(s) }

// Each calls fn with each result in order.
func (s ResultSlice) Each(fn func(*SampleResult) error) error {
	for _, r := range s {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// spoolRef locates one verdict in a VerdictSpool's file; n == 0: none yet.
type spoolRef struct {
	off int64
	n   int32
}

// VerdictSpool keeps the verdicts of a scoring pass in a file rather than
// in memory: each distinct verdict is written once as it is decided (a
// verdict shared by the samples of equal programs once for all of them),
// and 16 bytes a sample and phase locate it. The file is unlinked as soon
// as it is made, so a run that is killed leaves nothing behind; only this
// process can read it, and each entry is read back by the offset and
// length it was written at and must decode to a known status.
type VerdictSpool struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	off     int64
	samples []*task.Sample
	phases  int
	refs    []spoolRef // by sample index * phases + phase
}

// NewVerdictSpool makes a spool in dir for the verdicts of samples, each
// with phases phases (1: base only; 2: base and plus).
func NewVerdictSpool(dir string, samples []*task.Sample, phases int) (*VerdictSpool, error) {
	if phases < 1 || phases > 2 {
		return nil, fmt.Errorf("verdict spool: %d phases, want 1 or 2", phases)
	}
	f, err := safefile.CreateUnlinked(dir, ".verdicts-*.spool")
	if err != nil {
		return nil, fmt.Errorf("cannot make the verdict spool: %w", err)
	}
	return &VerdictSpool{f: f, w: bufio.NewWriterSize(f, 1<<16), samples: samples, phases: phases,
		refs: make([]spoolRef, len(samples)*phases)}, nil
}

// slot is the index in refs of sample i's phase p, or -1 outside the
// spool.
func (s *VerdictSpool) slot(i int, p task.Phase) int {
	if i < 0 || i >= len(s.samples) || int(p) < 0 || int(p) >= s.phases {
		return -1
	}
	return i*s.phases + int(p)
}

// put records pr as the verdict of phase p of sample i and of the samples
// also (which share its execution).
func (s *VerdictSpool) put(i int, p task.Phase, pr *PhaseResult, also []int) error {
	b, err := json.Marshal(pr)
	if err != nil {
		return fmt.Errorf("verdict spool: %w", err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	slots := make([]int, 0, 1+len(also))
	for _, k := range append([]int{i}, also...) {
		j := s.slot(k, p)
		if j < 0 {
			return fmt.Errorf("verdict spool: sample %d phase %s is outside the pass", k, p)
		}
		slots = append(slots, j)
	}
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("cannot write the verdict spool: %w", err)
	}
	// Located only once written.
	ref := spoolRef{off: s.off, n: int32(len(b))}
	for _, j := range slots {
		s.refs[j] = ref
	}
	s.off += int64(len(b))
	return nil
}

// Len is the number of samples.
func (s *VerdictSpool) Len() int { return len(s.samples) }

// Each reads every sample's verdicts back in the order of the samples; a
// sample without a verdict of every phase is an error.
func (s *VerdictSpool) Each(fn func(*SampleResult) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("cannot write the verdict spool: %w", err)
	}
	var buf []byte
	read := func(i int, p task.Phase, into *PhaseResult) error {
		ref := s.refs[s.slot(i, p)]
		if ref.n <= 0 || ref.off+int64(ref.n) > s.off {
			return fmt.Errorf("verdict spool: sample %d (%s) has no %s verdict", i, s.samples[i].TaskID, p)
		}
		if cap(buf) < int(ref.n) {
			buf = make([]byte, ref.n)
		}
		buf = buf[:ref.n]
		if _, err := s.f.ReadAt(buf, ref.off); err != nil {
			return fmt.Errorf("cannot read the verdict spool: %w", err)
		}
		*into = PhaseResult{}
		if err := strictjson.Decode(buf, into); err != nil {
			return fmt.Errorf("verdict spool: sample %d's %s verdict: %w", i, p, err)
		}
		if st := into.Status; st != StatusPass && st != StatusFail && st != StatusTimeout {
			return fmt.Errorf("verdict spool: sample %d's %s verdict has status %q", i, p, st)
		}
		return nil
	}
	var r SampleResult
	var plus PhaseResult
	for i, smp := range s.samples {
		r = SampleResult{Sample: smp}
		if err := read(i, task.Base, &r.Base); err != nil {
			return err
		}
		if s.phases == 2 {
			if err := read(i, task.Plus, &plus); err != nil {
				return err
			}
			r.Plus = &plus
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the spool's file (which has no name to remove).
func (s *VerdictSpool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}
