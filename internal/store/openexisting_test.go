package store

import (
	"os"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
)

// TestOpenExisting: a home without a store is a precondition error and
// stays empty; one Open made opens.
func TestOpenExisting(t *testing.T) {
	home := t.TempDir()
	if _, err := OpenExisting(home, catalog.Default()); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("no store: %v", err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("OpenExisting wrote %v", ents)
	}
	if _, err := Open(home, catalog.Default()); err != nil {
		t.Fatal(err)
	}
	if st, err := OpenExisting(home, catalog.Default()); err != nil || st.Home() != home {
		t.Errorf("after Open: %v", err)
	}
}
