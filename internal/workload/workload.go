// Package workload is the one path every workload takes from its inputs to
// a signed run record:
//
//	assets ─ OpenAsset (pinned, verified, recorded)
//	   │
//	Start ── run folder REPRO_HOME/runs/<kind>-<time>-<random> + record
//	   │
//	body ─── the workload runs and writes its outputs into Run.Dir,
//	   │     filling Record (image, limits, self-check, summary, ...)
//	   │
//	End ──── the record gets the exit code of the outcome and the digest
//	         of every file in the folder, and is signed, whatever the outcome;
//	         then the run index (REPRO_HOME/index/runs.db) notes the run
//
// Do strings the steps together, so a workload is a body function; the
// humaneval, edm fid and handoff ingest commands all take this path.
package workload

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
)

// Run is a workload run in progress: its folder and the record that End
// signs.
type Run struct {
	*runs.Run
	Record *runs.Record
	home   string
}

// Start creates the run folder of a run of kind under home and its record
// (version is repro's version, for the record).
func Start(home, kind, version string) (*Run, error) {
	r, err := runs.Create(home, kind)
	if err != nil {
		return nil, err
	}
	return &Run{Run: r, Record: r.NewRecord(version), home: home}, nil
}

// Finish signs the record with exit code code and returns the signing
// error. A signed run is then added to the run index; the index is a cache
// of the run folders, so a failure to update it is not the run's failure
// and is left for the next `repro runs list` to mend.
func (r *Run) Finish(code exitcode.Code) error {
	if err := r.Run.Finish(r.Record, int(code)); err != nil {
		return err
	}
	_ = runindex.NoteRun(r.home, r.ID)
	return nil
}

// End signs the record with the exit code of err (the run's outcome) and
// returns err, or the signing error when err is nil.
func (r *Run) End(err error) error {
	if ferr := r.Finish(exitcode.Of(err)); ferr != nil && err == nil {
		return ferr
	}
	return err
}

// Do starts a run of kind under home, calls body with it and ends it with
// body's error: the record is signed whatever body returns. If the run
// folder cannot be created, body does not run.
func Do(home, kind, version string, body func(*Run) error) error {
	r, err := Start(home, kind, version)
	if err != nil {
		return err
	}
	return r.End(body(r))
}

// AddAsset records a catalog asset the run used.
func (r *Run) AddAsset(a runs.Asset) { r.Record.Assets = append(r.Record.Assets, a) }

// WriteJSON writes v, indented, to the file name in the run folder,
// atomically and with mode perm.
func (r *Run) WriteJSON(name string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.Dir, name), append(b, '\n'), perm)
}

// Asset is a pinned catalog asset opened from the store.
type Asset struct {
	*os.File
	Entry catalog.Entry
}

// Record is the asset as the run record lists it.
func (a Asset) Record() runs.Asset {
	return runs.Asset{ID: a.Entry.ID, SHA256: a.Entry.SHA256.Hex(), Size: a.Entry.Size}
}

// OpenAsset opens the catalog asset id from the store after checking that
// the catalog pins it (exit 3 and the reviewer's instructions otherwise)
// and that the stored bytes match the pin. The caller closes it.
func OpenAsset(ctx context.Context, st *store.Store, id string) (Asset, error) {
	e, err := st.Catalog().Lookup(id)
	if err != nil {
		return Asset{}, err
	}
	if err := e.RequirePinned(); err != nil {
		return Asset{}, err
	}
	f, err := st.OpenVerified(ctx, id)
	if err != nil {
		return Asset{}, err
	}
	return Asset{File: f, Entry: e}, nil
}

// IntegrityError gives a digest mismatch found while a workload parses an
// asset the integrity exit code, and leaves any other error as it is.
func IntegrityError(err error) error {
	var mm *digest.MismatchError
	if errors.As(err, &mm) {
		return exitcode.New(exitcode.Integrity, err)
	}
	return err
}
