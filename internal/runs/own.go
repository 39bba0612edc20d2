package runs

import (
	"errors"
	"fmt"
	"os"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/trust"
)

// OwnTrust is a trust file that holds only home's own run key (LocalKey,
// made on first use), for run records: a run verifies against it only if
// this REPRO_HOME signed it, whatever other keys home's trust file lists.
func OwnTrust(home string) (*trust.File, error) {
	k, err := LocalKey(home)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot load the run key of %s: %v", home, err)
	}
	return &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey(LocalKeyName, k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}, nil
}

// Imported reports whether run id of home came from an evidence bundle
// (`repro runs import`): whether an import record exists for it. A path
// that cannot be checked counts as imported.
func Imported(home, id string) bool {
	_, err := os.Lstat(layout.Home(home).ImportRecord(id))
	return !errors.Is(err, os.ErrNotExist)
}

// VerifyOwn checks the run as VerifyWith does against own (OwnTrust of
// the run's home), and refuses a run that was imported: it verifies only
// a run that this REPRO_HOME scored and signed with its own run key. What
// a run's own files and record say about its origin (its id, dates or
// host) plays no part.
func (r *Run) VerifyOwn(own *trust.File) (*Verification, error) {
	if Imported(r.home, r.ID) {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s was imported, not scored here", r.ID)
	}
	v, err := r.VerifyWith(own)
	if err != nil {
		return v, err
	}
	if v.Key == nil || v.Legacy {
		return v, exitcode.Errorf(exitcode.Integrity, "run %s is not signed with this REPRO_HOME's run key as an in-toto statement", r.ID)
	}
	if want := own.For(trust.RunRecords); len(want) != 1 || want[0].ID != v.Key.ID {
		return v, fmt.Errorf("run %s: signed by %s, not by the key given", r.ID, v.Key.ID)
	}
	return v, nil
}
