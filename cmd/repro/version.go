package main

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/reprolab/repro/internal/buildinfo"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/vulnscan"
	"github.com/spf13/cobra"
)

// Version and Commit are set by the linker for releases
// (scripts/release.sh); otherwise the version comes from the module build
// information and the commit from Go's VCS stamp, when there is one.
var (
	Version = ""
	Commit  = ""
)

func init() { register(newVersionCommand) }

func versionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// selfInfo is the build information of this binary.
func selfInfo() (buildinfo.Info, error) {
	in, err := buildinfo.Self(Version, Commit)
	if err != nil {
		return in, exitcode.New(exitcode.Precondition, err)
	}
	in.Version = versionString()
	return in, nil
}

// versionOptions are the flags of repro version.
type versionOptions struct {
	sbom, scan bool
	osvDir     string
}

// check refuses the flag combinations version cannot honour (exit 2);
// json is --json.
func (o versionOptions) check(json bool) error {
	if o.scan != (o.osvDir != "") {
		return exitcode.Errorf(exitcode.Usage, "--scan needs --osv DIR, and --osv goes with --scan")
	}
	if o.sbom && (json || o.scan) {
		return exitcode.Errorf(exitcode.Usage, "--sbom prints the SBOM alone; leave out --json and --scan")
	}
	return nil
}

func newVersionCommand(g *globalOptions) *cobra.Command {
	var o versionOptions
	cmd := &cobra.Command{
		Use:   "version [--json | --sbom | --scan --osv DIR]",
		Short: "Print the version of repro and what it was built from",
		Long: `version prints repro's version, the source commit and Go toolchain it was
built with; --json adds every Go module linked in, with the go.sum hash the
build checked (from the build information Go embeds in the binary).

--sbom prints the CycloneDX SBOM of those modules (the one a release ships).

--scan --osv DIR matches the modules and the Go standard library against the
OSV records in DIR (Go's vulnerability database, as its per-ecosystem archive
unpacks), with the matcher 'repro image scan' uses and semantic version
order. See docs/release.md.

EXIT STATUS
  0 ok (--scan: no finding), 1 --scan found records that affect this binary,
  2 usage error, 3 the feed cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(g.json); err != nil {
				return err
			}
			in, err := selfInfo()
			if err != nil && (o.sbom || o.scan || g.json) {
				return err
			}
			t := g.term
			switch {
			case o.sbom:
				b, err := buildinfo.SBOM(in)
				if err != nil {
					return err
				}
				_, err = t.Stdout().Write(b)
				return err
			case o.scan:
				s, err := vulnscan.ScanBuild(in, o.osvDir)
				if err != nil {
					return err
				}
				return writeVersionScan(t, in, s)
			case g.json:
				return t.Document(in)
			}
			commit := ""
			if in.Commit != "" {
				commit = ", commit " + in.Commit
				if in.Modified {
					commit += " (modified)"
				}
			}
			t.Printf("repro %s (%s%s)\n", versionString(), runtime.Version(), commit)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON, with every module and its go.sum hash")
	cmd.Flags().BoolVar(&o.sbom, "sbom", false, "print the CycloneDX SBOM of repro's Go modules")
	cmd.Flags().BoolVar(&o.scan, "scan", false, "match repro's modules against the OSV records of --osv")
	cmd.Flags().StringVar(&o.osvDir, "osv", "", "folder of OSV records of the Go ecosystem")
	return noHome(cmd)
}

// writeVersionScan prints s, what ScanBuild found for in: one JSON
// document under --json, else a line per finding; it returns s.Verdict().
func writeVersionScan(t *ui.Terminal, in buildinfo.Info, s *vulnscan.BuildScan) error {
	verdict := s.Verdict()
	feed, findings := s.Feed, s.Findings
	if t.JSON() {
		if err := t.Document(map[string]any{"version": in.Version, "commit": in.Commit, "go": in.Go,
			"feed":    map[string]any{"dir": s.Dir, "digest": feed.Digest.String(), "files": feed.Files, "records": len(feed.Records)},
			"modules": len(in.Modules), "findings": findings}); err != nil {
			return err
		}
		return verdict
	}
	t.Printf("repro %s: %d modules and the standard library (%s) against %d OSV records (feed %s)\n",
		in.Version, len(in.Modules), in.Go, len(feed.Records), feed.Digest)
	for _, f := range findings {
		fixed := "no fixed version"
		if f.Fixed != "" {
			fixed = "fixed in " + f.Fixed
		}
		alias := ""
		if len(f.Aliases) > 0 {
			alias = " (" + strings.Join(f.Aliases, ", ") + ")"
		}
		t.Printf("  %s%s: %s %s, %s, severity %s\n", f.ID, alias, f.Package, f.Installed, fixed, f.Severity)
	}
	if len(findings) == 0 {
		t.Printf("no record affects this binary\n")
	}
	return verdict
}
