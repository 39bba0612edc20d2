package codebench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
)

// OpenDataset opens the dataset named name (a --dataset value) from the
// store, verified against the catalog pins, with the assets it read.
func OpenDataset(ctx context.Context, st *store.Store, name string) (*task.Dataset, []runs.Asset, error) {
	c, err := datasetChoice(name)
	if err != nil {
		return nil, nil, err
	}
	return openDataset(ctx, st, c)
}

// DefaultParallel is the number of sandbox containers this machine can
// hold at once: one per core, but no more than the available memory
// allows at the per-container memory limit (wire.SupervisorLimits), and at
// least one.
func DefaultParallel() int {
	return parallelFor(runtime.NumCPU(), memAvailable(), wire.SupervisorLimits().Memory)
}

// parallelFor is DefaultParallel's rule: min(cores, memory/limit), within
// 1 and 64; memory 0 means unknown.
func parallelFor(cores int, memory, limit int64) int {
	n := cores
	if memory > 0 && limit > 0 {
		n = min(n, int(memory/limit))
	}
	return max(1, min(n, 64))
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes; 0 when it
// cannot be read.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n > 0 {
				return n << 10
			}
		}
	}
	return 0
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

// CachedSeconds returns the canonical solution's measured seconds over
// all of task's base and plus inputs, and whether the cache holds them.
func (t *Truth) CachedSeconds(tk *task.Task) (float64, bool) {
	tt := t.load(tk, false)
	if tt == nil || tt.Error != "" {
		return 0, false
	}
	sum := 0.0
	for _, pt := range []*phaseTruth{tt.Base, tt.Plus} {
		if pt != nil {
			for _, s := range pt.Times {
				sum += s
			}
		}
	}
	return sum, true
}

// TaskFiles returns the cache files of task that exist: its metadata and
// expected outputs. Copied under the same key into another cache, they
// serve there as they do here.
func (t *Truth) TaskFiles(tk *task.Task) []string {
	var out []string
	for _, p := range []string{t.metaPath(tk), t.binPath(tk, task.Base), t.binPath(tk, task.Plus)} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}
