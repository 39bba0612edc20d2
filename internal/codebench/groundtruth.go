package codebench

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/filelock"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/workpool"
)

// TruthKey names the environment ground truth was computed in. Expected
// outputs and per-input times are reused only under an equal key.
type TruthKey struct {
	Format        int           `json:"format"`
	Dataset       string        `json:"dataset"`
	DatasetSHA256 digest.SHA256 `json:"dataset_sha256"`
	Image         string        `json:"image"`
	Harness       digest.SHA256 `json:"harness"`
	CPU           string        `json:"cpu"`
}

// truthFormat changes whenever the cache layout or the meaning of its
// contents changes.
const truthFormat = 3

// Digest returns the key's digest, the name of its cache folder.
func (k TruthKey) Digest() digest.SHA256 {
	b, _ := json.Marshal(k)
	return digest.Of(b)
}

// phaseTruth is the ground truth of one task phase: the expected outputs,
// stored in their own file, and the canonical solution's time per input.
type phaseTruth struct {
	N         int           `json:"n"`
	Size      int64         `json:"size"`
	SHA256    digest.SHA256 `json:"sha256"`
	MaxRecord int           `json:"max_record"`
	Times     []float64     `json:"times"`
	// Encode is, per input, the CPU seconds the child spent beyond the
	// call itself (encoding the output; for input 0 also loading the
	// program), as the supervisor measured them.
	Encode []float64 `json:"encode"`
	// PeakKB is the child's peak resident memory over the phase (KiB).
	PeakKB int64 `json:"peak_kb"`
	// Large: the canonical solution needed the large sandbox (wire.LargeLimits).
	Large bool `json:"large,omitempty"`
}

// taskTruth is the ground truth of one task.
type taskTruth struct {
	Task  string      `json:"task"`
	Error string      `json:"error,omitempty"` // the canonical solution failed: why
	Base  *phaseTruth `json:"base,omitempty"`
	Plus  *phaseTruth `json:"plus,omitempty"`
}

// seconds is the canonical solution's measured time over the phase's
// inputs; 0 for a phase without truth.
func (pt *phaseTruth) seconds() float64 {
	s := 0.0
	if pt != nil {
		for _, v := range pt.Times {
			s += v
		}
	}
	return s
}

func (t *taskTruth) phase(p task.Phase) *phaseTruth {
	if p == task.Plus {
		return t.Plus
	}
	return t.Base
}

// Truth is the ground truth of a dataset in one environment, kept in a
// cache folder: key.json, and per task N.json plus N.base.D.bin and
// N.plus.D.bin holding the expected outputs as records (a 4-byte big-endian
// length and an encoded value each), D the file's SHA-256. Every file is
// written atomically, and none is replaced but a JSON file that does not
// serve (keep); a record file is read back only through its size and
// digest in N.json.
type Truth struct {
	Key TruthKey
	// Large, if set, launches supervisors in the large sandbox
	// (wire.LargeLimits): a phase whose canonical solution fails in the
	// ordinary one is computed again there.
	Large wire.Launcher

	dir  string
	mu   sync.Mutex
	task map[string]*taskTruth
}

// Limits for computing ground truth. The canonical solutions are trusted
// code, but they run in the sandbox all the same, and a broken one must not
// hold the run.
const (
	truthInputLimit = 60.0
	truthPhaseLimit = 1800.0
	truthRecordCap  = 64 << 20
	truthByteCap    = 1 << 30
	maxTruthMeta    = 16 << 20
)

// OpenTruth opens (creating it if needed) the cache folder for key under
// cacheDir.
func OpenTruth(cacheDir string, key TruthKey) (*Truth, error) {
	key.Format = truthFormat
	dir := filepath.Join(cacheDir, "truth-"+key.Digest().Hex())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create the ground-truth cache %s: %v", dir, err)
	}
	kb, _ := json.MarshalIndent(key, "", "  ")
	kp := filepath.Join(dir, "key.json")
	if old, err := safefile.ReadFile(kp, maxTruthMeta); err != nil || string(old) != string(kb)+"\n" {
		if err := atomicfile.WriteFile(kp, append(kb, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	return &Truth{Key: key, dir: dir, task: map[string]*taskTruth{}}, nil
}

// Dir returns the cache folder.
func (t *Truth) Dir() string { return t.dir }

func (t *Truth) metaPath(tk *task.Task) string {
	return filepath.Join(t.dir, strconv.Itoa(tk.Index)+".json")
}

// binName is the name of a phase's record file with content sum: named by
// its digest, a record file is never replaced, so that the record file a
// task's JSON file names stays whoever else computes the task.
func binName(tk *task.Task, p task.Phase, sum digest.SHA256) string {
	return strconv.Itoa(tk.Index) + "." + p.String() + "." + sum.Hex() + ".bin"
}

// load returns the cached truth of a task, or nil if there is none usable.
func (t *Truth) load(tk *task.Task, plus bool) *taskTruth {
	t.mu.Lock()
	defer t.mu.Unlock()
	tt, ok := t.task[tk.ID]
	if !ok {
		b, err := safefile.ReadFile(t.metaPath(tk), maxTruthMeta)
		if err != nil {
			return nil
		}
		tt = &taskTruth{}
		if strictjson.DecodeOpen(b, tt) != nil || tt.Task != tk.ID {
			return nil
		}
	}
	if tt.Error == "" {
		if !phaseUsable(tt.Base, len(tk.Base)) || plus && !phaseUsable(tt.Plus, len(tk.Plus)) {
			return nil
		}
	}
	t.task[tk.ID] = tt
	return tt
}

func phaseUsable(pt *phaseTruth, n int) bool {
	return pt != nil && pt.N == n && len(pt.Times) == n && len(pt.Encode) == n && pt.Size >= 0 && pt.MaxRecord >= 0
}

// Missing returns the tasks without usable cached ground truth.
func (t *Truth) Missing(tasks []*task.Task, plus bool) []*task.Task {
	var miss []*task.Task
	for _, tk := range tasks {
		if t.load(tk, plus) == nil {
			miss = append(miss, tk)
		}
	}
	return miss
}

// Get returns the truth of a task; Compute must have covered it.
func (t *Truth) Get(tk *task.Task) (*taskTruth, error) {
	if tt := t.load(tk, false); tt != nil {
		return tt, nil
	}
	return nil, fmt.Errorf("no ground truth for %s", tk.ID)
}

// TruthStats describes a ground-truth computation.
type TruthStats struct {
	Tasks      int   `json:"tasks"`
	Failed     int   `json:"failed"`
	PeakMemory int64 `json:"container_peak_memory_bytes"`
}

// Compute runs the canonical solution of every given task on all its base
// (and, if plus, plus) inputs in the sandbox, parallel supervisors at once,
// and caches outputs and times. A canonical solution that raises or returns
// something other than plain data is recorded as the task's error.
func (t *Truth) Compute(ctx context.Context, launch wire.Launcher, tasks []*task.Task, plus bool, parallel int, rl RunLimits) (TruthStats, error) {
	st := TruthStats{Tasks: len(tasks)}
	if len(tasks) == 0 {
		return st, nil
	}
	var (
		mu   sync.Mutex
		peak peakMemory
	)
	err := workpool.Run(ctx, parallel, tasks, workpool.Worker[*wire.Worker, *task.Task]{
		Start: func() *wire.Worker { return wire.NewWorker(launch) },
		Do: func(ctx context.Context, w *wire.Worker, tk *task.Task) error {
			tt, err := t.computeTask(ctx, w, tk, plus, rl)
			if err != nil {
				return err
			}
			if tt.Error != "" {
				mu.Lock()
				st.Failed++
				mu.Unlock()
			}
			return nil
		},
		Stop: func(w *wire.Worker) { peak.note(w.Release(ctx)) },
	})
	st.PeakMemory = peak.max()
	return st, err
}

func (t *Truth) computeTask(ctx context.Context, w *wire.Worker, tk *task.Task, plus bool, rl RunLimits) (*taskTruth, error) {
	tt := &taskTruth{Task: tk.ID}
	phases := []task.Phase{task.Base}
	if plus {
		phases = append(phases, task.Plus)
	}
	for _, p := range phases {
		pt, why, err := t.computePhase(ctx, w, tk, p, rl, nil)
		if err != nil {
			return nil, err
		}
		if lw := w.LargeWorker(t.Large); why != "" && lw != nil {
			// Perhaps it only needs more memory than the ordinary
			// sandbox has.
			if pt, why, err = t.computePhase(ctx, w, tk, p, rl, lw); err != nil {
				return nil, err
			}
		}
		if why != "" {
			tt = &taskTruth{Task: tk.ID, Error: fmt.Sprintf("%s inputs: %s", p, why)}
			break
		}
		if p == task.Plus {
			tt.Plus = pt
		} else {
			tt.Base = pt
		}
	}
	return t.keep(ctx, tk, tt, plus)
}

// keep caches tt, just computed, as tk's ground truth and returns the
// truth this Truth judges tk by from now on: tt, unless another process
// cached usable truth of tk since this one found none (shards of a sharded
// run that compute a task at once in one shared home), in which case that
// one is taken, so that every process under the key judges tk by the same
// truth, the first written (also where that one records a failed
// canonical solution and tt does not: the run then fails its self-check
// on the task, as every process under the key does); its record files are
// there, since none is ever replaced (binName). A JSON file there that
// does not serve (of the base inputs only where plus inputs are wanted)
// is replaced, under the task's lock file (N.json.lock), by the first
// process to take it: one that takes it after that one finds the
// replacement, read again from the file, and keeps it.
func (t *Truth) keep(ctx context.Context, tk *task.Task, tt *taskTruth, plus bool) (*taskTruth, error) {
	b, err := json.Marshal(tt)
	if err != nil {
		return nil, err
	}
	path := t.metaPath(tk)
	err = atomicfile.CreateFile(path, b, 0o644)
	if errors.Is(err, fs.ErrExist) {
		unlock, lerr := filelock.Lock(ctx, path+".lock", 0o644, 5*time.Millisecond, nil)
		if lerr != nil {
			return nil, fmt.Errorf("ground truth of %s: %w", tk.ID, lerr)
		}
		defer unlock()
		// What this process read before (base inputs only) may be
		// stale: read the file again.
		t.mu.Lock()
		delete(t.task, tk.ID)
		t.mu.Unlock()
		if first := t.load(tk, plus); first != nil {
			return first, nil
		}
		err = atomicfile.WriteFile(path, b, 0o644)
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.task[tk.ID] = tt
	t.mu.Unlock()
	return tt, nil
}

// errPhaseFailed stops the write of a record file of a phase whose
// canonical solution failed: no such file is left.
var errPhaseFailed = errors.New("the phase failed")

// computePhase runs one phase and writes its record file. why is set when
// the canonical solution failed.
// With lw set, the phase runs in lw, w's companion in the large sandbox.
func (t *Truth) computePhase(ctx context.Context, w *wire.Worker, tk *task.Task, p task.Phase, rl RunLimits, lw *wire.Worker) (pt *phaseTruth, why string, err error) {
	inputs := tk.Inputs(p)
	limits := make([]float64, len(inputs))
	for i := range limits {
		limits[i] = truthInputLimit
	}
	j := &wire.Job{
		ID: nextJobID(), EntryPoint: tk.EntryPoint, Program: []byte(tk.Program()),
		Inputs: inputs, Rebuild: tk.Rules.Inputs, Limits: limits, FirstExtra: truthInputLimit, PhaseLimit: truthPhaseLimit, WallFactor: 2,
		RecordCap: truthRecordCap, ByteCap: truthByteCap, Memory: rl.ChildMemory, FSize: rl.ChildFSize,
		// One input at a time: each record's measure is of its own call
		// (Times, Encode), with no window to leave open.
		Exact: true,
		Times: true,
	}
	run := w.Run
	if lw != nil {
		j.Memory = largeTruthChildMemory
		run = func(ctx context.Context, j *wire.Job, onRecord func(int, wire.Record) bool) (wire.JobEnd, error) {
			return w.RunLarge(ctx, lw, j, onRecord)
		}
	}
	pt = &phaseTruth{N: len(inputs), Times: make([]float64, 0, len(inputs)), Large: lw != nil}
	h := digest.NewHash()
	var end wire.JobEnd
	var runErr error
	failed := func() bool { return why != "" || end.Status != wire.EndDone || len(pt.Times) != pt.N }
	placed, werr := atomicfile.Create(t.dir, 0o644, func(out io.Writer) error {
		bw := bufio.NewWriterSize(io.MultiWriter(out, h), 1<<16)
		var lenbuf [4]byte
		end, runErr = run(ctx, j, func(k int, r wire.Record) bool {
			if tk.Rules.NotNone && (r.Kind == 'V' || r.Kind == 'U') {
				// EvalPlus records whether the output is not None, as a
				// bool, for these tasks (get_groundtruth's output_not_none).
				isNone := r.Kind == 'V' && judge.Value(r.Data).IsNone()
				r.Kind, r.Data = 'V', judge.Bool(!isNone)
			}
			switch r.Kind {
			case 'V':
				v, err := judge.ParseValue(r.Data, judge.DefaultBounds)
				if err != nil {
					why = fmt.Sprintf("input %d: malformed output: %v", k, err)
					return false
				}
				if v.IsOther() {
					why = fmt.Sprintf("input %d: output of type %s is not plain data", k, v.Kind())
					return false
				}
				binary.BigEndian.PutUint32(lenbuf[:], uint32(len(v)))
				bw.Write(lenbuf[:])
				bw.Write(v)
				pt.Size += int64(4 + len(v))
				pt.MaxRecord = max(pt.MaxRecord, len(v))
				pt.Times = append(pt.Times, r.Time)
				pt.Encode = append(pt.Encode, max(0, r.Gap-r.Time))
				return true
			case 'M':
				why = "the program failed: " + task.Clip(string(r.Data))
			case 'X':
				why = fmt.Sprintf("input %d raised %s", k, task.Clip(string(r.Data)))
			default:
				why = fmt.Sprintf("input %d: output is not plain data: %s", k, task.Clip(string(r.Data)))
			}
			return false
		})
		if runErr != nil {
			return runErr
		}
		return bw.Flush()
	}, func(f *os.File) error {
		got, n, err := digest.ReaderFrom(f)
		if err != nil {
			return err
		}
		h.Sum(pt.SHA256[:0])
		if n != pt.Size || got != pt.SHA256 {
			return errors.New("record file read back differs from what was written")
		}
		if failed() {
			// A phase that failed leaves no record file.
			return errPhaseFailed
		}
		return nil
	}, func() (string, error) { return binName(tk, p, pt.SHA256), nil })
	if placed != "" && errors.Is(werr, fs.ErrExist) {
		// A record file of this digest is there: another process
		// computed the same outputs, unless the file was changed since.
		if got, n, err := digest.File(placed); err != nil || got != pt.SHA256 || n != pt.Size {
			// Not one another writer left (a file is linked in place
			// whole): a corrupt or edited cache. It goes, so that the
			// next run computes it again.
			if rerr := os.Remove(placed); rerr != nil {
				return nil, "", exitcode.Errorf(exitcode.Integrity, "ground truth %s holds other bytes than its name says and cannot be removed (%v): remove the folder %s", placed, rerr, t.dir)
			}
			return nil, "", exitcode.Errorf(exitcode.Integrity, "ground truth %s held other bytes than its name says: removed it; run again to compute it afresh", placed)
		}
		werr = nil
	}
	if werr != nil && !errors.Is(werr, errPhaseFailed) {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", fmt.Errorf("ground truth of %s: %w", tk.ID, werr)
	}
	pt.PeakKB = end.MaxRSSKB
	if why != "" {
		return nil, why, nil
	}
	if failed() {
		if end.Status == wire.EndLost || end.Status == wire.EndSetup {
			return nil, "", fmt.Errorf("ground truth of %s %s inputs: the sandbox failed: %s", tk.ID, p, end.Detail)
		}
		return nil, fmt.Sprintf("%s after %d of %d inputs: %s", end.Status, end.Records, pt.N, end.Detail), nil
	}
	return pt, "", nil
}

// expected reads a phase's expected outputs in order and checks, at the
// end, that the file was exactly the one the ground truth recorded.
type expected struct {
	f    *os.File
	br   *bufio.Reader
	h    hash.Hash
	pt   *phaseTruth
	path string
	n    int
	size int64
	buf  []byte
}

func (t *Truth) open(tk *task.Task, p task.Phase) (*expected, error) {
	tt, err := t.Get(tk)
	if err != nil {
		return nil, err
	}
	pt := tt.phase(p)
	if pt == nil {
		return nil, fmt.Errorf("no %s ground truth for %s", p, tk.ID)
	}
	path := filepath.Join(t.dir, binName(tk, p, pt.SHA256))
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "ground truth %s: %v", path, err)
	}
	h := digest.NewHash()
	return &expected{f: f, br: bufio.NewReaderSize(io.TeeReader(f, h), 1<<16), h: h, pt: pt, path: path}, nil
}

// next returns the next expected output.
func (e *expected) next() (judge.Value, error) {
	if e.n >= e.pt.N {
		return nil, e.corrupt("more outputs read than recorded")
	}
	var lb [4]byte
	if _, err := io.ReadFull(e.br, lb[:]); err != nil {
		return nil, e.corrupt("truncated")
	}
	l := int(binary.BigEndian.Uint32(lb[:]))
	if l > e.pt.MaxRecord || int64(l)+4 > e.pt.Size-e.size {
		return nil, e.corrupt("record length out of range")
	}
	if cap(e.buf) < l {
		e.buf = make([]byte, l)
	}
	b := e.buf[:l]
	if _, err := io.ReadFull(e.br, b); err != nil {
		return nil, e.corrupt("truncated")
	}
	e.size += int64(4 + l)
	e.n++
	v, err := judge.ParseValue(b, judge.DefaultBounds)
	if err != nil {
		return nil, e.corrupt(err.Error())
	}
	return v, nil
}

// finish reads what is left and checks size and digest; any difference
// is an integrity error, and verdicts taken from this file are void.
func (e *expected) finish() error {
	defer e.f.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(e.br, e.pt.Size-e.size+1))
	if err != nil {
		return e.corrupt(err.Error())
	}
	e.size += n
	var got digest.SHA256
	e.h.Sum(got[:0])
	if e.size != e.pt.Size || got != e.pt.SHA256 {
		return e.corrupt("size or digest differs from the recorded one")
	}
	return nil
}

func (e *expected) close() { e.f.Close() }

func (e *expected) corrupt(why string) error {
	return exitcode.Errorf(exitcode.Integrity, "ground truth %s is corrupt (%s): remove the folder to recompute it", e.path, why)
}

var jobCounter struct {
	sync.Mutex
	n int
}

func nextJobID() int {
	jobCounter.Lock()
	defer jobCounter.Unlock()
	jobCounter.n++
	return jobCounter.n
}

// CachedTruth opens the ground-truth cache that a run of d in the
// evaluator image imageID would use on this machine (under st's state).
func CachedTruth(st *store.Store, d *task.Dataset, imageID string) (*Truth, error) {
	dir, err := st.StateDir("humaneval")
	if err != nil {
		return nil, err
	}
	return OpenTruth(dir, TruthKey{Dataset: d.ID, DatasetSHA256: d.SHA256, Image: imageID, Harness: wire.HarnessDigest, CPU: runs.CPUModel()})
}

// TaskDigest returns the SHA-256 of the JSON encoding of task's ground
// truth as this Truth holds it (Compute must have covered the task): the
// size and digest of its expected outputs and its canonical solution's
// per-input times, from which the time limits follow. Two runs whose
// digests for a task are equal judged that task's samples against the
// same outputs under the same limits, whichever of them computed it.
func (t *Truth) TaskDigest(tk *task.Task) (digest.SHA256, error) {
	tt, err := t.Get(tk)
	if err != nil {
		return digest.SHA256{}, err
	}
	b, err := json.Marshal(tt)
	if err != nil {
		return digest.SHA256{}, err
	}
	return digest.Of(b), nil
}

// CachedSeconds returns the canonical solution's measured seconds over
// task's base inputs and over its plus inputs, and whether the cache holds
// them (a task without plus inputs has plus 0).
func (t *Truth) CachedSeconds(tk *task.Task) (base, plus float64, ok bool) {
	tt := t.load(tk, false)
	if tt == nil || tt.Error != "" {
		return 0, 0, false
	}
	return tt.Base.seconds(), tt.Plus.seconds(), true
}

// TaskFiles returns the cache files of task, where it has usable ground
// truth: its JSON file and the record files it names that exist. Copied
// under the same key into another cache, they serve there as they do here.
func (t *Truth) TaskFiles(tk *task.Task) []string {
	tt := t.load(tk, false)
	if tt == nil {
		return nil
	}
	out := []string{t.metaPath(tk)}
	for _, p := range []task.Phase{task.Base, task.Plus} {
		if pt := tt.phase(p); pt != nil {
			path := filepath.Join(t.dir, binName(tk, p, pt.SHA256))
			if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
				out = append(out, path)
			}
		}
	}
	return out
}
