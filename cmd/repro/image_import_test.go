package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	reprotar "github.com/reprolab/repro/internal/tarball"
)

// imageHome returns a new REPRO_HOME holding the shared test image's pin
// and SBOM (the engine holds the image).
func imageHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	sandboxtest.PinInto(t, home)
	return home
}

// tarMember is a regular file that rewriteTar appends.
type tarMember struct {
	name string
	data []byte
}

// rewriteTar copies the tar src to dst in repro's tar form, passing each
// member's content through edit (a nil result keeps it), then appends
// add.
func rewriteTar(t *testing.T, src, dst string, edit func(name string, r io.Reader) []byte, add ...tarMember) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	tr, tw := tar.NewReader(in), reprotar.NewWriter(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b := edit(h.Name, tr); b != nil {
			if err := tw.AddBytes(h.Name, h.ModTime, b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tw.Add(h.Name, h.Size, h.ModTime, tr); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range add {
		if err := tw.AddBytes(m.name, sandbox.LayerTime, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// member returns one member of a tar file.
func member(t *testing.T, file, want string) []byte {
	t.Helper()
	var got []byte
	rewriteTar(t, file, filepath.Join(t.TempDir(), "copy.tar"), func(name string, r io.Reader) []byte {
		if name == want {
			got, _ = io.ReadAll(r)
			return got
		}
		return nil
	})
	return got
}

// TestImageExportImport simulates two machines with two REPRO_HOMEs: the
// image is signed with an OpenSSL-made key in one, exported, and imported
// and verified in the other. Without a trust file, with a key the trust
// file does not list, with a swapped SBOM, with another image carrying
// the pinned tag, with a modified image configuration or a modified layer
// the bundle is refused, before the engine loads anything, and the second
// home is left without a pin.
func TestImageExportImport(t *testing.T) {
	built := imageHome(t)
	keyPath, key := imageKey(t)
	_, other := imageKey(t)
	bundle := filepath.Join(t.TempDir(), "evaluator.tar")

	if r := repro(t, []string{"REPRO_HOME=" + built}, "image", "export", "--out", bundle); r.code != 3 || !strings.Contains(r.stderr, "repro image sign") {
		t.Fatalf("export of an unsigned image: exit %d %s", r.code, r.stderr)
	}
	if r := repro(t, []string{"REPRO_HOME=" + built}, "image", "sign", "--key", keyPath); r.code != 0 {
		t.Fatalf("sign: exit %d %s", r.code, r.stderr)
	}
	if r := repro(t, []string{"REPRO_HOME=" + built}, "image", "export", "--out", bundle); r.code != 0 {
		t.Fatalf("export: exit %d %s", r.code, r.stderr)
	}
	pin, err := sandbox.ReadPin(built)
	if err != nil {
		t.Fatal(err)
	}

	target := t.TempDir()
	env := []string{"REPRO_HOME=" + target}
	trusted := writeTrust(t, key, `{"require_signature": true}`)
	untrusted := writeTrust(t, other, `{"require_signature": true}`)
	dir := t.TempDir()
	variant := func(name string, edit func(name string, r io.Reader) []byte) string {
		p := filepath.Join(dir, name+".tar")
		rewriteTar(t, bundle, p, edit)
		return p
	}

	// A swapped SBOM: one package's version changed.
	sbom := member(t, bundle, "sbom.cdx.json")
	swapped := bytes.Replace(sbom, []byte(`"version": "`), []byte(`"version": "9:`), 1)
	if bytes.Equal(swapped, sbom) {
		t.Fatal("the SBOM has no version to change")
	}
	swappedSBOM := variant("swapped-sbom", func(n string, r io.Reader) []byte {
		if n == "sbom.cdx.json" {
			return swapped
		}
		return nil
	})
	// The same, with the pin edited to the new SBOM's digest.
	swappedPinned := variant("swapped-sbom-and-pin", func(n string, r io.Reader) []byte {
		switch n {
		case "sbom.cdx.json":
			return swapped
		case "image.json":
			b, _ := io.ReadAll(r)
			return bytes.Replace(b, []byte(pin.SBOMDigest), []byte(digest.Of(swapped).String()), 1)
		}
		return nil
	})
	// Another image, tagged with the pinned reference.
	var retagged bytes.Buffer
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(pin.Reference)
	if err := tarball.Write(tag, img, &retagged); err != nil {
		t.Fatal(err)
	}
	retaggedImage := variant("retagged", func(n string, r io.Reader) []byte {
		if n == "image.tar" {
			return retagged.Bytes()
		}
		return nil
	})
	// The real image with one change: its configuration, or its layer.
	inner := filepath.Join(dir, "image.tar")
	os.WriteFile(inner, member(t, bundle, "image.tar"), 0o644)
	editImage := func(edit func(n string, r io.Reader) []byte) []byte {
		p := filepath.Join(dir, "edited-image.tar")
		rewriteTar(t, inner, p, edit)
		b, _ := os.ReadFile(p)
		return b
	}
	cfgName := strings.TrimPrefix(pin.ID, "sha256:") + ".json"
	modifiedConfig := editImage(func(n string, r io.Reader) []byte {
		if n == cfgName {
			b, _ := io.ReadAll(r)
			return bytes.Replace(b, []byte(`"User":"`), []byte(`"User":"0`), 1)
		}
		return nil
	})
	modifiedLayer := editImage(func(n string, r io.Reader) []byte {
		if strings.HasSuffix(n, "/layer.tar") {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			tw.WriteHeader(&tar.Header{Name: "usr/bin/python3", Mode: 0o755, Size: 2})
			tw.Write([]byte("#!"))
			tw.Close()
			return b.Bytes()
		}
		return nil
	})
	if bytes.Equal(modifiedConfig, member(t, bundle, "image.tar")) {
		t.Fatal("the image configuration was not modified")
	}
	// The real image with other images' tags, or an OCI index beside
	// its manifest (what an engine with the containerd store loads).
	extraTags := editImage(func(n string, r io.Reader) []byte {
		if n == "manifest.json" {
			b, _ := io.ReadAll(r)
			return bytes.Replace(b, []byte(`"RepoTags":null`), []byte(`"RepoTags":["debian:bookworm"]`), 1)
		}
		return nil
	})
	ociIndex := filepath.Join(dir, "with-index.tar")
	rewriteTar(t, inner, ociIndex, func(string, io.Reader) []byte { return nil }, tarMember{"index.json", []byte(`{"schemaVersion":2,"manifests":[]}`)})
	withIndex, _ := os.ReadFile(ociIndex)
	withImage := func(name string, b []byte) string {
		return variant(name, func(n string, r io.Reader) []byte {
			if n == "image.tar" {
				return b
			}
			return nil
		})
	}

	for name, c := range map[string]struct {
		bundle, trust string
		code          int
		want          string
	}{
		"no trust file":    {bundle, "", 3, "needs a trust file"},
		"untrusted key":    {bundle, untrusted, 4, "not signed by a trusted key"},
		"swapped SBOM":     {swappedSBOM, trusted, 4, "swapped SBOM"},
		"SBOM and pin":     {swappedPinned, trusted, 4, "is for image"},
		"re-tagged image":  {retaggedImage, trusted, 4, "tags the image"},
		"modified config":  {withImage("config", modifiedConfig), trusted, 4, "not " + pin.ID},
		"modified layer":   {withImage("layer", modifiedLayer), trusted, 4, "has content"},
		"other tags":       {withImage("tags", extraTags), trusted, 4, "tags the image [\"debian:bookworm\"]"},
		"an OCI index":     {withImage("index", withIndex), trusted, 4, "OCI index.json"},
		"missing bundle":   {filepath.Join(dir, "nope.tar"), trusted, 3, "nope.tar"},
		"not a bundle":     {keyPath, trusted, 4, "not a tar file"},
		"no trusted image": {bundle, writeTrustRuns(t, key), 3, "needs a trust file"},
	} {
		args := []string{"image", "import", c.bundle}
		if c.trust != "" {
			args = append(args, "--trust", c.trust)
		}
		r := repro(t, env, args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%s: exit %d %q, want exit %d naming %q in one line", name, r.code, r.stderr, c.code, c.want)
		}
		if _, err := os.Stat(layout.Home(target).ImagePin()); err == nil {
			t.Fatalf("%s: a refused bundle left a pin", name)
		}
	}

	// The signed bundle under the default trust file.
	b, _ := os.ReadFile(trusted)
	os.WriteFile(layout.Home(target).Trust(), b, 0o644)
	r := repro(t, env, "image", "import", bundle)
	if r.code != 0 || !strings.Contains(r.stdout, keys.ID(key.PublicKey())) {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got, err := sandbox.ReadPin(target)
	if err != nil || got.ID != pin.ID || got.SBOMDigest != pin.SBOMDigest {
		t.Fatalf("imported pin %+v, %v", got, err)
	}
	if r := repro(t, env, "sandbox", "check"); r.code != 0 || !strings.Contains(r.stdout, `signature by "lab-images"`) {
		t.Errorf("sandbox check of the imported image: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// writeTrustRuns writes a trust file listing k for run records only.
func writeTrustRuns(t *testing.T, k *keys.Signer) string {
	t.Helper()
	p := writeTrust(t, k, `{}`)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"images"`), []byte(`"run-records"`), 1), 0o644)
	return p
}
