package reproduce

import (
	"context"
	"os"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/store"
)

// ReproduceBundle is Reproduce as `repro runs reproduce` runs it: with the
// store of home and the compiled-in catalog, and o.Trust loaded from
// trustPath ("" for home's trust file, runs.LoadTrust). o.Bundle must be a
// readable regular file and o.Parallel within 1 to 64, else a usage error
// (exit 2); these are checked first, then the store is opened and the trust
// file loaded (a missing one is exit 3), before Reproduce runs. o.Trust is
// ignored.
func ReproduceBundle(ctx context.Context, home, trustPath string, o Options) (*Report, error) {
	if fi, err := os.Stat(o.Bundle); err != nil || !fi.Mode().IsRegular() {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: not a readable regular file", o.Bundle)
	}
	if o.Parallel < 1 || o.Parallel > 64 {
		return nil, exitcode.Errorf(exitcode.Usage, "--parallel %d: want 1 to 64", o.Parallel)
	}
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		return nil, err
	}
	if o.Trust, err = runs.LoadTrust(st.Home(), trustPath); err != nil {
		return nil, err
	}
	return Reproduce(ctx, st, o)
}
