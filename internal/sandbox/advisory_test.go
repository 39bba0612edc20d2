package sandbox

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

func TestUpstreamVersion(t *testing.T) {
	for _, c := range []struct {
		rt       Runtime
		in, want string
	}{
		{Runc, "runc version 1.1.5+ds1", "1.1.5"},
		{Runc, "1.1.5+ds1", "1.1.5"},
		{Runc, "1.4.0-rc.3", "1.4.0-rc.3"},
		{Runc, "v1.4.0-rc3", "1.4.0-rc.3"},
		{Runc, "1.4.0~rc.2+ds1-1", "1.4.0-rc.2"},
		{Runc, "runc version unknown", ""},
		{Runsc, "runsc version 0.0~20221219.0", "release-20221219.0"},
		{Runsc, "runsc version release-20250319.0", "release-20250319.0"},
		{Runsc, "runsc version 20240101", "release-20240101.0"},
		{Runsc, "runsc version v0.0.0-20260905035102-160fafc42237", "v0.0.0-20260905035102-160fafc42237"},
		{Runsc, "runsc version VERSION_MISSING", ""},
		{Runsc, "runsc", ""},
	} {
		if got := upstreamVersion(c.rt, c.in); got != c.want {
			t.Errorf("upstreamVersion(%s, %q) = %q, want %q", c.rt, c.in, got, c.want)
		}
	}
}

func TestVersionFixed(t *testing.T) {
	y := []string{"1.2.8", "1.3.3", "1.4.0-rc.3"}
	for _, c := range []struct {
		v     string
		fixed []string
		want  bool
	}{
		{"1.1.5", []string{"1.1.12"}, false},
		{"1.1.12", []string{"1.1.12"}, true},
		{"1.2.0", []string{"1.1.12"}, true},
		{"1.1.15", y, false},
		{"1.2.7", y, false},
		{"1.2.8", y, true},
		{"1.3.2", y, false},
		{"1.3.3", y, true},
		{"1.4.0-rc.2", y, false},
		{"1.4.0-rc.3", y, true},
		{"1.4.0", y, true},
		{"1.5.0", y, true},
		{"2.0.0", y, true},
		{"garbage", y, false},
	} {
		if got := versionFixed(c.v, c.fixed); got != c.want {
			t.Errorf("versionFixed(%s, %v) = %v, want %v", c.v, c.fixed, got, c.want)
		}
	}
}

// hostRoot makes a file system root holding a dpkg database with runc
// installed at version and, unless changelog is nil, its changelog.
func hostRoot(t *testing.T, version string, changelog []byte) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range map[string]string{
		"usr/sbin/runc":                "#!/bin/sh\n",
		"var/lib/dpkg/info/runc.list":  "/.\n/usr\n/usr/sbin\n/usr/sbin/runc\n/usr/bin/runc\n",
		"var/lib/dpkg/info/other.list": "/usr/bin/other\n",
		"var/lib/dpkg/status":          "Package: other\nStatus: install ok installed\nVersion: 1\n\nPackage: runc\nStatus: install ok installed\nArchitecture: amd64\nVersion: " + version + "\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if changelog != nil {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(changelog)
		zw.Close()
		p := filepath.Join(root, "usr/share/doc/runc/changelog.Debian.gz")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b.Bytes(), 0o644)
	}
	return root
}

const bookwormChangelog = `runc (1.1.5+ds1-1+deb12u1) bookworm-security; urgency=high

  * CVE-2024-21626: several container breakouts due to internally leaked fds

 -- A Maintainer <a@example.org>  Fri, 02 Feb 2024 21:53:05 +0800

runc (1.1.5+ds1-1) unstable; urgency=medium

  * New upstream version; mentions CVE-2025-311330 only as a longer id

 -- A Maintainer <a@example.org>  Wed, 29 Mar 2023 17:24:36 +0800
`

func verdicts(a *RuntimeAssessment) map[string]string {
	out := map[string]string{}
	for _, f := range a.Findings {
		out[f.ID] = f.Verdict
	}
	return out
}

// TestAssessRuntime judges runc against a dpkg database and changelog
// made for each case: a backport named in the changelog, an advisory it
// does not name, a changelog of another version, none at all, a binary
// no package holds, and a fixed upstream version.
func TestAssessRuntime(t *testing.T) {
	const old = "1.1.5+ds1-1+deb12u1"
	cases := []struct {
		name, version, installed string
		changelog                []byte
		unpackaged               bool
		want                     map[string]string
	}{
		{"bookworm backport", "runc version 1.1.5+ds1", old, []byte(bookwormChangelog), false, map[string]string{
			"CVE-2024-21626": AdvisoryBackported, "CVE-2025-31133": AdvisoryAffected, "CVE-2025-52565": AdvisoryAffected, "CVE-2025-52881": AdvisoryAffected}},
		{"changelog of another version", "1.1.5+ds1", "1.1.5+ds1-1+deb12u2", []byte(bookwormChangelog), false, map[string]string{
			"CVE-2024-21626": AdvisoryUnknown, "CVE-2025-31133": AdvisoryUnknown}},
		{"binNMU of the changelog's version", "1.1.5+ds1", old + "+b3", []byte(bookwormChangelog), false, map[string]string{
			"CVE-2024-21626": AdvisoryBackported, "CVE-2025-31133": AdvisoryAffected}},
		{"no changelog", "1.1.5+ds1", old, nil, false, map[string]string{
			"CVE-2024-21626": AdvisoryUnknown, "CVE-2025-52881": AdvisoryUnknown}},
		{"upstream binary", "1.1.5", old, []byte(bookwormChangelog), true, map[string]string{
			"CVE-2024-21626": AdvisoryAffected, "CVE-2025-52565": AdvisoryAffected}},
		{"fixed release", "runc version 1.3.3", old, nil, false, map[string]string{
			"CVE-2024-21626": AdvisoryFixed, "CVE-2025-31133": AdvisoryFixed, "CVE-2025-52565": AdvisoryFixed, "CVE-2025-52881": AdvisoryFixed}},
		{"unreadable version", "runc version ???", old, []byte(bookwormChangelog), false, map[string]string{
			"CVE-2024-21626": AdvisoryUnknown, "CVE-2025-31133": AdvisoryUnknown}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := hostRoot(t, c.installed, c.changelog)
			path := "/usr/bin/runc"
			if c.unpackaged {
				os.MkdirAll(filepath.Join(root, "opt/bin"), 0o755)
				os.WriteFile(filepath.Join(root, "opt/bin/runc"), []byte("x"), 0o755)
				path = "/opt/bin/runc"
			}
			a := AssessRuntime(root, Runc, path, c.version)
			got := verdicts(a)
			if len(got) != 4 {
				t.Fatalf("%d findings, want the 4 runc advisories: %+v", len(got), a)
			}
			for id, want := range c.want {
				if got[id] != want {
					t.Errorf("%s: %s, want %s (%+v)", id, got[id], want, a)
				}
			}
			if !c.unpackaged && c.version != "runc version 1.3.3" && (a.Package != "runc" || a.PackageVersion != c.installed) {
				t.Errorf("package %s %s, want runc %s", a.Package, a.PackageVersion, c.installed)
			}
		})
	}
	if a := AssessRuntime(t.TempDir(), Runsc, "/usr/bin/runsc", "runsc version 0.0~20221219.0"); len(a.Findings) != 0 || a.Upstream != "release-20221219.0" {
		t.Errorf("runsc: %+v", a)
	}
}

// TestAssessHostRunc judges this host's runc and checks the verdicts
// against what dpkg-query and zgrep, run independently, say of the same
// package and changelog.
func TestAssessHostRunc(t *testing.T) {
	for _, tool := range []string{"dpkg-query", "zgrep", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "apt-get install runc (Debian's, with dpkg)")
		}
	}
	out, err := exec.Command("runc", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	a := AssessRuntime("/", Runc, "runc", first)
	pkgVer, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "runc").Output()
	if err != nil {
		testenv.Missing(t, "Debian's runc package", "apt-get install runc")
	}
	if a.Package != "runc" || a.PackageVersion != string(pkgVer) {
		t.Fatalf("package %q %q, dpkg-query says runc %q", a.Package, a.PackageVersion, pkgVer)
	}
	for _, f := range a.Findings {
		named := exec.Command("zgrep", "-qw", f.ID, "/usr/share/doc/runc/changelog.Debian.gz").Run() == nil
		if f.Verdict == AdvisoryFixed {
			continue
		}
		if named != (f.Verdict == AdvisoryBackported) {
			t.Errorf("%s: verdict %s, but zgrep finds it named: %v", f.ID, f.Verdict, named)
		}
		t.Logf("%s %s: %s (%s)", a.Version, f.ID, f.Verdict, f.Evidence)
	}
}

// FuzzChangelog reads arbitrary bytes as a runtime's version and as a
// Debian changelog: no panic, and a verdict only from the changelog's
// own entries.
func FuzzChangelog(f *testing.F) {
	f.Add("runc version 1.1.5+ds1", []byte(bookwormChangelog), "CVE-2024-21626")
	f.Add("1.4.0-rc.3", []byte("runc (1.4.0) x; urgency=low\n  * CVE-2025-31133\n"), "CVE-2025-31133")
	f.Add("runsc version 0.0~20221219.0", []byte(""), "CVE-2025-52565")
	f.Fuzz(func(t *testing.T, version string, changelog []byte, id string) {
		for _, rt := range Runtimes {
			if v := upstreamVersion(rt, version); v != "" {
				versionFixed(v, []string{"1.2.8", "1.3.3", "1.4.0-rc.3"})
			}
		}
		if id == "" {
			return
		}
		if e := changelogEntryNaming(changelog, id); e != "" && !bytes.Contains(changelog, []byte(id)) {
			t.Fatalf("entry %q said to name %q, which the changelog does not hold", e, id)
		}
	})
}
