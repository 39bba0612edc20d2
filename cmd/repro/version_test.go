package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionJSON: the binary names its toolchain and every module it
// links, each with the hash go.sum holds for it.
func TestVersionJSON(t *testing.T) {
	r := repro(t, nil, "version", "--json")
	var v struct {
		Version, Go, Module string
		Modules             []struct{ Path, Version, Sum string }
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Module != "github.com/reprolab/repro" || !strings.HasPrefix(v.Go, "go1.") {
		t.Fatalf("version --json: %d %s %s", r.code, r.stdout, r.stderr)
	}
	f, err := os.Open(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 {
			sums[fs[0]+" "+fs[1]] = fs[2]
		}
	}
	cobra := false
	for _, m := range v.Modules {
		if m.Sum == "" || sums[m.Path+" "+m.Version] != m.Sum {
			t.Errorf("module %s %s: hash %q, go.sum %q", m.Path, m.Version, m.Sum, sums[m.Path+" "+m.Version])
		}
		cobra = cobra || m.Path == "github.com/spf13/cobra"
	}
	if !cobra || len(v.Modules) < 20 {
		t.Fatalf("%d modules, cobra %v", len(v.Modules), cobra)
	}
	if s := repro(t, nil, "version", "--sbom"); s.code != 0 || !strings.Contains(s.stdout, `"purl": "pkg:golang/github.com/spf13/cobra@`) {
		t.Fatalf("version --sbom: %d %s", s.code, s.stderr)
	}
}

// TestVersionScan matches the binary's modules and standard library
// against the real-format Go records of internal/vulnscan's fixture (none
// affects the versions repro links), then against records in the same
// format that name a module it links and its Go release: exit 1, each
// named with its fixed version. Usage errors and an unreadable feed run
// nothing.
func TestVersionScan(t *testing.T) {
	fixture := filepath.Join("..", "..", "internal", "vulnscan", "testdata", "osv-go")
	r := repro(t, nil, "version", "--scan", "--osv", fixture)
	if r.code != 0 || !strings.Contains(r.stdout, "against 3 OSV records") || !strings.Contains(r.stdout, "no record affects this binary") {
		t.Fatalf("scan of the fixture: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var v struct{ Go string }
	json.Unmarshal([]byte(repro(t, nil, "version", "--json").stdout), &v)
	goVersion := strings.TrimPrefix(v.Go, "go")
	feed := writeFiles(t, t.TempDir(), map[string]string{
		"GO-2099-0001.json": `{"schema_version": "1.3.1", "id": "GO-2099-0001", "modified": "2099-01-01T00:00:00Z", "aliases": ["CVE-2099-0001"],
  "summary": "a record naming a module repro links", "affected": [{"package": {"name": "github.com/spf13/cobra", "ecosystem": "Go"},
  "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "99.0.0"}]}]}]}`,
		"GO-2099-0002.json": `{"schema_version": "1.3.1", "id": "GO-2099-0002", "modified": "2099-01-01T00:00:00Z",
  "summary": "a record naming the Go release repro was built with", "affected": [{"package": {"name": "stdlib", "ecosystem": "Go"},
  "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.1"}, {"introduced": "` + goVersion + `-0"}, {"last_affected": "` + goVersion + `"}]}]}]}`,
		"GO-2099-0003.json": `{"schema_version": "1.3.1", "id": "GO-2099-0003", "modified": "2099-01-01T00:00:00Z",
  "summary": "fixed below what repro links", "affected": [{"package": {"name": "github.com/spf13/cobra", "ecosystem": "Go"},
  "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.0"}]}]}]}`,
	})
	r = repro(t, nil, "version", "--scan", "--osv", feed, "--json")
	var doc struct {
		Findings []struct {
			ID      string `json:"id"`
			Package string `json:"package"`
			Fixed   string `json:"fixed_version"`
		} `json:"findings"`
	}
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &doc) != nil || len(doc.Findings) != 2 ||
		doc.Findings[0].ID != "GO-2099-0001" || doc.Findings[0].Fixed != "99.0.0" || doc.Findings[1].Package != "stdlib" {
		t.Fatalf("scan: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := repro(t, nil, "version", "--scan", "--osv", feed); r.code != 1 || !strings.Contains(r.stdout, "GO-2099-0001 (CVE-2099-0001): github.com/spf13/cobra v") || !strings.Contains(r.stderr, "2 OSV records affect") {
		t.Fatalf("scan text: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"scan without --osv": {[]string{"--scan"}, 2, "--scan needs --osv"},
		"--osv without scan": {[]string{"--osv", feed}, 2, "--scan needs --osv"},
		"sbom and json":      {[]string{"--sbom", "--json"}, 2, "--sbom prints the SBOM alone"},
		"missing feed":       {[]string{"--scan", "--osv", filepath.Join(feed, "nope")}, 3, "not a folder"},
		"empty feed":         {[]string{"--scan", "--osv", t.TempDir()}, 3, "no *.json record"},
	} {
		if r := repro(t, nil, append([]string{"version"}, c.args...)...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want %d naming %q: %s", name, r.code, c.code, c.want, r.stderr)
		}
	}
}
