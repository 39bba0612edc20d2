package boardlog

import (
	"fmt"
	"path/filepath"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
)

// EntryOf makes the entry of run id of home, a run the board of dataset
// accepted under label on the signature of the key signerKeyID: it
// hashes the run's record, its envelope and, for an imported run, takes
// the bundle digest of its import record.
func EntryOf(home, id, dataset, label, signerKeyID string) (Entry, error) {
	e := Entry{RunID: id, Dataset: dataset, Label: label, SignerKeyID: signerKeyID}
	if !runs.ValidID(id) {
		return Entry{}, fmt.Errorf("%q is not a run id", id)
	}
	dir := layout.Home(home).Run(id)
	for _, f := range []struct {
		name string
		max  int64
		into *string
	}{{runs.RecordFile, runs.MaxRecordBytes, &e.RecordSHA256}, {runs.EnvelopeFile, 2 * runs.MaxRecordBytes, &e.EnvelopeSHA256}} {
		b, err := safefile.ReadFile(filepath.Join(dir, f.name), f.max)
		if err != nil {
			return Entry{}, fmt.Errorf("run %s: %v", id, err)
		}
		*f.into = digest.Of(b).Hex()
	}
	sum, _, err := runimport.BundleSHA256(home, id)
	if err != nil {
		return Entry{}, fmt.Errorf("run %s: %v", id, err)
	}
	e.BundleSHA256 = sum
	return e, e.Check()
}
