package edm

import (
	"context"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/store"
)

// ListedModel is a model of the table and whether cat pins everything its
// FID run needs (CheckFIDPins).
type ListedModel struct {
	Model
	Pinned bool `json:"pinned"`
}

// ListModels returns the model table (Models), each model marked with
// whether cat pins everything its FID run needs.
func ListModels(cat *catalog.Catalog) []ListedModel {
	var out []ListedModel
	for _, m := range Models() {
		out = append(out, ListedModel{m, CheckFIDPins(cat, m.ID) == nil})
	}
	return out
}

// ConvertPinned is Convert as `repro edm convert` runs it: id is checked
// against the compiled-in catalog first (CheckConvertPin: exit 2 for an id
// that is not convertible, 3 for an unpinned one), and only then is the
// store of home opened and the asset converted.
func ConvertPinned(ctx context.Context, home, id string) (*ConvertResult, error) {
	cat := catalog.Default()
	if err := CheckConvertPin(cat, id); err != nil {
		return nil, err
	}
	st, err := store.Open(home, cat)
	if err != nil {
		return nil, err
	}
	return Convert(ctx, st, id)
}

// FIDRequest is what `repro edm fid` is given: the run's options, with
// the seeds still as text.
type FIDRequest struct {
	// Options are the run's options; Options.RunDir is the --out folder
	// ("" for a recorded run), and Options.Seeds is set from Seeds.
	Options FIDOptions
	// Seeds is a seed list in ParseSeeds's notation.
	Seeds string
	// Version is repro's version, for the run record.
	Version string
}

// FIDAt runs one FID figure as `repro edm fid` does, on the store of home
// with the compiled-in catalog: the seeds must parse (else exit 2) and the
// model's assets be pinned (CheckFIDPins) before the store is opened.
// Without r.Options.RunDir the run is a workload with a signed record in a new run
// folder (RecordedFID); with it, features.npy and result.json go to that
// folder and nothing is recorded (RunFID). FIDAt returns the result and
// the folder that holds result.json.
func FIDAt(ctx context.Context, home string, r FIDRequest) (*FIDResult, string, error) {
	cat := catalog.Default()
	seeds, err := ParseSeeds(r.Seeds)
	if err != nil {
		return nil, "", exitcode.New(exitcode.Usage, err)
	}
	if err := CheckFIDPins(cat, r.Options.Model); err != nil {
		return nil, "", err
	}
	st, err := store.Open(home, cat)
	if err != nil {
		return nil, "", err
	}
	opts := r.Options
	opts.Seeds = seeds
	if opts.RunDir == "" {
		return RecordedFID(ctx, st, opts, r.Version)
	}
	res, err := RunFID(ctx, st, opts)
	return res, opts.RunDir, err
}
