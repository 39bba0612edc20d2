package shard

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/store"
)

// WritePlanAt is WritePlan as `repro shard plan` runs it: on the store of
// home with the compiled-in catalog.
func WritePlanAt(ctx context.Context, home string, o PlanOptions) (*Plan, error) {
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		return nil, err
	}
	return WritePlan(ctx, st, o)
}

// bundleDir is the absolute path of the bundle a command line named; a
// path that cannot be made absolute is a usage error.
func bundleDir(bundle string) (string, error) {
	dir, err := filepath.Abs(bundle)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Usage, "bundle %q: %v", bundle, err)
	}
	return dir, nil
}

// RunShardAt is RunShard as `repro shard run BUNDLE` runs it: bundle is
// made absolute (else a usage error) and o.Parallel must be within 0 (what
// this node holds) and 64 (else a usage error) before the bundle is read.
func RunShardAt(ctx context.Context, bundle string, o RunOptions) (*codebench.RunReport, error) {
	dir, err := bundleDir(bundle)
	if err != nil {
		return nil, err
	}
	if o.Parallel < 0 || o.Parallel > 64 {
		return nil, exitcode.Errorf(exitcode.Usage, "--parallel %d: want 1 to 64 (0 for what this node holds)", o.Parallel)
	}
	return RunShard(ctx, dir, o)
}

// MergeAt is Merge as `repro shard merge BUNDLE` runs it: bundle is made
// absolute (else a usage error) and the store of home is opened (its
// folders made) before the shards are merged into a run of home.
func MergeAt(ctx context.Context, bundle, home, version string) (*MergeReport, error) {
	dir, err := bundleDir(bundle)
	if err != nil {
		return nil, err
	}
	return mergeDir(ctx, dir, home, version)
}

func mergeDir(ctx context.Context, dir, home, version string) (*MergeReport, error) {
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		return nil, err
	}
	return Merge(ctx, dir, st.Home(), version)
}

// SubmitRequest is what `repro shard submit` is given.
type SubmitRequest struct {
	// Bundle is the bundle folder as named.
	Bundle string
	// Wait waits for the job array to end, then merges it into a run of
	// Home, recorded with Version.
	Wait          bool
	Home, Version string
	// Status, if set, is told while waiting how many array tasks are
	// queued or running; Ended, if set, is told when the job array has
	// ended, before the merge.
	Status func(string)
	Ended  func(job string)
}

// Submitted is what SubmitBundle did.
type Submitted struct {
	// Dir is the bundle's absolute path, Job the job array's id.
	Dir, Job string
	// Merged is the merge's report, when SubmitRequest.Wait asked for it
	// and the merge got that far (see Merge).
	Merged *MergeReport
}

// SubmitBundle submits the job array of a bundle with sbatch, as `repro
// shard submit` does: the bundle path is made absolute (else a usage
// error) and its plan must verify (ReadPlan) before sbatch runs in it;
// no sbatch, or an sbatch that refuses or prints no job id, is a
// precondition error (exit 3). With r.Wait it then polls squeue every
// second until the job array has left the queue (no squeue is exit 3) and
// merges the bundle into a run of r.Home (MergeAt's store, Merge).
//
// SubmitBundle returns nil and the error when nothing was submitted or
// the wait failed; else what was submitted and the merge's error.
func SubmitBundle(ctx context.Context, r SubmitRequest) (*Submitted, error) {
	dir, err := bundleDir(r.Bundle)
	if err != nil {
		return nil, err
	}
	if _, err := ReadPlan(dir); err != nil {
		return nil, err
	}
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "sbatch not found: run this on a Slurm login node (or install slurm-wlm)")
	}
	c := exec.CommandContext(ctx, sbatch, "--parsable", SbatchFile)
	c.Dir = dir
	out, err := c.Output()
	job := strings.TrimSpace(strings.Split(string(out), ";")[0])
	if err != nil || job == "" {
		msg := fmt.Sprint(err)
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, exitcode.Errorf(exitcode.Precondition, "sbatch refused the job array of %q: %s", dir, msg)
	}
	s := &Submitted{Dir: dir, Job: job}
	if !r.Wait {
		return s, nil
	}
	if err := waitForJob(ctx, job, r.Status); err != nil {
		return nil, err
	}
	if r.Ended != nil {
		r.Ended(job)
	}
	s.Merged, err = mergeDir(ctx, dir, r.Home, r.Version)
	return s, err
}

// waitForJob polls squeue every second until job (all its array tasks)
// has left the queue. sbatch --wait would do, but it polls ever more
// rarely, up to half a minute apart.
func waitForJob(ctx context.Context, job string, status func(string)) error {
	squeue, err := exec.LookPath("squeue")
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "squeue not found: run this on a Slurm login node (or install slurm-wlm)")
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		out, err := exec.CommandContext(ctx, squeue, "-h", "-j", job, "-o", "%T").CombinedOutput()
		states := strings.Fields(string(out))
		switch {
		case err == nil && len(states) == 0, err != nil && strings.Contains(string(out), "Invalid job id"):
			return nil
		case err != nil:
			return fmt.Errorf("squeue -j %s: %v: %s", job, err, strings.TrimSpace(string(out)))
		}
		if status != nil {
			status(fmt.Sprintf("job array %s: %d array tasks queued or running", job, len(states)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
