package boardlog

import (
	"fmt"

	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
)

// EntryOf makes the entry of run id of home, a run the board of dataset
// accepted under label on the signature of the key signerKeyID, from the
// digests of the record and envelope its verification read
// (runs.Verification's RecordSHA256 and EnvelopeSHA256), so that the log
// names the bytes that were verified and no record is read again; for an
// imported run it takes the bundle digest of its import record.
func EntryOf(home, id, dataset, label, signerKeyID, recordSHA256, envelopeSHA256 string) (Entry, error) {
	e := Entry{RunID: id, Dataset: dataset, Label: label, SignerKeyID: signerKeyID, RecordSHA256: recordSHA256, EnvelopeSHA256: envelopeSHA256}
	if !runs.ValidID(id) {
		return Entry{}, fmt.Errorf("%q is not a run id", id)
	}
	sum, _, err := runimport.BundleSHA256(home, id)
	if err != nil {
		return Entry{}, fmt.Errorf("run %s: %v", id, err)
	}
	e.BundleSHA256 = sum
	return e, e.Check()
}
