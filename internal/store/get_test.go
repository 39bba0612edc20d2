package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// TestGetChecksBeforeStoring checks that Get refuses, in the order its
// contract gives and before storing anything, an unknown id, --from with
// two ids and a negative floor or deadline; then that it imports a file
// and VerifyStored reports it.
func TestGetChecksBeforeStoring(t *testing.T) {
	ctx := context.Background()
	data := []byte("the pinned bytes\n")
	sum := digest.Of(data)
	e := catalog.Entry{ID: "test-asset", Kind: catalog.Dataset, Description: "test", License: "none",
		URLs: []string{"https://example.invalid/file"}, Filename: "file", Size: int64(len(data)), SHA256: &sum, Pin: catalog.Pinned}
	cat, err := catalog.New([]catalog.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	file := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ids  []string
		o    GetOptions
	}{
		{"unknown id before --from", []string{"nope", "test-asset"}, GetOptions{From: file}},
		{"--from with two ids", []string{"test-asset", "test-asset"}, GetOptions{From: file}},
		{"negative floor", []string{"test-asset"}, GetOptions{MinSpeed: -1}},
		{"negative deadline", []string{"test-asset"}, GetOptions{Deadline: -1}},
	} {
		if _, err := Get(ctx, home, cat, c.ids, c.o); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("%s: %v, want a usage error", c.name, err)
		}
	}
	if rep, err := VerifyStored(ctx, home, cat, []string{"nope"}); rep != nil || exitcode.Of(err) != exitcode.Usage {
		t.Errorf("VerifyStored of an unknown id: %+v, %v; want no report and a usage error", rep, err)
	}
	rep, err := VerifyStored(ctx, home, cat, nil)
	if err != nil || rep == nil || len(rep.Results) != 0 {
		t.Fatalf("VerifyStored of an empty store: %+v, %v; want an empty report", rep, err)
	}
	got, err := Get(ctx, home, cat, []string{"test-asset"}, GetOptions{From: file})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "test-asset" || *got[0].SHA256 != sum {
		t.Fatalf("Get returned %+v, want the entry of test-asset", got)
	}
	rep, err = VerifyStored(ctx, home, cat, nil)
	if err != nil || rep == nil || len(rep.Results) != 1 || !rep.Results[0].OK {
		t.Fatalf("VerifyStored after the import: %+v, %v; want test-asset intact", rep, err)
	}
}
