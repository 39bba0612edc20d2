package sandbox_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	reprotar "github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
)

// archiveOf writes img as SaveImage would (a docker-save tarball of gzip
// layers, as go-containerregistry writes them, in repro's tar form) and
// returns its bytes, ID and diff IDs.
func archiveOf(t testing.TB, img v1.Image) ([]byte, string, []string) {
	t.Helper()
	var saved, b bytes.Buffer
	tag, _ := name.NewTag(sandbox.ImageRepository + ":test")
	if err := tarball.Write(tag, img, &saved); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.WriteImageArchive(&saved, &b); err != nil {
		t.Fatal(err)
	}
	id, _ := img.ConfigName()
	cf, _ := img.ConfigFile()
	var diffs []string
	for _, d := range cf.RootFS.DiffIDs {
		diffs = append(diffs, d.String())
	}
	return b.Bytes(), id.String(), diffs
}

// editArchive rewrites the members of a tar held in memory in repro's tar
// form, then appends add.
func editArchive(t testing.TB, in []byte, edit func(h *tar.Header, b []byte) []byte, add ...tarballtest.File) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(in))
	var out bytes.Buffer
	tw := reprotar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if nb := edit(h, b); nb != nil {
			b = nb
		}
		if err := tw.AddBytes(h.Name, sandbox.LayerTime, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range add {
		if err := tw.AddBytes(f.Name, sandbox.LayerTime, f.Data); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return out.Bytes()
}

// members are the files of a tar held in memory.
func members(t testing.TB, in []byte) []tarballtest.File {
	t.Helper()
	fs, err := tarballtest.ReadGo(in)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func writeTemp(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckImageArchive: the archive check that runs before the engine
// sees an archive accepts the image it wants and refuses another image, a
// changed configuration, a changed layer, a second image, a link, a name
// that climbs out, an archive not in repro's tar form, tags, an OCI
// index.json or any other member the manifest does not name, and a
// member smuggled past the end marker.
func TestCheckImageArchive(t *testing.T) {
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	good, id, diffs := archiveOf(t, img)
	if err := sandbox.CheckImageArchive(writeTemp(t, good), id, diffs); err != nil {
		t.Fatalf("the image's own archive: %v", err)
	}
	other, _ := random.Image(2048, 2)
	otherArchive, otherID, _ := archiveOf(t, other)
	layerName := ""
	editArchive(t, good, func(h *tar.Header, b []byte) []byte {
		if strings.HasSuffix(h.Name, ".tar.gz") && layerName == "" {
			layerName = h.Name
		}
		return nil
	})
	cases := map[string]struct {
		archive []byte
		layers  []string
		want    string
	}{
		"another image": {otherArchive, diffs, "holds image " + otherID},
		"other layers":  {good, []string{diffs[0]}, "its layers are"},
		"changed config": {editArchive(t, good, func(h *tar.Header, b []byte) []byte {
			if strings.HasPrefix(h.Name, "sha256:") {
				return bytes.Replace(b, []byte(`"architecture"`), []byte(`"architecture" `), 1)
			}
			return nil
		}), diffs, "not " + id},
		"changed layer": {editArchive(t, good, func(h *tar.Header, b []byte) []byte {
			if h.Name == layerName {
				var z bytes.Buffer
				tw := tar.NewWriter(&z)
				tw.WriteHeader(&tar.Header{Name: "bin/sh", Mode: 0o755, Size: 1})
				tw.Write([]byte("x"))
				tw.Close()
				return z.Bytes()
			}
			return nil
		}), diffs, "has content"},
		"two images": {editArchive(t, good, func(h *tar.Header, b []byte) []byte {
			if h.Name == "manifest.json" {
				s := strings.TrimSpace(string(b))
				return []byte(s[:len(s)-1] + "," + s[1:])
			}
			return nil
		}), diffs, "lists 2 images"},
		"a link":        {append(good[:len(good)-1024:len(good)-1024], append(tarballtest.Block("link", tar.TypeSymlink, 0), tarballtest.End()...)...), diffs, "symbolic link"},
		"climbing name": {append(tarballtest.Entry("../"+layerName, []byte("x")), good...), diffs, "not a clean relative path"},
		"not a tar":     {[]byte("not an archive at all, but long enough to be read as a tar header block"), diffs, "not an image archive in repro's tar form"},
		"as go-containerregistry writes it": {func() []byte {
			var b bytes.Buffer
			tag, _ := name.NewTag(sandbox.ImageRepository + ":test")
			tarball.Write(tag, img, &b)
			return b.Bytes()
		}(), diffs, "tags the image [\"reprolab/evaluator:test\"]"},
		"tags": {editArchive(t, good, func(h *tar.Header, b []byte) []byte {
			if h.Name == "manifest.json" {
				return bytes.Replace(b, []byte(`"RepoTags":null`), []byte(`"RepoTags":["reprolab/evaluator:other","debian:bookworm"]`), 1)
			}
			return nil
		}), diffs, "tags the image"},
		"an OCI index": {editArchive(t, good, func(*tar.Header, []byte) []byte { return nil },
			tarballtest.File{Name: "index.json", Data: []byte(`{"schemaVersion":2,"manifests":[]}`)}), diffs, "OCI index.json"},
		"a legacy repositories file": {editArchive(t, good, func(*tar.Header, []byte) []byte { return nil },
			tarballtest.File{Name: "repositories", Data: []byte(`{"debian":{"bookworm":"x"}}`)}), diffs, "member \"repositories\" is not named by manifest.json"},
		"an unknown manifest field": {editArchive(t, good, func(h *tar.Header, b []byte) []byte {
			if h.Name == "manifest.json" {
				return bytes.Replace(b, []byte(`"RepoTags"`), []byte(`"Parent":"x","RepoTags"`), 1)
			}
			return nil
		}), diffs, "manifest.json"},
		"an OCI index after a sparse record": {tarballtest.Smuggle(members(t, good),
			append(members(t, good), tarballtest.File{Name: "index.json", Data: []byte(`{"schemaVersion":2}`)})), diffs, "GNU.sparse.realsize"},
	}
	for name, c := range cases {
		err := sandbox.CheckImageArchive(writeTemp(t, c.archive), id, c.layers)
		if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want exit 4 naming %q", name, err, c.want)
		}
	}
}

// FuzzCheckImageArchive: any bytes as an archive give an answer, never a
// panic, and never accept an archive for an ID its bytes do not hold.
func FuzzCheckImageArchive(f *testing.F) {
	img, err := random.Image(256, 1)
	if err != nil {
		f.Fatal(err)
	}
	good, id, diffs := archiveOf(f, img)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "a.tar")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := sandbox.CheckImageArchive(p, id, diffs); err == nil && !bytes.Contains(b, []byte("manifest.json")) {
			t.Fatalf("accepted an archive without a manifest")
		}
	})
}

// TestLoadImageRefusesAReplacedLayer saves the evaluator image, replaces
// its layer and loads it back under the same ID: the engine, which holds
// that ID, would answer "Loaded image ID" without reading the layer, so
// LoadImage must refuse it itself (exit 4, naming the tarball). The saved
// tarball as it is loads.
func TestLoadImageRefusesAReplacedLayer(t *testing.T) {
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	ctx := context.Background()
	var saved bytes.Buffer
	if err := e.SaveImage(ctx, img.ID, &saved); err != nil {
		t.Fatal(err)
	}
	good := writeTemp(t, saved.Bytes())
	if err := e.LoadImage(ctx, good, img, nil); err != nil {
		t.Fatalf("the saved image: %v", err)
	}
	replaced := editArchive(t, saved.Bytes(), func(h *tar.Header, b []byte) []byte {
		if strings.HasSuffix(h.Name, "/layer.tar") {
			var z bytes.Buffer
			tw := tar.NewWriter(&z)
			tw.WriteHeader(&tar.Header{Name: "usr/bin/python3", Mode: 0o755, Size: 2})
			tw.Write([]byte("#!"))
			tw.Close()
			return z.Bytes()
		}
		return nil
	})
	bad := writeTemp(t, replaced)
	err := e.LoadImage(ctx, bad, img, nil)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "has content") {
		t.Fatalf("a replaced layer: %v (exit %d), want exit 4 naming %q", err, exitcode.Of(err), bad)
	}
	if err := e.SaveImage(ctx, "sha256:"+strings.Repeat("ab", 32), io.Discard); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("saving an image the engine does not hold: %v", err)
	}
}
