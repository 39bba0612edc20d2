package codebench

import (
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/workload"
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

// datasetChoice returns the dataset a --dataset value names; an unknown
// name is a usage error listing the names.
func datasetChoice(name string) (task.DatasetChoice, error) {
	c, ok := task.DatasetChoices[name]
	if !ok {
		return task.DatasetChoice{}, exitcode.Errorf(exitcode.Usage, "--dataset %q: want %s", name, task.DatasetNames)
	}
	return c, nil
}

// writeDatasetJSONL writes the decompressed dataset from the store into
// dir for EvalPlus's code (which hashes the JSON lines) and checks it is the
// dataset that was parsed.
func writeDatasetJSONL(ctx context.Context, st *store.Store, id string, d *task.Dataset, dir string) (string, error) {
	f, err := st.OpenVerified(ctx, id)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, d.Bench().DataFile)
	h := md5.New()
	err = atomicfile.Write(p, 0o444, func(w io.Writer) error {
		_, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(zr, 64<<20))
		return err
	}, nil)
	if err != nil {
		return "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.MD5 {
		return "", exitcode.Errorf(exitcode.Integrity, "dataset %s decompressed to md5 %s, not %s", id, got, d.MD5)
	}
	return p, nil
}

// openDataset opens the dataset (and its inputs' dataset) from the store,
// verified against the catalog pins.
func openDataset(ctx context.Context, st *store.Store, c task.DatasetChoice) (*task.Dataset, []runs.Asset, error) {
	load := func(id string, inputs *task.Dataset) (*task.Dataset, runs.Asset, error) {
		a, err := workload.OpenAsset(ctx, st, id)
		if err != nil {
			return nil, runs.Asset{}, err
		}
		defer a.Close()
		var d *task.Dataset
		if inputs != nil {
			d, err = task.LoadOriginal(a, id, a.Entry.Size, *a.Entry.SHA256, inputs)
		} else {
			d, err = task.LoadBenchmark(a, id, a.Entry.Size, *a.Entry.SHA256, c.Bench)
		}
		if err != nil {
			return nil, runs.Asset{}, workload.IntegrityError(err)
		}
		return d, a.Record(), nil
	}
	if c.InputsID == "" {
		d, a, err := load(c.ID, nil)
		if err != nil {
			return nil, nil, err
		}
		return d, []runs.Asset{a}, nil
	}
	in, a1, err := load(c.InputsID, nil)
	if err != nil {
		return nil, nil, err
	}
	d, a0, err := load(c.ID, in)
	if err != nil {
		return nil, nil, err
	}
	return d, []runs.Asset{a0, a1}, nil
}

// SelectTasks parses a task selection: comma-separated task numbers or
// ids, and ranges N-M (every task numbered N to M). Empty means every
// task.
func SelectTasks(d *task.Dataset, spec string) ([]*task.Task, error) {
	if strings.TrimSpace(spec) == "" {
		return d.Tasks, nil
	}
	b := d.Bench()
	first, last := d.Tasks[0].Index, d.Tasks[len(d.Tasks)-1].Index
	want := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		// num parses one end of part; an error names the whole part, so
		// that "-1" is not reported as "".
		num := func(s string, isRange bool) (int, error) {
			s = strings.TrimPrefix(strings.TrimSpace(s), b.TaskPrefix)
			n, err := strconv.Atoi(s)
			if err != nil || n < first || n > last || !isRange && d.Task(b.TaskID(n)) == nil {
				return 0, exitcode.Errorf(exitcode.Usage, "--tasks: %q is not a task number, id or range N-M of %s (tasks %d to %d)", strings.TrimSpace(part), d.ID, first, last)
			}
			return n, nil
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := num(lo, isRange)
		if err != nil {
			return nil, err
		}
		z := a
		if isRange {
			if z, err = num(hi, true); err != nil {
				return nil, err
			}
		}
		if z < a {
			return nil, exitcode.Errorf(exitcode.Usage, "--tasks: empty range %q", part)
		}
		for i := a; i <= z; i++ {
			want[i] = true
		}
	}
	var out []*task.Task
	for _, t := range d.Tasks {
		if want[t.Index] {
			out = append(out, t)
		}
	}
	return out, nil
}
