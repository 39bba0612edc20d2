package vulnscan

import (
	"strings"

	"github.com/reprolab/repro/internal/buildinfo"
	"github.com/reprolab/repro/internal/exitcode"
)

// BuildScan is what ScanBuild found for one Go binary.
type BuildScan struct {
	// Dir is the feed's folder, Feed the feed read from it.
	Dir  string
	Feed *Feed
	// Findings are the records that affect the binary; never nil.
	Findings []Finding
}

// ScanBuild matches the Go modules linked into a binary (in; a replaced
// module under the path and version that replaced it) and its standard
// library ("stdlib" at the toolchain version in.Go names) against the Go
// ecosystem's records of the OSV feed in dir, with the matcher and
// semantic version order of Match. A feed LoadFeed refuses is its error;
// a record Match cannot order is exit 3 naming dir.
func ScanBuild(in buildinfo.Info, dir string) (*BuildScan, error) {
	feed, err := LoadFeed(dir)
	if err != nil {
		return nil, err
	}
	findings, err := Match(goPackages(in), feed, GoEcosystem)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OSV feed %q: %v", dir, err)
	}
	if findings == nil {
		findings = []Finding{}
	}
	return &BuildScan{Dir: dir, Feed: feed, Findings: findings}, nil
}

// Verdict is nil when no record affects the binary, else an exit 1 error
// that counts the records and says what to do.
func (s *BuildScan) Verdict() error {
	if len(s.Findings) == 0 {
		return nil
	}
	return exitcode.Errorf(exitcode.Negative, "%d OSV records affect this repro binary: upgrade the modules named (their fixed versions are listed) and release again", len(s.Findings))
}

// goPackages are in's modules (a replaced module under the version it was
// replaced by) and the standard library as the OSV records of the Go
// ecosystem name them: module path and version, and "stdlib" at the
// toolchain's version.
func goPackages(in buildinfo.Info) []InstalledPackage {
	var out []InstalledPackage
	add := func(name, version string) {
		out = append(out, InstalledPackage{Name: name, Version: version, Source: name, SourceVersion: version})
	}
	if v, ok := strings.CutPrefix(in.Go, "go"); ok {
		add("stdlib", v)
	}
	for _, m := range in.Modules {
		if m.Replace != nil && m.Replace.Version != "" {
			add(m.Replace.Path, m.Replace.Version)
			continue
		}
		add(m.Path, m.Version)
	}
	return out
}
