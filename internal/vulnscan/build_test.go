package vulnscan_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/buildinfo"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/vulnscan"
)

// TestScanBuild scans build information against testdata/osv-go: the
// standard library is matched at the toolchain's version, a module
// replaced by another version under the replacement, a module replaced by
// a folder (no version) under its own version, and a clean build has an
// empty, non-nil list of findings and no verdict.
func TestScanBuild(t *testing.T) {
	dir := filepath.Join("testdata", "osv-go")
	found := func(s *vulnscan.BuildScan) []string {
		var out []string
		for _, f := range s.Findings {
			out = append(out, f.ID+" "+f.Package+" "+f.Installed)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		name string
		in   buildinfo.Info
		want []string
	}{
		{"stdlib and a replaced module", buildinfo.Info{Go: "go1.21.2", Modules: []buildinfo.Module{
			{Path: "golang.org/x/net", Version: "v0.23.0", Replace: &buildinfo.Module{Path: "golang.org/x/net", Version: "v0.16.0"}},
			{Path: "golang.org/x/text", Version: "v0.3.0"},
		}}, []string{
			"GHSA-4v7x-pqxf-cx7m golang.org/x/net v0.16.0",
			"GO-2023-2102 golang.org/x/net v0.16.0", "GO-2023-2102 stdlib 1.21.2",
			"GO-2024-2687 golang.org/x/net v0.16.0", "GO-2024-2687 stdlib 1.21.2",
		}},
		{"a module replaced by a folder", buildinfo.Info{Go: "go1.26.8", Modules: []buildinfo.Module{
			{Path: "golang.org/x/net", Version: "v0.22.0", Replace: &buildinfo.Module{Path: "../net"}},
		}}, []string{
			"GHSA-4v7x-pqxf-cx7m golang.org/x/net v0.22.0", "GO-2024-2687 golang.org/x/net v0.22.0",
		}},
		{"clean", buildinfo.Info{Go: "go1.26.8", Modules: []buildinfo.Module{{Path: "golang.org/x/net", Version: "v0.61.0"}}}, nil},
	} {
		s, err := vulnscan.ScanBuild(c.in, dir)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := found(s); !slices.Equal(got, c.want) {
			t.Errorf("%s: findings %q, want %q", c.name, got, c.want)
		}
		if s.Dir != dir || s.Feed == nil || len(s.Feed.Records) != 3 {
			t.Errorf("%s: feed %q %+v", c.name, s.Dir, s.Feed)
		}
		v := s.Verdict()
		if c.want == nil {
			if s.Findings == nil || v != nil {
				t.Errorf("%s: findings %#v, verdict %v; want an empty list and no verdict", c.name, s.Findings, v)
			}
			continue
		}
		if exitcode.Of(v) != exitcode.Negative || !strings.Contains(v.Error(), "affect this repro binary") {
			t.Errorf("%s: verdict %v (exit %d), want exit 1", c.name, v, exitcode.Of(v))
		}
	}
	if _, err := vulnscan.ScanBuild(buildinfo.Info{Go: "go1.21.2"}, filepath.Join(dir, "nope")); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("a missing feed: %v (exit %d), want exit 3", err, exitcode.Of(err))
	}
}
