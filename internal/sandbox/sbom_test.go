package sandbox

import (
	"archive/tar"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

func TestParseDpkgPackages(t *testing.T) {
	status := `Package: python3
Status: install ok installed
Architecture: amd64
Source: python3-defaults (3.11.2-1)
Version: 3.11.2-1+b1
Description: interactive high-level object-oriented language
 Version: 9 in a description is not a field

Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.36-9+deb12u10

Package: removed
Status: deinstall ok config-files
Version: 1.0

Package: bash
Status: install ok installed
Architecture: amd64
Version: 5.2.15-2+b13
`
	got := parseDpkgPackages([]byte(status))
	want := []DebPackage{
		{"bash", "5.2.15-2+b13", "amd64", "bash", "5.2.15-2+b13"},
		{"libc6", "2.36-9+deb12u10", "amd64", "glibc", "2.36-9+deb12u10"},
		{"python3", "3.11.2-1+b1", "amd64", "python3-defaults", "3.11.2-1"},
	}
	if len(got) != len(want) {
		t.Fatalf("packages %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("package %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if p := debPURL(got[2]); p != "pkg:deb/debian/python3@3.11.2-1%2Bb1?arch=amd64&distro=debian-bookworm" {
		t.Errorf("purl %s", p)
	}
	if _, err := BuildSBOM(Image{ID: "sha256:x"}, nil, nil); err == nil {
		t.Error("an SBOM without packages was written")
	}
}

func layerTar(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestLayerDpkgStatus(t *testing.T) {
	good := layerTar(t, &tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "var/lib/dpkg/status", Typeflag: tar.TypeReg, Size: 5, Mode: 0o644})
	if b, err := verifiedLayerStatus(bytes.NewReader(good), digest.Of(good), "layer"); err != nil || string(b) != "xxxxx" {
		t.Fatalf("good layer: %q %v", b, err)
	}
	// A layer other than the pinned one is refused even when it reads.
	if _, err := verifiedLayerStatus(bytes.NewReader(good), digest.Of([]byte("other")), "layer"); err == nil {
		t.Error("a layer with another digest was read")
	}
	for name, layer := range map[string][]byte{
		"no status":        layerTar(t, &tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}),
		"status a symlink": layerTar(t, &tar.Header{Name: "var/lib/dpkg/status", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}),
		"not a tar":        []byte("not a tar at all, just text that is long enough to be read"),
	} {
		if _, err := verifiedLayerStatus(bytes.NewReader(layer), digest.Of(layer), "layer"); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// TestSBOMPackagesRoundTrip: the packages a scan reads back from an SBOM
// are those written, with their source names and versions; a package
// component that lost its source is refused rather than skipped.
func TestSBOMPackagesRoundTrip(t *testing.T) {
	pkgs := parseDpkgPackages([]byte("Package: libfoo1\nStatus: install ok installed\nArchitecture: amd64\nSource: foo (1.0-2)\nVersion: 1.0-2+b1\n\nPackage: zlib1g\nStatus: install ok installed\nArchitecture: amd64\nSource: zlib\nVersion: 1:1.2.13.dfsg-1\n"))
	b, err := BuildSBOM(Image{ID: "sha256:" + strings.Repeat("1", 64)}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SBOMPackages(b)
	if err != nil || !slices.Equal(got, pkgs) || got[0].SourceVersion != "1.0-2" || got[1].Source != "zlib" {
		t.Fatalf("read back %+v (%v), wrote %+v", got, err, pkgs)
	}
	stripped := bytes.Replace(b, []byte(`"reprolab:deb:source"`), []byte(`"reprolab:deb:other"`), 1)
	if _, err := SBOMPackages(stripped); err == nil || !strings.Contains(err.Error(), "lacks") {
		t.Errorf("a package without its source: %v", err)
	}
}
