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

func newVersionCommand(g *globalOptions) *cobra.Command {
	var sbom, scan bool
	var osvDir string
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
			t := g.term
			if scan != (osvDir != "") {
				return exitcode.Errorf(exitcode.Usage, "--scan needs --osv DIR, and --osv goes with --scan")
			}
			if sbom && (g.json || scan) {
				return exitcode.Errorf(exitcode.Usage, "--sbom prints the SBOM alone; leave out --json and --scan")
			}
			in, err := selfInfo()
			if err != nil && (sbom || scan || g.json) {
				return err
			}
			switch {
			case sbom:
				b, err := buildinfo.SBOM(in)
				if err != nil {
					return err
				}
				_, err = t.Stdout().Write(b)
				return err
			case scan:
				return runVersionScan(t, in, osvDir)
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
	cmd.Flags().BoolVar(&sbom, "sbom", false, "print the CycloneDX SBOM of repro's Go modules")
	cmd.Flags().BoolVar(&scan, "scan", false, "match repro's modules against the OSV records of --osv")
	cmd.Flags().StringVar(&osvDir, "osv", "", "folder of OSV records of the Go ecosystem")
	return noHome(cmd)
}

// runVersionScan matches in's modules and standard library against the
// Go records of the feed in dir.
func runVersionScan(t *ui.Terminal, in buildinfo.Info, dir string) error {
	feed, err := vulnscan.LoadFeed(dir)
	if err != nil {
		return err
	}
	findings, err := vulnscan.Match(goPackages(in), feed, vulnscan.GoEcosystem)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "the OSV feed %q: %v", dir, err)
	}
	if findings == nil {
		findings = []vulnscan.Finding{}
	}
	var verdict error
	if len(findings) > 0 {
		verdict = exitcode.Errorf(exitcode.Negative, "%d OSV records affect this repro binary: upgrade the modules named (their fixed versions are listed) and release again", len(findings))
	}
	if t.JSON() {
		if err := t.Document(map[string]any{"version": in.Version, "commit": in.Commit, "go": in.Go,
			"feed":    map[string]any{"dir": dir, "digest": feed.Digest.String(), "files": feed.Files, "records": len(feed.Records)},
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

// goPackages are in's modules (a replaced module under the version it was
// replaced by) and the standard library as the OSV records of the Go
// ecosystem name them: module path and version, and "stdlib" at the
// toolchain's version.
func goPackages(in buildinfo.Info) []vulnscan.InstalledPackage {
	var out []vulnscan.InstalledPackage
	add := func(name, version string) {
		out = append(out, vulnscan.InstalledPackage{Name: name, Version: version, Source: name, SourceVersion: version})
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
