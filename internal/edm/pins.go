package edm

import (
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
)

// CheckFIDPins fails unless model id is known (exitcode.Usage) and its
// checkpoint, detector, reference statistics and the EDM source tree are all
// pinned in cat (exitcode.Precondition, naming how a reviewer pins them).
// Commands call it before they touch the store.
func CheckFIDPins(cat *catalog.Catalog, id string) error {
	m, err := LookupModel(id)
	if err != nil {
		return err
	}
	_, err = requirePinned(cat, m)
	return err
}

// CheckConvertPin fails unless id is a convertible asset (a model's
// checkpoint, by model id, or a detector a model uses; else exitcode.Usage)
// pinned in cat (else exitcode.Precondition).
func CheckConvertPin(cat *catalog.Catalog, id string) error {
	if _, _, err := convertible(id); err != nil {
		return err
	}
	e, err := cat.Lookup(id)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "the catalog has no entry %s", id)
	}
	return e.RequirePinned()
}
