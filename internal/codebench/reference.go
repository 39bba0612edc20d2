package codebench

import (
	"context"
	"strings"
	"sync"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/store"
)

// Reference is the reference profile of a dataset's leaderboard: what a
// scoring run must have been to rank on it. A run ranks only if it scored
// exactly Tasks of the dataset at its catalog pins (Assets, DatasetMD5)
// with Engine, in one of Images with Harness, under Limits, with a passed
// self-check and the plus tests (internal/report checks it against a
// run's record and results).
type Reference struct {
	// Dataset is the dataset's catalog id ("humanevalplus-v0.1.10").
	Dataset string
	// Assets are the catalog assets of the dataset, with their pinned
	// SHA-256 (for "humaneval", also the dataset its inputs come from).
	Assets []runs.Asset
	// DatasetMD5 is the decompressed dataset's MD5 (EvalPlus's dataset
	// "hash", which a results file carries).
	DatasetMD5 string
	// Tasks are the dataset's task ids, in order.
	Tasks []string
	// Engine is the scoring engine (EngineRepro).
	Engine string
	// Images are the evaluator image IDs the maintainer admits: the image
	// pinned in the board's REPRO_HOME.
	Images []string
	// Harness is the harness digest of this build of repro (hex, as
	// records carry it).
	Harness string
	// Limits are the default run limits.
	Limits RunLimits
	// Missing says why the profile is incomplete (the dataset is not in
	// the store, no image is pinned); while it is not empty no run ranks.
	Missing []string
}

// datasetFacts are what a dataset's pinned bytes give: read once per
// process, since pinned bytes do not change.
type datasetFacts struct {
	assets []runs.Asset
	md5    string
	tasks  []string
}

var (
	factsMu sync.Mutex
	facts   = map[string]*datasetFacts{}
)

// LoadReference makes the reference profile of the board of dataset (a
// dataset id as records name it, in any case) from home: the dataset's
// catalog pins and tasks (read from home's store, verified against the
// pins) and the evaluator image home pins. What cannot be read is named in
// Missing, with the command that provides it. It writes nothing under home.
func LoadReference(home, dataset string) *Reference {
	ref := &Reference{Dataset: dataset, Engine: EngineRepro, Harness: wire.HarnessDigest.Hex(), Limits: DefaultRunLimits()}
	var choice *task.DatasetChoice
	for _, c := range task.DatasetChoices {
		if strings.EqualFold(c.ID, dataset) {
			c := c
			choice = &c
		}
	}
	if choice == nil {
		ref.Missing = append(ref.Missing, "dataset "+dataset+" is not one repro scores ("+task.DatasetNames+")")
	} else {
		ref.Dataset = choice.ID
		f, err := loadFacts(home, *choice)
		if err != nil {
			ref.Missing = append(ref.Missing, "the dataset cannot be read from this REPRO_HOME's store ("+err.Error()+"): run 'repro fetch "+choice.ID+"'")
		} else {
			ref.Assets, ref.DatasetMD5, ref.Tasks = f.assets, f.md5, f.tasks
		}
	}
	if pin, err := sandbox.ReadPin(home); err != nil {
		ref.Missing = append(ref.Missing, err.Error())
	} else {
		ref.Images = []string{pin.ID}
	}
	return ref
}

func loadFacts(home string, c task.DatasetChoice) (*datasetFacts, error) {
	factsMu.Lock()
	defer factsMu.Unlock()
	cat := catalog.Default()
	key := c.ID + "\x00" + c.InputsID
	for _, id := range []string{c.ID, c.InputsID} {
		if id == "" {
			continue
		}
		e, err := cat.Lookup(id)
		if err != nil {
			return nil, err
		}
		if e.SHA256 != nil {
			key += "\x00" + e.SHA256.Hex()
		}
	}
	if f, ok := facts[key]; ok {
		return f, nil
	}
	// A board's reference only reads: repro serve writes nothing under
	// REPRO_HOME.
	st, err := store.OpenExisting(home, cat)
	if err != nil {
		return nil, err
	}
	d, assets, err := openDataset(context.Background(), st, c)
	if err != nil {
		return nil, err
	}
	f := &datasetFacts{assets: assets, md5: d.MD5}
	for _, t := range d.Tasks {
		f.tasks = append(f.tasks, t.ID)
	}
	facts[key] = f
	return f, nil
}
