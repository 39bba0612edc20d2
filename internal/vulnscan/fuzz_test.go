package vulnscan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reprolab/repro/internal/vulnscan"
)

// FuzzParseOSV: any bytes either fail to parse or give a record that
// matching handles without panicking, for packages at tricky versions.
// The seed corpus is under testdata/fuzz/FuzzParseOSV.
func FuzzParseOSV(f *testing.F) {
	f.Add([]byte(`{"id":"X-1","affected":[{"package":{"ecosystem":"Debian:12","name":"zlib"},"ranges":[{"type":"ECOSYSTEM","events":[{"introduced":"0"},{"fixed":"1:1.2.13.dfsg-2"}]}],"versions":["1:1.2.13.dfsg-1"]}]}`))
	pkgs := []vulnscan.InstalledPackage{
		{Name: "zlib1g", Version: "1:1.2.13.dfsg-1", Source: "zlib", SourceVersion: "1:1.2.13.dfsg-1"},
		{Name: "libfoo1", Version: "1.0-2+b1", Source: "foo", SourceVersion: "1.0-2"},
		{Name: "tilde-tool", Version: "2.0~rc1-1", Source: "tilde-tool", SourceVersion: "2.0~rc1-1"},
		{Name: "golang.org/x/net", Version: "v0.22.0", Source: "golang.org/x/net", SourceVersion: "v0.22.0"},
		{Name: "stdlib", Version: "1.22.0-rc.1", Source: "stdlib", SourceVersion: "1.22.0-rc.1"},
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := vulnscan.ParseOSV(b)
		if err != nil {
			return
		}
		if r.ID == "" || len(r.Affected) == 0 {
			t.Fatalf("accepted a record without id or affected entries: %q", b)
		}
		for _, eco := range []string{"Debian:12", r.Affected[0].Package.Ecosystem} {
			if _, err := vulnscan.Match(pkgs, &vulnscan.Feed{Records: []*vulnscan.Record{r}}, eco); err != nil {
				t.Fatalf("a parsed record does not match cleanly: %v: %q", err, b)
			}
		}
	})
}

// TestFuzzCorpusParses keeps the committed seed corpus meaningful: it
// holds records that parse, and records that are refused.
func TestFuzzCorpusParses(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzParseOSV"))
	if err != nil || len(ents) < 4 {
		t.Fatalf("seed corpus: %v (%d files)", err, len(ents))
	}
}
