package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

func componentProp(c cdx.Component, name string) string {
	if c.Properties != nil {
		for _, p := range *c.Properties {
			if p.Name == name {
				return p.Value
			}
		}
	}
	return ""
}

// TestImageSBOM upgrades a copy of the shared image's pin (made without an
// SBOM, and without its cached layer) from the image as the engine holds
// it, and checks what the SBOM says against the pin's package list, which
// the build read from the image's dpkg status.
func TestImageSBOM(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	home := t.TempDir()
	b, err := os.ReadFile(filepath.Join(sandboxtest.Home(), "sandbox", "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, "sandbox"), 0o700)
	if err := os.WriteFile(filepath.Join(home, "sandbox", "image.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		t.Fatal(err)
	}
	var python3 string
	for _, p := range pin.Packages {
		if v, ok := strings.CutPrefix(p, "python3="); ok {
			python3 = v
		}
	}
	if python3 == "" {
		t.Fatalf("the pin lists no python3: %v", pin.Packages)
	}
	trees := []sandbox.SBOMTree{{Name: "harness", Digest: digest.Of([]byte("harness"))}}
	s, err := sandbox.ImageSBOM(ctx, e, home, trees)
	if err != nil {
		t.Fatal(err)
	}
	bom, err := sandbox.DecodeSBOM(s.JSON)
	if err != nil {
		t.Fatalf("the SBOM does not decode with cyclonedx-go: %v", err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != img.ID {
		t.Fatalf("SBOM header: spec %v, metadata %+v", bom.SpecVersion, bom.Metadata)
	}
	if bom.Components == nil || len(*bom.Components) != len(pin.Packages)+1 || s.Packages != len(pin.Packages) {
		t.Fatalf("SBOM lists %d components (%d packages) for %d packages and one tree", len(*bom.Components), s.Packages, len(pin.Packages))
	}
	arch := regexp.MustCompile(`^[a-z0-9]+$`)
	var sawPython, sawTree bool
	for _, c := range *bom.Components {
		switch c.Name {
		case "python3":
			sawPython = true
			if c.Version != python3 || componentProp(c, "reprolab:deb:source") != "python3-defaults" ||
				!arch.MatchString(componentProp(c, "reprolab:deb:architecture")) || !strings.HasPrefix(c.PackageURL, "pkg:deb/debian/python3@") {
				t.Errorf("python3 component %+v (props %+v), want version %s from source python3-defaults", c, *c.Properties, python3)
			}
		case "harness":
			sawTree = c.Hashes != nil && len(*c.Hashes) == 1 && (*c.Hashes)[0].Value == trees[0].Digest.Hex()
		}
	}
	if !sawPython || !sawTree {
		t.Errorf("python3 listed %v, harness tree listed with its digest %v", sawPython, sawTree)
	}

	// The digest is pinned and every run's image carries it.
	pinned, err := sandbox.PinnedImage(ctx, e, home)
	if err != nil || pinned.SBOMDigest != s.Digest.String() {
		t.Fatalf("pinned image %+v %v, want SBOM digest %s", pinned, err, s.Digest)
	}
	again, err := sandbox.ImageSBOM(ctx, e, home, trees)
	if err != nil || again.Digest != s.Digest {
		t.Fatalf("second read: %v %v", again, err)
	}
	other, err := sandbox.ImageSBOM(ctx, e, home, []sandbox.SBOMTree{{Name: "harness", Digest: digest.Of([]byte("other"))}})
	if err != nil || other.Digest == s.Digest {
		t.Fatalf("another harness gave the same SBOM digest: %v", err)
	}

	// The same dpkg status gives the same SBOM; a changed one another.
	status, err := sandbox.PinnedDpkgStatus(ctx, e, home)
	if err != nil {
		t.Fatal(err)
	}
	build := func(status string) digest.SHA256 {
		b, err := sandbox.BuildSBOM(img, sandbox.ParseDpkgPackages([]byte(status)), trees)
		if err != nil {
			t.Fatal(err)
		}
		return digest.Of(b)
	}
	if build(string(status)) != s.Digest {
		t.Error("the SBOM built again from the same dpkg status differs")
	}
	stanza := regexp.MustCompile(`(?m)^Package: python3\n(?:[^\n]+\n)*?Version: ` + regexp.QuoteMeta(python3) + `\n`)
	if !stanza.MatchString(string(status)) {
		t.Fatal("no python3 stanza with its version in the dpkg status")
	}
	bumped := stanza.ReplaceAllStringFunc(string(status), func(s string) string { return strings.Replace(s, python3, python3+"+local1", 1) })
	extra := string(status) + "\nPackage: extra-tool\nStatus: install ok installed\nArchitecture: all\nVersion: 1.0-1\n"
	removed := stanza.ReplaceAllString(string(status), "Package: python3-gone\n")
	seen := map[digest.SHA256]string{s.Digest: "original"}
	for name, st := range map[string]string{"python3 version bumped": bumped, "package added": extra, "python3 removed": removed} {
		d := build(st)
		if prev, ok := seen[d]; ok {
			t.Errorf("%s: same SBOM as %s", name, prev)
		}
		seen[d] = name
	}

	// A pin copied without its SBOM gets the same SBOM again.
	if err := os.Remove(sandbox.SBOMPath(home)); err != nil {
		t.Fatal(err)
	}
	if again, err := sandbox.ImageSBOM(ctx, e, home, trees); err != nil || again.Digest != s.Digest {
		t.Fatalf("SBOM made again: %v %v", again, err)
	}

	// A changed SBOM file is refused, not silently made again.
	if err := os.WriteFile(sandbox.SBOMPath(home), append(s.JSON, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.ImageSBOM(ctx, e, home, trees); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("a changed SBOM file: %v", err)
	}
}
