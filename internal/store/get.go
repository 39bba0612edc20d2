package store

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
)

// GetOptions say how Get stores assets: what `repro fetch` is given.
type GetOptions struct {
	// From, when set, is a local file to import as the one id given
	// (Import) instead of downloading.
	From string
	// Mirrors are tried before upstream (FetchOptions.Mirrors); none means
	// those of REPRO_MIRRORS, separated by spaces or commas.
	Mirrors []string
	// MinSpeed is the slowest transfer kept, in bytes per second
	// (FetchOptions.MinSpeed); 0 means no floor, and negative is refused.
	// Callers that want the default pass DefaultMinSpeed.
	MinSpeed int64
	// Deadline bounds the download of each id (FetchOptions.Deadline);
	// 0 means none, and negative is refused.
	Deadline time.Duration
	// Progress receives events; it may be called from several goroutines.
	Progress func(Event)
}

// Get opens the store of home with cat and stores each of ids in it,
// verified against its pin: with o.From by importing that file, else by
// downloading (Fetch). It returns the catalog entries of ids, in order,
// once every one is stored.
//
// Nothing is stored when the store cannot be opened (Open's error), when
// an id is not in cat (exit 2), when o.From is given with other than one
// id (exit 2), or when o.MinSpeed or o.Deadline is negative (exit 2), in
// that order of checks. Otherwise its errors are Import's or Fetch's.
func Get(ctx context.Context, home string, cat *catalog.Catalog, ids []string, o GetOptions) ([]catalog.Entry, error) {
	s, entries, err := openFor(home, cat, ids)
	if err != nil {
		return nil, err
	}
	if o.From != "" {
		if len(ids) != 1 {
			return nil, exitcode.Errorf(exitcode.Usage, "--from imports one file: give exactly one id")
		}
		err = s.Import(ctx, ids[0], o.From, o.Progress)
	} else {
		mirrors := o.Mirrors
		if env := os.Getenv("REPRO_MIRRORS"); env != "" && len(mirrors) == 0 {
			mirrors = strings.FieldsFunc(env, func(r rune) bool { return r == ',' || r == ' ' })
		}
		if o.MinSpeed < 0 || o.Deadline < 0 {
			return nil, exitcode.Errorf(exitcode.Usage, "--min-speed and --deadline must not be negative")
		}
		minSpeed := o.MinSpeed
		if minSpeed == 0 {
			minSpeed = -1 // no floor
		}
		err = s.Fetch(ctx, ids, FetchOptions{Mirrors: mirrors, Progress: o.Progress, MinSpeed: minSpeed, Deadline: o.Deadline})
	}
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// VerifyReport is what VerifyStored found: one result per asset checked.
type VerifyReport struct {
	Results []VerifyResult `json:"results"`
}

// VerifyStored opens the store of home with cat and re-hashes the stored
// blobs of ids, every stored id when ids is empty, as Verify does
// (quarantining a corrupt one). The report is nil, and nothing checked,
// when the store cannot be opened or an id is not in cat (exit 2);
// otherwise it holds the results Verify returned, with Verify's error.
func VerifyStored(ctx context.Context, home string, cat *catalog.Catalog, ids []string) (*VerifyReport, error) {
	s, _, err := openFor(home, cat, ids)
	if err != nil {
		return nil, err
	}
	results, err := s.Verify(ctx, ids)
	return &VerifyReport{Results: results}, err
}

// openFor opens the store of home with cat after Open, then checks that
// every id is in cat (Lookup's error, exit 2, otherwise) and returns
// their entries.
func openFor(home string, cat *catalog.Catalog, ids []string) (*Store, []catalog.Entry, error) {
	s, err := Open(home, cat)
	if err != nil {
		return nil, nil, err
	}
	entries := make([]catalog.Entry, 0, len(ids))
	for _, id := range ids {
		e, err := cat.Lookup(id)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	return s, entries, nil
}
