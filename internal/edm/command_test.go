package edm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
)

// TestListModels: every model of the table, in order, pinned exactly when
// the catalog pins everything its FID run needs.
func TestListModels(t *testing.T) {
	rows := ListModels(catalog.Default())
	if len(rows) != len(Models()) {
		t.Fatalf("%d rows for %d models", len(rows), len(Models()))
	}
	for i, r := range rows {
		if r.ID != Models()[i].ID || r.Pinned != (CheckFIDPins(catalog.Default(), r.ID) == nil) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	st := fixtureStore(t, defaultSet(fixtures(t)))
	pinned := 0
	for _, r := range ListModels(st.Catalog()) {
		if r.Pinned {
			pinned++
			if r.ID != fixtureModel {
				t.Errorf("%s marked pinned", r.ID)
			}
		}
	}
	if pinned != 1 {
		t.Errorf("%d models pinned, want %s alone", pinned, fixtureModel)
	}
}

// TestConvertPinnedChecksFirst: an id that is not convertible (exit 2) or
// not pinned in the compiled-in catalog (exit 3) stops before the store is
// opened.
func TestConvertPinnedChecksFirst(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, err := ConvertPinned(context.Background(), home, "nope"); exitcode.Of(err) != exitcode.Usage {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := ConvertPinned(context.Background(), home, Models()[0].ID); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("unpinned model: %v", err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the store was opened: %v", err)
	}
}

// TestFIDAtChecksFirst: the seeds are parsed before the model is looked
// up, and both before the store is opened.
func TestFIDAtChecksFirst(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	for _, c := range []struct {
		model, seeds string
		want         exitcode.Code
	}{
		{"nope", "bad", exitcode.Usage},
		{Models()[0].ID, "5-1", exitcode.Usage},
		{"nope", "0-9", exitcode.Usage},
		{Models()[0].ID, "0-9", exitcode.Precondition},
	} {
		res, dir, err := FIDAt(context.Background(), home, FIDRequest{Options: FIDOptions{Model: c.model, RunDir: t.TempDir()}, Seeds: c.seeds})
		if res != nil || dir != "" || exitcode.Of(err) != c.want {
			t.Errorf("%s --seeds %s: %v %q %v, want exit %d", c.model, c.seeds, res, dir, err, c.want)
		}
	}
	if _, _, err := FIDAt(context.Background(), home, FIDRequest{Options: FIDOptions{Model: "nope"}, Seeds: "bad"}); err == nil || !strings.Contains(err.Error(), "seed") {
		t.Errorf("bad seeds and model: %v, want the seeds named first", err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the store was opened: %v", err)
	}
}
