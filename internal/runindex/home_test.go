package runindex

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
)

// TestListHomeParsesFirst: each text value that does not parse is a usage
// error that names its flag, in the order limit, digest, since, until,
// sampling, and nothing is opened before.
func TestListHomeParsesFirst(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		req  ListRequest
		want string
	}{
		{ListRequest{Filter: Filter{Limit: -1}, Digest: "zz"}, "--limit -1"},
		{ListRequest{Digest: "zz", Since: "x"}, "--digest"},
		{ListRequest{Since: "x", Until: "y"}, "--since"},
		{ListRequest{Until: "2026-13-01", Sampling: "bad"}, "--until"},
		{ListRequest{Sampling: "bad"}, "sampling"},
	} {
		_, err := ListHome(context.Background(), home, c.req, func(string) {})
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error naming %s", c.req, err, c.want)
		}
	}
	if _, err := os.Stat(layout.Home(home).Index()); !os.IsNotExist(err) {
		t.Errorf("the index was opened: %v", err)
	}
}

// TestListHome: the parsed values filter as Filter does, and a home whose
// index cannot be opened is listed from its folders, with a warning.
func TestListHome(t *testing.T) {
	w := newWorld(t)
	var warnings []string
	warn := func(s string) { warnings = append(warnings, s) }
	es, err := ListHome(context.Background(), w.home, ListRequest{Filter: Filter{Kind: "humaneval"}, Digest: w.samples[:8], Until: "2026-03-02"}, warn)
	if err != nil || !slices.Equal(ids(es), []string{w.he2}) {
		t.Fatalf("listed %v, %v", ids(es), err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	// The index folder is a file: no index can be opened there.
	w = newWorld(t)
	os.WriteFile(layout.Home(w.home).Index(), []byte("x"), 0o644)
	es, err = ListHome(context.Background(), w.home, ListRequest{Filter: Filter{Kind: "humaneval", Status: "ok"}}, warn)
	if err != nil || !slices.Equal(ids(es), []string{w.he2, w.he1}) {
		t.Fatalf("without an index: listed %v, %v", ids(es), err)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[len(warnings)-1], "listing from the run folders without it") {
		t.Errorf("warnings: %q", warnings)
	}
}

// TestReindex: the index is built again from the folders alone.
func TestReindex(t *testing.T) {
	w := newWorld(t)
	n, err := Reindex(context.Background(), w.home, nil)
	if err != nil || n != 6 {
		t.Fatalf("indexed %d, %v", n, err)
	}
	if fi, err := os.Stat(layout.Home(w.home).RunIndex()); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("no database: %v", err)
	}
}
