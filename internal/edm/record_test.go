package edm

import (
	"context"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/store"
)

// TestRecordedFIDRecordsAFailure: a fid run that stops on a precondition
// still leaves a run folder with a signed record of the failure.
func TestRecordedFIDRecordsAFailure(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(home, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	res, dir, err := RecordedFID(context.Background(), st, FIDOptions{Model: "edm-cifar10-32x32-cond-vp"}, "test")
	if res != nil || exitcode.Of(err) != exitcode.Precondition || dir == "" {
		t.Fatalf("result %v, dir %q, err %v; want no result, a run folder and exit 3", res, dir, err)
	}
	rec := runstest.Verified(t, dir)
	extra, _ := rec.Extra.(map[string]any)
	if rec.Kind != "edm-fid" || rec.ExitCode != int(exitcode.Precondition) || extra["model"] != "edm-cifar10-32x32-cond-vp" || extra["error"] == "" {
		t.Errorf("record: kind %q, exit %d, extra %v", rec.Kind, rec.ExitCode, rec.Extra)
	}
}
