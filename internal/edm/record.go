package edm

import (
	"context"

	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/workload"
)

// RecordedFID runs RunFID as a workload: in a new run folder
// REPRO_HOME/runs/edm-fid-... (opts.RunDir is ignored), left with a signed
// run record whatever the outcome. It returns the result and the folder.
func RecordedFID(ctx context.Context, st *store.Store, opts FIDOptions, version string) (*FIDResult, string, error) {
	var res *FIDResult
	dir := ""
	err := workload.Do(st.Home(), "edm-fid", version, func(run *workload.Run) error {
		dir = run.Dir
		opts.RunDir = run.Dir
		var err error
		res, err = RunFID(ctx, st, opts)
		if res == nil {
			run.Record.Extra = map[string]string{"model": opts.Model, "error": err.Error()}
			return err
		}
		for _, a := range res.Assets {
			run.AddAsset(runs.Asset{ID: a.ID, SHA256: a.SHA256.Hex(), Size: a.Size})
		}
		run.Record.Summary = res
		return err
	})
	return res, dir, err
}
