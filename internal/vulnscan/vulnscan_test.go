package vulnscan_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	debversion "github.com/knqyf263/go-deb-version"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/vulnscan"
	"golang.org/x/sys/unix"
)

// TestDebianVersionOrder pins the ordering the scan relies on: the
// epoch decides first, a tilde sorts before anything (even the end of
// the string), the revision breaks ties, a binNMU (+b1) and a stable
// update (+deb12u1) sort after their base, and digit runs compare as
// numbers.
func TestDebianVersionOrder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1:1.0", "2.0", 1},
		{"0:1.0", "1.0", 0},
		{"1:1.2.13.dfsg-1", "1.2.13.dfsg-2", 1},
		{"1.0~rc1", "1.0", -1},
		{"1.0~~", "1.0~", -1},
		{"1.0~rc1-1", "1.0~rc2-1", -1},
		{"2.0~rc1-1", "2.0-1", -1},
		{"1.0-1", "1.0-1+b1", -1},
		{"1.0-1+b1", "1.0-2", -1},
		{"1.0-1", "1.0-1.1", -1},
		{"3.11.2-6+deb12u8", "3.11.2-6+deb12u10", -1},
		{"3.11.2-6", "3.11.2-6+deb12u1", -1},
		{"1.0a", "1.0", 1},
		{"1.0+dfsg", "1.0", 1},
	} {
		va, err := debversion.NewVersion(c.a)
		if err != nil {
			t.Fatal(err)
		}
		vb, err := debversion.NewVersion(c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := va.Compare(vb); sign(got) != c.want {
			t.Errorf("compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// fixturePackages makes an SBOM from the dpkg status fixture and reads its
// packages back, as 'repro image scan' does with the pinned SBOM.
func fixturePackages(t testing.TB) ([]vulnscan.InstalledPackage, digest.SHA256) {
	t.Helper()
	status, err := os.ReadFile("testdata/status")
	if err != nil {
		t.Fatal(err)
	}
	img := sandbox.Image{ID: "sha256:" + strings.Repeat("1", 64), ManifestDigest: "sha256:" + strings.Repeat("2", 64)}
	b, err := sandbox.BuildSBOM(img, sandbox.DpkgStatusPackages(status), nil)
	if err != nil {
		t.Fatal(err)
	}
	debs, err := sandbox.SBOMPackages(b)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]vulnscan.InstalledPackage, len(debs))
	for i, d := range debs {
		out[i] = vulnscan.InstalledPackage(d)
	}
	return out, digest.Of(b)
}

// record is a small OSV record for one package and one ECOSYSTEM range.
func record(id, eco, pkg string, events ...map[string]string) map[string]any {
	return map[string]any{
		"schema_version": "1.6.0",
		"id":             id,
		"modified":       "2026-01-01T00:00:00Z",
		"published":      "2025-12-01T00:00:00Z",
		"aliases":        []string{"CVE-2099-" + id[len(id)-4:]},
		"summary":        "made-up advisory " + id,
		"affected": []any{map[string]any{
			"package":            map[string]string{"ecosystem": eco, "name": pkg},
			"ranges":             []any{map[string]any{"type": "ECOSYSTEM", "events": events}},
			"ecosystem_specific": map[string]string{"urgency": "medium"},
		}},
	}
}

func ev(kind, v string) map[string]string { return map[string]string{kind: v} }

// writeFeed writes each record as <id>.json under a new folder.
func writeFeed(t testing.TB, recs ...map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, r["id"].(string)+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fixtureFeed holds one record for each case of TestMatch; the ids say
// whether each must match ("HIT") or not ("MISS").
func fixtureFeed(t *testing.T) string {
	versionsOnly := record("TEST-HIT-VERS-0005", "Debian:12", "foo")
	versionsOnly["affected"].([]any)[0].(map[string]any)["ranges"] = []any{}
	versionsOnly["affected"].([]any)[0].(map[string]any)["versions"] = []string{"1.0-2"}
	debianCVE := record("DEBIAN-CVE-HIT-0018", "Debian:12", "zlib", ev("introduced", "0"))
	delete(debianCVE, "aliases")
	debianCVE["upstream"] = []string{"CVE-2099-0018"}
	debianCVE["affected"].([]any)[0].(map[string]any)["ecosystem_specific"] = map[string]string{"urgency": "low**"}
	withdrawn := record("TEST-MISS-WITHDRAWN-0017", "Debian:12", "python3.11", ev("introduced", "0"))
	withdrawn["withdrawn"] = "2026-01-02T00:00:00Z"
	return writeFeed(t, withdrawn,
		// python3.11 is at 3.11.2-6+deb12u8.
		record("TEST-MISS-BELOW-0001", "Debian:12", "python3.11", ev("introduced", "0"), ev("fixed", "3.11.2-6+deb12u6")),
		record("TEST-HIT-ABOVE-0002", "Debian:12", "python3.11", ev("introduced", "0"), ev("fixed", "3.11.2-6+deb12u9")),
		record("TEST-HIT-NOFIX-0003", "Debian:12", "python3.11", ev("introduced", "3.11.0-1")),
		record("TEST-MISS-EQUAL-0004", "Debian:12", "python3.11", ev("introduced", "0"), ev("fixed", "3.11.2-6+deb12u8")),
		// foo: binary libfoo1 1.0-2+b1 (a binNMU), source foo 1.0-2.
		versionsOnly,
		record("TEST-MISS-BINARY-0006", "Debian:12", "libfoo1", ev("introduced", "0")),
		record("TEST-MISS-BINNMU-0007", "Debian:12", "foo", ev("introduced", "0"), ev("fixed", "1.0-2")),
		// tilde-tool is at 2.0~rc1-1.
		record("TEST-HIT-TILDE-0008", "Debian:12", "tilde-tool", ev("introduced", "0"), ev("fixed", "2.0-1")),
		record("TEST-MISS-TILDE-0009", "Debian:12", "tilde-tool", ev("introduced", "0"), ev("fixed", "2.0~beta1-1")),
		record("TEST-MISS-TILDE-0010", "Debian:12", "tilde-tool", ev("introduced", "0"), ev("fixed", "2.0~rc1-1")),
		// zlib is at 1:1.2.13.dfsg-1.
		record("TEST-MISS-EPOCH-0011", "Debian:12", "zlib", ev("introduced", "0"), ev("fixed", "1.2.13.dfsg-2")),
		record("TEST-HIT-EPOCH-0012", "Debian:12", "zlib", ev("introduced", "0"), ev("fixed", "1:1.2.13.dfsg-2")),
		record("TEST-MISS-LASTAFF-0013", "Debian:12", "zlib", ev("introduced", "0"), ev("last_affected", "1:1.2.12-1")),
		debianCVE,
		// Other ecosystems never match.
		record("TEST-MISS-DEB11-0014", "Debian:11", "python3.11", ev("introduced", "0")),
		record("TEST-MISS-PYPI-0015", "PyPI", "python3.11", ev("introduced", "0")),
		// A package the image does not have.
		record("TEST-MISS-ABSENT-0016", "Debian:12", "removed-pkg", ev("introduced", "0")),
	)
}

// TestMatch checks each fixture record against the fixture's packages:
// below, at and above the installed version, tildes, epochs, a binNMU
// whose source version is what the record names, and other ecosystems.
func TestMatch(t *testing.T) {
	pkgs, _ := fixturePackages(t)
	feed, err := vulnscan.LoadFeed(fixtureFeed(t))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := vulnscan.Match(pkgs, feed, "Debian:12")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]vulnscan.Finding{}
	for _, f := range fs {
		got[f.ID] = f
	}
	for _, r := range feed.Records {
		_, hit := got[r.ID]
		if want := strings.Contains(r.ID, "-HIT-"); hit != want {
			t.Errorf("%s: matched %v, want %v", r.ID, hit, want)
		}
	}
	if f := got["TEST-HIT-ABOVE-0002"]; f.Package != "python3.11" || f.Installed != "3.11.2-6+deb12u8" || f.Fixed != "3.11.2-6+deb12u9" ||
		strings.Join(f.Binaries, ",") != "libpython3.11-minimal,python3.11" || f.Severity != "medium" || len(f.Aliases) != 1 {
		t.Errorf("python3.11 finding %+v", f)
	}
	if f := got["DEBIAN-CVE-HIT-0018"]; f.Severity != "low" || len(f.Upstream) != 1 {
		t.Errorf("starred urgency or upstream: %+v", f)
	}
	if f := got["TEST-HIT-NOFIX-0003"]; f.Fixed != "" {
		t.Errorf("a range without a fix gave fixed %q", f.Fixed)
	}
	if f := got["TEST-HIT-EPOCH-0012"]; f.Installed != "1:1.2.13.dfsg-1" || f.Fixed != "1:1.2.13.dfsg-2" {
		t.Errorf("epoch finding %+v", f)
	}
	if f := got["TEST-HIT-VERS-0005"]; f.Installed != "1.0-2" || strings.Join(f.Binaries, ",") != "libfoo1" {
		t.Errorf("binNMU finding %+v: want the source version 1.0-2", f)
	}
}

// TestWaivers: a waiver names a finding by alias; a waiver without a
// reason, past its expiry, with an unknown field, or given twice is refused.
func TestWaivers(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ok := `{"waivers": [{"id": "CVE-2099-0002", "package": "python3.11", "reason": "the harness never calls the affected module", "expires": "2026-12-01"}]}`
	ws, err := vulnscan.ParseWaivers([]byte(ok), now)
	if err != nil || len(ws) != 1 {
		t.Fatalf("valid waiver refused: %v", err)
	}
	upstream := `{"waivers": [{"id": "CVE-2099-0018", "package": "zlib", "reason": "the image never inflates untrusted data", "expires": "2027-01-01"}]}`
	wsUp, err := vulnscan.ParseWaivers([]byte(upstream), now)
	if err != nil {
		t.Fatalf("valid waiver refused: %v", err)
	}
	for name, c := range map[string]struct{ doc, want string }{
		"expired":   {strings.Replace(ok, "2026-12-01", "2026-11-30", 1), "expired on 2026-11-30"},
		"no reason": {strings.Replace(ok, "the harness never calls the affected module", "  ", 1), "gives no reason"},
		"no expiry": {strings.Replace(ok, `, "expires": "2026-12-01"`, "", 1), "not a date"},
		"bad date":  {strings.Replace(ok, "2026-12-01", "2026-13-01", 1), "not a date"},
		"unknown":   {strings.Replace(ok, `"reason"`, `"note": "x", "reason"`, 1), "unknown field"},
		"twice":     {strings.Replace(ok, "}]}", "}, "+ok[13:len(ok)-2]+"]}", 1), "given twice"},
		"trailing":  {ok + "{}", "trailing"},
		"no id":     {strings.Replace(ok, "CVE-2099-0002", "", 1), "id"},
	} {
		if _, err := vulnscan.ParseWaivers([]byte(c.doc), now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.want)
		}
	}

	pkgs, sbom := fixturePackages(t)
	feed, err := vulnscan.LoadFeed(fixtureFeed(t))
	if err != nil {
		t.Fatal(err)
	}
	in := vulnscan.Input{
		ImageID: "sha256:" + strings.Repeat("1", 64), ManifestDigest: "sha256:" + strings.Repeat("2", 64), SBOMDigest: sbom,
		Packages: pkgs, Feed: feed, Ecosystem: "Debian:12", Now: now,
	}
	plain, err := vulnscan.Scan(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Waivers = append(ws, wsUp...)
	waived, err := vulnscan.Scan(in)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Predicate.Unwaived != len(plain.Predicate.Findings) || waived.Predicate.Unwaived != plain.Predicate.Unwaived-2 {
		t.Errorf("unwaived: %d of %d without the waiver, %d with it", plain.Predicate.Unwaived, len(plain.Predicate.Findings), waived.Predicate.Unwaived)
	}
	for _, f := range waived.Predicate.Findings {
		if (f.Waiver != nil) != (f.ID == "TEST-HIT-ABOVE-0002" || f.ID == "DEBIAN-CVE-HIT-0018") {
			t.Errorf("%s: waiver %+v", f.ID, f.Waiver)
		}
	}
	// The same id for another package waives nothing.
	in.Waivers = []vulnscan.Waiver{{ID: "CVE-2099-0002", Package: "zlib", Reason: "r", Expires: "2027-01-01"}}
	if other, err := vulnscan.Scan(in); err != nil || other.Predicate.Unwaived != plain.Predicate.Unwaived {
		t.Errorf("a waiver for another package waived a finding: %v", err)
	}
}

// TestSeverityOfUnwaived: the highest level among unwaived findings is
// recorded, and a finding whose record states no level ranks above
// critical.
func TestSeverityOfUnwaived(t *testing.T) {
	pkgs, sbom := fixturePackages(t)
	high := record("TEST-HIT-HIGH-0101", "Debian:12", "zlib", ev("introduced", "0"))
	high["affected"].([]any)[0].(map[string]any)["ecosystem_specific"] = map[string]string{"urgency": "high"}
	high["database_specific"] = map[string]string{"severity": "LOW"} // the highest level given counts
	unrated := record("TEST-HIT-UNRATED-0102", "Debian:12", "zlib", ev("introduced", "0"))
	delete(unrated["affected"].([]any)[0].(map[string]any), "ecosystem_specific")
	for _, c := range []struct {
		recs []map[string]any
		want string
	}{
		{[]map[string]any{record("TEST-MISS-0103", "Debian:12", "zlib", ev("introduced", "0"), ev("fixed", "1:1.0-1"))}, "none"},
		{[]map[string]any{record("TEST-HIT-0104", "Debian:12", "zlib", ev("introduced", "0")), high}, "high"},
		{[]map[string]any{high, unrated}, "unknown"},
	} {
		feed, err := vulnscan.LoadFeed(writeFeed(t, c.recs...))
		if err != nil {
			t.Fatal(err)
		}
		st, err := vulnscan.Scan(vulnscan.Input{
			ImageID: "sha256:" + strings.Repeat("1", 64), ManifestDigest: "sha256:" + strings.Repeat("2", 64), SBOMDigest: sbom,
			Packages: pkgs, Feed: feed, Ecosystem: "Debian:12", Now: time.Now(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Predicate.MaxUnwaivedSeverity != c.want {
			t.Errorf("max unwaived severity %q, want %q", st.Predicate.MaxUnwaivedSeverity, c.want)
		}
	}
	if vulnscan.LevelRank("unknown") <= vulnscan.LevelRank("critical") || vulnscan.LevelRank("none") != 0 {
		t.Error("level order")
	}
}

// TestMalformedFeed: a feed that cannot be read whole stops the scan
// (exit 3) with the file named.
func TestMalformedFeed(t *testing.T) {
	good := record("TEST-OK-0201", "Debian:12", "zlib", ev("introduced", "0"))
	for name, c := range map[string]struct {
		prepare func(dir string)
		want    string
	}{
		"not json": {func(d string) { os.WriteFile(filepath.Join(d, "bad.json"), []byte("{"), 0o644) }, "bad.json"},
		"no id": {func(d string) {
			os.WriteFile(filepath.Join(d, "x.json"), []byte(`{"affected":[{"package":{"ecosystem":"Debian:12","name":"zlib"}}]}`), 0o644)
		}, "id"},
		"no affected": {func(d string) { os.WriteFile(filepath.Join(d, "x.json"), []byte(`{"id":"X-1","affected":[]}`), 0o644) }, "affected entries"},
		"two kinds": {func(d string) {
			writeRaw(d, record("X-0202", "Debian:12", "zlib", map[string]string{"introduced": "0", "fixed": "1.0-1"}))
		}, "exactly one"},
		"bad version": {func(d string) {
			writeRaw(d, record("X-0203", "Debian:12", "zlib", ev("introduced", "0"), ev("fixed", "1.0 beta")))
		}, "not a Debian version"},
		"empty range": {func(d string) { writeRaw(d, record("X-0204", "Debian:12", "zlib")) }, "events"},
		"symlink":     {func(d string) { os.Symlink("/etc/passwd", filepath.Join(d, "link.json")) }, "not a regular file"},
		"fifo":        {func(d string) { mkfifo(t, filepath.Join(d, "pipe.json")) }, "not a regular file"},
		"too large": {func(d string) {
			os.WriteFile(filepath.Join(d, "big.json"), make([]byte, vulnscan.MaxRecordBytes+1), 0o644)
		}, "larger than allowed"},
		"control in name": {func(d string) { os.WriteFile(filepath.Join(d, "a\nb.json"), []byte("{}"), 0o644) }, "control characters"},
	} {
		dir := writeFeed(t, good)
		c.prepare(dir)
		_, err := vulnscan.LoadFeed(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitcode.Of(err) != exitcode.Precondition {
			t.Errorf("%s: got %v (exit %d), want exit 3 with %q", name, err, exitcode.Of(err), c.want)
		}
	}
	for name, dir := range map[string]string{"missing": filepath.Join(t.TempDir(), "nope"), "empty": t.TempDir()} {
		if _, err := vulnscan.LoadFeed(dir); err == nil || exitcode.Of(err) != exitcode.Precondition {
			t.Errorf("%s feed: %v", name, err)
		}
	}
}

func writeRaw(dir string, r map[string]any) {
	b, _ := json.Marshal(r)
	os.WriteFile(filepath.Join(dir, r["id"].(string)+".json"), b, 0o644)
}

// TestFeedDigest: the feed's digest is the tree digest of its folder, and
// changes when any file (parsed or not) changes.
func TestFeedDigest(t *testing.T) {
	dir := fixtureFeed(t)
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a record\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "fetch.sh"), []byte("#!/bin/sh\n"), 0o755)
	feed, err := vulnscan.LoadFeed(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := digest.Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if feed.Digest != m.Digest() || feed.Files != len(m) {
		t.Errorf("feed digest %s (%d files), tree digest %s (%d files)", feed.Digest, feed.Files, m.Digest(), len(m))
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("changed\n"), 0o644)
	if again, err := vulnscan.LoadFeed(dir); err != nil || again.Digest == feed.Digest {
		t.Errorf("digest unchanged after a change: %v", err)
	}
}

func mkfifo(t *testing.T, p string) {
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goFixture loads testdata/osv-go: records of the Go vulnerability
// database (SEMVER ranges) and GitHub's (ECOSYSTEM ranges) in their real
// format.
func goFixture(t *testing.T) *vulnscan.Feed {
	t.Helper()
	feed, err := vulnscan.LoadFeed(filepath.Join("testdata", "osv-go"))
	if err != nil {
		t.Fatal(err)
	}
	return feed
}

func goModule(path, version string) vulnscan.InstalledPackage {
	return vulnscan.InstalledPackage{Name: path, Version: version, Source: path, SourceVersion: version}
}

// TestGoEcosystemMatch matches Go modules and the standard library
// against real-format Go records with semantic version order: a fixed
// version compares numerically (1.21.10 is above 1.21.9), a pre-release
// "1.22.0-0" opens a range below 1.22.0, module versions carry the "v"
// the records leave out, and Debian entries never match Go packages.
func TestGoEcosystemMatch(t *testing.T) {
	feed := goFixture(t)
	for _, c := range []struct {
		pkg  vulnscan.InstalledPackage
		want map[string]string // advisory id -> fixed version
	}{
		{goModule("golang.org/x/net", "v0.16.0"), map[string]string{"GO-2023-2102": "0.17.0", "GO-2024-2687": "0.23.0", "GHSA-4v7x-pqxf-cx7m": "0.23.0"}},
		{goModule("golang.org/x/net", "v0.22.0"), map[string]string{"GO-2024-2687": "0.23.0", "GHSA-4v7x-pqxf-cx7m": "0.23.0"}},
		{goModule("golang.org/x/net", "v0.23.0"), nil},
		{goModule("golang.org/x/net", "v0.61.0"), nil},
		{goModule("golang.org/x/net", "v0.0.0-20231010180000-abcdefabcdef"), map[string]string{"GO-2023-2102": "0.17.0", "GO-2024-2687": "0.23.0", "GHSA-4v7x-pqxf-cx7m": "0.23.0"}},
		{goModule("stdlib", "1.21.8"), map[string]string{"GO-2024-2687": "1.21.9"}},
		{goModule("stdlib", "1.21.10"), nil},
		{goModule("stdlib", "1.22.0-rc.1"), map[string]string{"GO-2024-2687": "1.22.2"}},
		{goModule("stdlib", "1.22.1"), map[string]string{"GO-2024-2687": "1.22.2"}},
		{goModule("stdlib", "1.21.2"), map[string]string{"GO-2023-2102": "1.21.3", "GO-2024-2687": "1.21.9"}},
		{goModule("stdlib", "1.26.8"), nil},
		{goModule("golang.org/x/text", "v0.3.0"), nil},
	} {
		fs, err := vulnscan.Match([]vulnscan.InstalledPackage{c.pkg}, feed, vulnscan.GoEcosystem)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range fs {
			got[f.ID] = f.Fixed
			if f.Package != c.pkg.Name || f.Installed != c.pkg.Version {
				t.Errorf("%s %s: finding names %s %s", c.pkg.Name, c.pkg.Version, f.Package, f.Installed)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s %s: findings %v, want %v", c.pkg.Name, c.pkg.Version, got, c.want)
			continue
		}
		for id, fixed := range c.want {
			if got[id] != fixed {
				t.Errorf("%s %s: %s fixed %q, want %q (all: %v)", c.pkg.Name, c.pkg.Version, id, got[id], fixed, got)
			}
		}
	}
	// GitHub's record states its severity; the Go database's do not.
	fs, _ := vulnscan.Match([]vulnscan.InstalledPackage{goModule("golang.org/x/net", "v0.22.0")}, feed, vulnscan.GoEcosystem)
	for _, f := range fs {
		if want := map[string]string{"GHSA-4v7x-pqxf-cx7m": "medium", "GO-2024-2687": "unknown"}[f.ID]; f.Severity != want {
			t.Errorf("%s: severity %q, want %q", f.ID, f.Severity, want)
		}
	}
	// The Go records are never matched as Debian packages, nor Debian's as Go.
	if fs, err := vulnscan.Match([]vulnscan.InstalledPackage{goModule("golang.org/x/net", "v0.16.0")}, feed, "Debian:12"); err != nil || len(fs) != 0 {
		t.Errorf("Go records matched as Debian:12: %v %v", fs, err)
	}
	// A Go record whose version is no semantic version is refused.
	if _, err := vulnscan.ParseOSV([]byte(`{"id":"GO-X","affected":[{"package":{"ecosystem":"Go","name":"stdlib"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.21.x"}]}]}]}`)); err == nil || !strings.Contains(err.Error(), "not a semantic version") {
		t.Errorf("a bad Go version: %v", err)
	}
}
