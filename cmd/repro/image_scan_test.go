package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"github.com/reprolab/repro/internal/vulnscan"
)

// scanHome returns a REPRO_HOME holding the test image's pin and SBOM, and
// the source version of python3.11 that the SBOM lists.
func scanHome(t *testing.T) (home, pyVersion string) {
	t.Helper()
	home = t.TempDir()
	sandboxtest.PinInto(t, home)
	b, _ := os.ReadFile(filepath.Join(home, "sandbox", "sbom.cdx.json"))
	pkgs, err := sandbox.SBOMPackages(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if p.Name == "python3.11" {
			return home, p.SourceVersion
		}
	}
	t.Fatal("the test image's SBOM lists no python3.11")
	return "", ""
}

func osvRecord(id, pkg string, events ...string) string {
	var evs []string
	for i := 0; i < len(events); i += 2 {
		evs = append(evs, `{"`+events[i]+`": "`+events[i+1]+`"}`)
	}
	return `{"id": "` + id + `", "modified": "2026-01-01T00:00:00Z", "aliases": ["CVE-2099-` + id[len(id)-4:] + `"],
  "affected": [{"package": {"ecosystem": "Debian:12", "name": "` + pkg + `"},
  "ranges": [{"type": "ECOSYSTEM", "events": [` + strings.Join(evs, ", ") + `]}],
  "ecosystem_specific": {"urgency": "high"}}]}`
}

func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestImageScanCommand scans the real test image's SBOM: a record fixed
// at the installed python3.11 version does not match, one fixed above it
// does (exit 1) until a reasoned waiver covers it (exit 0); the signed
// attestation names the pinned image, SBOM and feed and verifies with the
// run key; usage errors and missing inputs run nothing.
func TestImageScanCommand(t *testing.T) {
	home, py := scanHome(t)
	env := []string{"REPRO_HOME=" + home}
	feed := writeFiles(t, t.TempDir(), map[string]string{
		"TEST-0001.json": osvRecord("TEST-0001", "python3.11", "introduced", "0", "fixed", py),
		"TEST-0002.json": osvRecord("TEST-0002", "python3.11", "introduced", "0", "fixed", py+"+x1"),
		"TEST-0003.json": osvRecord("TEST-0003", "python3.11-minimal", "introduced", "0"), // a binary name: never matched
	})

	r := repro(t, env, "image", "scan", "--osv", feed)
	if r.code != 1 || !strings.Contains(r.stdout, "TEST-0002") || strings.Contains(r.stdout, "TEST-0001") || strings.Contains(r.stdout, "TEST-0003") ||
		!strings.Contains(r.stderr, "1 unwaived finding") {
		t.Fatalf("scan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		t.Fatal(err)
	}
	st, err := vulnscan.Read(home, pin.ID, pin.ManifestDigest)
	if err != nil {
		t.Fatal(err)
	}
	p := st.Predicate
	if p.SBOMDigest != pin.SBOMDigest || p.Packages != pin.SBOMPackages || p.Unwaived != 1 || p.MaxUnwaivedSeverity != "high" ||
		len(p.Findings) != 1 || p.Findings[0].Fixed != py+"+x1" || p.Findings[0].Installed != py || time.Since(p.ScannedAt) > time.Hour {
		t.Errorf("attestation predicate %+v", p)
	}

	waivers := writeFiles(t, t.TempDir(), map[string]string{
		"ok.json":       `{"waivers": [{"id": "CVE-2099-0002", "package": "python3.11", "reason": "the harness does not use the affected module", "expires": "2099-01-01"}]}`,
		"expired.json":  `{"waivers": [{"id": "CVE-2099-0002", "package": "python3.11", "reason": "old", "expires": "2020-01-01"}]}`,
		"noreason.json": `{"waivers": [{"id": "CVE-2099-0002", "package": "python3.11", "reason": "", "expires": "2099-01-01"}]}`,
	})
	r = repro(t, env, "image", "scan", "--osv", feed, "--waivers", filepath.Join(waivers, "ok.json"), "--json")
	var doc struct {
		Attestation         string `json:"attestation"`
		Unwaived            int    `json:"unwaived"`
		MaxUnwaivedSeverity string `json:"max_unwaived_severity"`
		Findings            []struct {
			Waiver *vulnscan.Waiver `json:"waiver"`
		} `json:"findings"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Unwaived != 0 || doc.MaxUnwaivedSeverity != "none" ||
		len(doc.Findings) != 1 || doc.Findings[0].Waiver == nil || doc.Attestation != layout.Home(home).ImageScan() {
		t.Errorf("waived scan: exit %d %+v\n%s%s", r.code, doc, r.stdout, r.stderr)
	}

	before, _ := os.ReadFile(layout.Home(home).ImageScan())
	malformed := writeFiles(t, t.TempDir(), map[string]string{"bad.json": `{"id": "X", "affected": [{"package": {"ecosystem": "Debian:12", "name": "zlib"}, "ranges": [{"type": "ECOSYSTEM", "events": [{"fixed": "1.0 beta"}]}]}]}`})
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no --osv":          {nil, 2, "--osv"},
		"expired waiver":    {[]string{"--osv", feed, "--waivers", filepath.Join(waivers, "expired.json")}, 2, "expired"},
		"waiver reasonless": {[]string{"--osv", feed, "--waivers", filepath.Join(waivers, "noreason.json")}, 2, "no reason"},
		"missing waivers":   {[]string{"--osv", feed, "--waivers", filepath.Join(waivers, "nope.json")}, 2, "nope.json"},
		"missing feed":      {[]string{"--osv", filepath.Join(feed, "nope")}, 3, "not a folder"},
		"empty feed":        {[]string{"--osv", t.TempDir()}, 3, "no *.json record"},
		"malformed feed":    {[]string{"--osv", malformed}, 3, "bad.json"},
	} {
		r := repro(t, env, append([]string{"image", "scan"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%s: exit %d %q, want exit %d naming %q in one line", name, r.code, r.stderr, c.code, c.want)
		}
	}
	if after, _ := os.ReadFile(layout.Home(home).ImageScan()); string(after) != string(before) {
		t.Error("a refused scan replaced the attestation")
	}

	// No pinned image: nothing runs.
	fresh := t.TempDir()
	if r := repro(t, []string{"REPRO_HOME=" + fresh}, "image", "scan", "--osv", feed); r.code != 3 || !strings.Contains(r.stderr, "repro image build") {
		t.Errorf("no pin: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(layout.Home(fresh).ImageScan()); err == nil {
		t.Error("a scan without a pin wrote an attestation")
	}
}
