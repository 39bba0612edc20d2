package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestDebianMirrorFromAptSources(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		// Skips the security suite, deb-src, a suite without main, a
		// disabled stanza, a cdrom URI and a file apt ignores.
		{"testdata/apt/host", "http://mirror.example/debian"},
		// One-line form with bracketed options and a trailing comment.
		{"testdata/apt/oneline", "https://oneline.mirror.example/debian/"},
		{"testdata/apt/none", ""},
		{"testdata/apt/missing", ""},
	} {
		sources, err := ReadAptSources(c.dir)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		if got := DebianMirror(sources, ImageSuite); got != c.want {
			t.Errorf("%s: mirror %q, want %q (sources %+v)", c.dir, got, c.want, sources)
		}
	}
}

func TestHostMirrorFailsClosed(t *testing.T) {
	_, err := hostMirror("testdata/apt/none")
	if exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "--mirror URL") || !strings.Contains(err.Error(), "sources.list.d") {
		t.Errorf("no mirror: %v", err)
	}
	// The build stops before debootstrap or the engine is touched.
	home := t.TempDir()
	_, err = BuildImage(context.Background(), nil, home, BuildOptions{AptDir: "testdata/apt/none"})
	if exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "--mirror URL") {
		t.Errorf("build without a mirror: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "sandbox", "cache", "layer.tar")); err == nil {
		t.Error("a layer was written")
	}
	for _, bad := range []string{"mirror.example/debian", "ftp://mirror.example/debian", "http://user:pw@mirror.example/debian", "http:///debian", "http://mirror.example/debian?x=1", "cdrom:[x]/"} {
		_, err := BuildImage(context.Background(), nil, home, BuildOptions{Mirror: bad})
		if exitcode.Of(err) != exitcode.Usage {
			t.Errorf("mirror %q: %v", bad, err)
		}
	}
}

func TestHostAptSourcesAreReadable(t *testing.T) {
	// The real host configuration parses; whether it names a mirror
	// depends on the host.
	if _, err := ReadAptSources(HostAptDir); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseAptSources(f *testing.F) {
	for _, p := range []string{"testdata/apt/host/sources.list", "testdata/apt/host/sources.list.d/20-debian.sources", "testdata/apt/oneline/sources.list"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("deb [ a=b\n"))
	f.Add([]byte("Types: deb\n URIs: x\n\tSuites: y\n\n\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range append(parseOneLineSources(b, "f"), parseDeb822Sources(b, "f")...) {
			if s.URI == "" || len(s.Types) == 0 || len(s.Suites) == 0 || strings.ContainsAny(s.URI, " \t\n") {
				t.Fatalf("bad entry %+v", s)
			}
		}
		if m := DebianMirror(append(parseOneLineSources(b, "f"), parseDeb822Sources(b, "f")...), ImageSuite); m != "" && CheckMirror(m) != nil {
			t.Fatalf("picked mirror %q fails CheckMirror", m)
		}
	})
}
