package handoff

import (
	"context"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/trust"
)

// Request is what `repro handoff minigo|dlrm` is given.
type Request struct {
	// Workload is a name of WorkloadNames.
	Workload string
	// Target is TargetSlurm or TargetKubernetes.
	Target string
	// ConfigPath and Container are the --config and --container flags
	// (ConfigFromFlags); "" for none.
	ConfigPath, Container string
	// Out is the bundle folder; Plan writes it even when a requirement
	// does not hold, marked not ready.
	Out  string
	Plan bool
	// Version is repro's version, recorded.
	Version string
	// Progress, when set, is told how hashing large inputs advances.
	Progress Progress
	// LoadTrust loads the trust file whose image policy the runtime image
	// must meet and returns it and its path; a nil file applies none.
	LoadTrust func() (*trust.File, string, error)
}

// HandoffAt is Handoff as `repro handoff minigo|dlrm` runs it on the store
// of home with the compiled-in catalog: it reads the configuration
// (ConfigFromFlags; a bad one is a usage error), opens the store, creates
// its handoff state folder (else a precondition error, exit 3) and loads
// the trust file, in that order, before the requirements are checked. It
// returns what Handoff returns: a nil plan when nothing was checked.
func HandoffAt(ctx context.Context, home string, r Request) (*Plan, error) {
	cfg, cfgDigest, err := ConfigFromFlags(r.ConfigPath, r.Container)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		return nil, err
	}
	state, err := st.StateDir("handoff")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create the handoff state folder under %q: %v", st.Home(), err)
	}
	tf, tpath, err := r.LoadTrust()
	if err != nil {
		return nil, err
	}
	return Handoff(ctx, Options{
		Workload:     r.Workload,
		Target:       r.Target,
		Config:       cfg,
		ConfigSHA256: cfgDigest,
		Catalog:      st.Catalog(),
		StateDir:     state,
		Version:      r.Version,
		Progress:     r.Progress,
		Trust:        &ImageTrust{File: tf, Path: tpath},
	}, r.Out, r.Plan)
}

// LookupAll returns the workloads named, in order, or every workload
// (WorkloadNames) when none is named. An unknown name is a usage error
// (exit 2).
func LookupAll(names []string) ([]*Workload, error) {
	if len(names) == 0 {
		names = WorkloadNames()
	}
	var ws []*Workload
	for _, n := range names {
		w, err := Lookup(n)
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// VerifyBundleAt checks the bundle in dir as `repro handoff verify` does:
// its manifest and files (VerifyBundle), then, with the trust file
// loadTrust returns (loaded only once the bundle's files verify), the
// image evidence it keeps (VerifyImageEvidence). It returns the manifest
// when both hold.
func VerifyBundleAt(dir string, loadTrust func() (*trust.File, error)) (*Manifest, error) {
	m, err := VerifyBundle(dir)
	if err != nil {
		return nil, err
	}
	tf, err := loadTrust()
	if err != nil {
		return nil, err
	}
	if _, err := VerifyImageEvidence(dir, m, tf); err != nil {
		return nil, err
	}
	return m, nil
}
