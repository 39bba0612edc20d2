// Package ociattesttest builds small real OCI images for tests: a Debian
// style layer with a dpkg status file, written as an OCI image layout or
// pushed to a registry, and an OSV feed that matches one of its packages.
package ociattesttest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Status is the dpkg status file of the test image: two packages, zlib1g
// built from source zlib.
const Status = `Package: base-files
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u5

Package: zlib1g
Status: install ok installed
Architecture: amd64
Source: zlib
Version: 1:1.2.13.dfsg-1
`

// Image returns a one-layer OCI image whose layer holds var/lib/dpkg/status
// (status) and a file that makes the image unique (marker).
func Image(t testing.TB, status, marker string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{{"var/lib/dpkg/status", status}, {"opt/marker", marker}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON)
}

// Layout writes img as a new OCI image layout under dir and returns its
// manifest digest.
func Layout(t testing.TB, dir string, img v1.Image) string {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// Feed writes an OSV feed folder with one Debian:12 record that affects
// zlib before 1:1.2.13.dfsg-1+deb12u1 at urgency medium, and one that
// affects no package of the image.
func Feed(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range []map[string]any{
		{"schema_version": "1.6.0", "id": "DLA-0000-1", "modified": "2026-01-01T00:00:00Z", "aliases": []string{"CVE-2099-0001"},
			"summary": "made-up zlib advisory",
			"affected": []any{map[string]any{
				"package":            map[string]string{"ecosystem": "Debian:12", "name": "zlib"},
				"ranges":             []any{map[string]any{"type": "ECOSYSTEM", "events": []map[string]string{{"introduced": "0"}, {"fixed": "1:1.2.13.dfsg-1+deb12u1"}}}},
				"ecosystem_specific": map[string]string{"urgency": "medium"}}}},
		{"schema_version": "1.6.0", "id": "DLA-0000-2", "modified": "2026-01-01T00:00:00Z", "summary": "another package",
			"affected": []any{map[string]any{
				"package": map[string]string{"ecosystem": "Debian:12", "name": "openssl"},
				"ranges":  []any{map[string]any{"type": "ECOSYSTEM", "events": []map[string]string{{"introduced": "0"}, {"fixed": "3.0.99-1"}}}}}}},
	} {
		b, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(dir, r["id"].(string)+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
