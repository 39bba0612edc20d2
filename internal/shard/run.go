package shard

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/store"
)

// Record is a shard's signed record, shards/shard-K.json with its
// envelope shards/shard-K.dsse.json: which run scored shard K of which
// plan, with which binary and image, and how it ended.
type Record struct {
	Format   int           `json:"format"`
	Plan     digest.SHA256 `json:"plan_sha256"`
	Index    int           `json:"index"`
	RunID    string        `json:"run_id,omitempty"`
	OK       bool          `json:"ok"`
	ExitCode int           `json:"exit_code"`
	Error    string        `json:"error,omitempty"`
	Binary   digest.SHA256 `json:"binary_sha256"`
	ImageID  string        `json:"image_id"`
	Host     string        `json:"host"`
	SlurmJob string        `json:"slurm_job,omitempty"`
	Restarts string        `json:"slurm_restart_count,omitempty"`
	Finished time.Time     `json:"finished_at"`
}

func recordPaths(dir string, k int) (string, string) {
	base := filepath.Join(dir, ShardsDir, fmt.Sprintf("shard-%03d", k))
	return base + ".json", base + ".dsse.json"
}

// RunOptions are the choices of one array task.
type RunOptions struct {
	Index    int
	Parallel int
	Version  string
	Warn     func(string)
	Progress func(stage string, done, total int)
	// Binary is the running binary, checked against the plan; empty for
	// this process's own.
	Binary string
	// FullSelfCheck self-checks every task of the shard on all its
	// inputs. Without it a task of which the shard holds a later part
	// (not the task's first sample) is self-checked on its base inputs
	// only, since the shard holding the first sample self-checks it in
	// full; the merge accepts that only where both judged the task by the
	// same ground truth (the run reports the digest of each split task's,
	// codebench.Options.TruthDigests) under the same key.
	FullSelfCheck bool
}

// SaveImage writes the evaluator image id as a tarball at path.
func saveImage(ctx context.Context, e *sandbox.Engine, id, path string) (FilePin, error) {
	var pin FilePin
	err := atomicfile.Write(path, 0o444, func(w io.Writer) error {
		dw := digest.NewWriter(w)
		if err := e.SaveImage(ctx, id, dw); err != nil {
			return err
		}
		pin.SHA256, pin.Size = dw.Sum()
		return nil
	}, nil)
	return pin, err
}

// RunShard is one array task: it checks the bundle at dir (plan
// signature, this binary, the shard's samples, the image tarball), loads
// the image and checks its ID, scores the shard through the normal
// sandboxed path (self-check included) in the bundle's home, and writes
// the shard's signed record, also when the scoring failed. A record left
// by an earlier attempt is removed first; a restarted task (a requeue)
// resumes the latest unfinished run of its shard in the bundle's home
// from its verdict journal (codebench.Options.ResumeLatest), so that only
// what the earlier attempt had not decided is scored again.
func RunShard(ctx context.Context, dir string, o RunOptions) (*codebench.RunReport, error) {
	p, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	planDigest, _, err := digest.File(filepath.Join(dir, PlanFile))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", dir, err)
	}
	if o.Index < 0 || o.Index >= len(p.Shards) {
		return nil, exitcode.Errorf(exitcode.Usage, "--index %d: the plan has shards 0 to %d", o.Index, len(p.Shards)-1)
	}
	jsonPath, sigPath := recordPaths(dir, o.Index)
	for _, f := range []string{sigPath, jsonPath} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("cannot remove the earlier record %q of shard %d: %v", f, o.Index, err)
		}
	}
	host, _ := os.Hostname()
	rec := &Record{Format: Format, Plan: planDigest, Index: o.Index, ImageID: p.Image.ID, Host: host,
		SlurmJob: os.Getenv("SLURM_ARRAY_JOB_ID") + "_" + os.Getenv("SLURM_ARRAY_TASK_ID"), Restarts: os.Getenv("SLURM_RESTART_COUNT")}
	if rec.SlurmJob == "_" {
		rec.SlurmJob = ""
	}
	rep, err := runShard(ctx, dir, p, o, rec)
	if rep != nil {
		rec.RunID = rep.RunID
	}
	rec.OK = err == nil
	rec.ExitCode = int(exitcode.Of(err))
	if err != nil {
		rec.Error = err.Error()
	}
	rec.Finished = time.Now().UTC()
	if werr := writeSigned(jsonPath, sigPath, filepath.Join(dir, HomeDir), shardPayload, rec); werr != nil && err == nil {
		err = werr
	}
	return rep, err
}

func runShard(ctx context.Context, dir string, p *Plan, o RunOptions, rec *Record) (*codebench.RunReport, error) {
	s := p.Shards[o.Index]
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "cannot find repro's own binary: %v", err)
		}
	}
	got, _, err := digest.File(bin)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot read repro's own binary %q: %v", bin, err)
	}
	rec.Binary = got
	if got != p.Binary.SHA256 {
		return nil, exitcode.Errorf(exitcode.Integrity, "this repro binary %q has sha256 %s, the plan's %s: run the bundle's %s", bin, got.Hex(), p.Binary.SHA256.Hex(), BinaryFile)
	}
	if err := checkPinned(dir, s.File, fmt.Sprintf("the samples of shard %d", o.Index)); err != nil {
		return nil, err
	}
	if err := checkPinned(dir, p.Image.Tarball, "the image tarball"); err != nil {
		return nil, err
	}
	e, err := sandbox.Connect(ctx)
	if err != nil {
		return nil, err
	}
	err = e.LoadImage(ctx, filepath.Join(dir, p.Image.Tarball.Path), sandbox.Image{ID: p.Image.ID, ManifestDigest: p.Image.ManifestDigest}, nil)
	e.Close()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dir, HomeDir), catalog.Default())
	if err != nil {
		return nil, err
	}
	parallel := o.Parallel
	if parallel == 0 {
		parallel = codebench.DefaultParallel()
	}
	var baseCheck []string
	if !o.FullSelfCheck {
		baseCheck = s.LaterParts()
	}
	rep, err := codebench.Score(ctx, st, codebench.Options{
		Samples: filepath.Join(dir, s.File.Path), Dataset: p.Dataset, Tasks: strings.Join(s.Tasks(), ","),
		BaseOnly: p.BaseOnly, Parallel: parallel, Limits: p.Limits, Engine: codebench.EngineRepro,
		Version: o.Version, Warn: o.Warn, Progress: o.Progress, ResumeLatest: true,
		SelfCheckBaseOnly: baseCheck, TruthDigests: p.SplitTasks(o.Index),
	})
	if err == nil && (rep.SelfCheck == nil || !rep.SelfCheck.OK()) {
		err = exitcode.Errorf(exitcode.Integrity, "shard %d: the self-check did not pass", o.Index)
	}
	return rep, err
}
