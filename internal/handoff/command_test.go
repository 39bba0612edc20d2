package handoff

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/trust"
)

// TestLookupAll: no name means every workload; names keep their order;
// an unknown name is a usage error.
func TestLookupAll(t *testing.T) {
	ws, err := LookupAll(nil)
	if err != nil || len(ws) != len(WorkloadNames()) {
		t.Fatalf("all: %v %v", ws, err)
	}
	ws, err = LookupAll([]string{"minigo", "dlrm"})
	if err != nil || len(ws) != 2 || ws[0].Name != "minigo" || ws[1].Name != "dlrm" {
		t.Fatalf("named: %+v %v", ws, err)
	}
	if _, err := LookupAll([]string{"dlrm", "nope"}); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("unknown: %v", err)
	}
}

// TestHandoffAtOrder: a bad configuration stops before the store is
// opened; the trust file is loaded after the state folder exists, and its
// error is returned with no plan.
func TestHandoffAtOrder(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	loaded := false
	r := Request{Workload: "minigo", Target: TargetSlurm, Container: "bogus", Out: filepath.Join(t.TempDir(), "out"),
		LoadTrust: func() (*trust.File, string, error) { loaded = true; return nil, "", nil }}
	if p, err := HandoffAt(context.Background(), home, r); p != nil || exitcode.Of(err) != exitcode.Usage || loaded {
		t.Fatalf("bad --container: %v %v, trust loaded %v", p, err, loaded)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("the store was opened: %v", err)
	}
	refused := exitcode.Errorf(exitcode.Precondition, "no trust")
	r.Container = ""
	r.LoadTrust = func() (*trust.File, string, error) {
		st, err := layout.Home(home).State("handoff")
		if fi, serr := os.Stat(st); err != nil || serr != nil || !fi.IsDir() {
			t.Errorf("no state folder before the trust file: %v %v", err, serr)
		}
		return nil, "", refused
	}
	if p, err := HandoffAt(context.Background(), home, r); p != nil || !errors.Is(err, refused) {
		t.Fatalf("trust refused: %v %v", p, err)
	}
	// Without a trust file the requirements are checked: this machine
	// meets none of them, so a plan comes back with its error.
	r.LoadTrust = func() (*trust.File, string, error) { return nil, "", nil }
	p, err := HandoffAt(context.Background(), home, r)
	if p == nil || err == nil || p.Ready() || len(p.Failed()) == 0 {
		t.Fatalf("bare machine: %v %v", p, err)
	}
}

// TestVerifyBundleAt: the trust file is loaded only once the bundle's
// files verify, and its error is returned.
func TestVerifyBundleAt(t *testing.T) {
	w := newMiniGoWorld(t)
	want := w.bundle(t, TargetSlurm)
	loads := 0
	load := func() (*trust.File, error) { loads++; return nil, nil }
	m, err := VerifyBundleAt(w.out, load)
	if err != nil || m.Digest != want.Digest || loads != 1 {
		t.Fatalf("verified: %v %v, %d loads", m, err, loads)
	}
	refused := errors.New("no trust")
	if _, err := VerifyBundleAt(w.out, func() (*trust.File, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("trust refused: %v", err)
	}
	files, _ := os.ReadDir(w.out)
	names := []string{}
	for _, f := range files {
		names = append(names, f.Name())
	}
	slices.Sort(names)
	tamperName := names[0]
	p := filepath.Join(w.out, tamperName)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, 'x'), 0o644)
	loads = 0
	if _, err := VerifyBundleAt(w.out, load); exitcode.Of(err) != exitcode.Integrity || loads != 0 {
		t.Fatalf("changed %s: %v, %d loads", tamperName, err, loads)
	}
}
