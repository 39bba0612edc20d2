package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// TestImageSBOMCommand prints the SBOM of a pin copied without one: the
// CycloneDX form decodes with cyclonedx-go and lists the harness digest,
// the SPDX form lists the same packages, and the digest is pinned.
func TestImageSBOMCommand(t *testing.T) {
	e := sandboxtest.Engine(t)
	sandboxtest.Image(t, e)
	home := t.TempDir()
	pin, err := os.ReadFile(filepath.Join(sandboxtest.Home(), "sandbox", "image.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(home, "sandbox"), 0o700)
	if err := os.WriteFile(filepath.Join(home, "sandbox", "image.json"), pin, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REPRO_HOME=" + home}
	r := repro(t, env, "image", "sbom")
	if r.code != 0 {
		t.Fatalf("image sbom: %d %s", r.code, r.stderr)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(strings.NewReader(r.stdout), cdx.BOMFileFormatJSON).Decode(&bom); err != nil || bom.Components == nil {
		t.Fatalf("the printed SBOM does not decode: %v", err)
	}
	harness := false
	for _, c := range *bom.Components {
		if c.Hashes != nil && (*c.Hashes)[0].Value == wire.HarnessDigest.Hex() {
			harness = true
		}
	}
	if !harness {
		t.Error("the SBOM does not list the harness tree digest")
	}
	p, err := sandbox.ReadPin(home)
	if err != nil || p.SBOMDigest == "" || p.SBOMPackages+1 != len(*bom.Components) {
		t.Fatalf("pin after sbom: %+v %v", p, err)
	}

	s := repro(t, env, "image", "sbom", "--format", "spdx")
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if s.code != 0 || json.NewDecoder(bytes.NewReader([]byte(s.stdout))).Decode(&doc) != nil || doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) != len(*bom.Components)+1 {
		t.Fatalf("spdx: %d %s, %d packages", s.code, s.stderr, len(doc.Packages))
	}
	if u := repro(t, env, "image", "sbom", "--format", "xml"); u.code != 2 {
		t.Errorf("--format xml: exit %d %s", u.code, u.stderr)
	}
	// A changed SBOM is refused with exit 4.
	os.WriteFile(sandbox.SBOMPath(home), []byte(r.stdout+" "), 0o644)
	if x := repro(t, env, "image", "sbom"); x.code != 4 || !strings.Contains(x.stderr, "not the pinned") {
		t.Errorf("changed SBOM: exit %d %s", x.code, x.stderr)
	}
}
