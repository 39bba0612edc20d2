package vulnscan_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/vulnscan"
)

var (
	testID       = "sha256:" + strings.Repeat("1", 64)
	testManifest = "sha256:" + strings.Repeat("2", 64)
)

func scanStatement(t *testing.T) *vulnscan.Statement {
	t.Helper()
	pkgs, sbom := fixturePackages(t)
	feed, err := vulnscan.LoadFeed(fixtureFeed(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := vulnscan.Scan(vulnscan.Input{
		ImageID: testID, ManifestDigest: testManifest, SBOMDigest: sbom,
		Packages: pkgs, Feed: feed, Ecosystem: "Debian:12", Now: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAttestationVerifies: the stored attestation is a DSSE envelope over
// an in-toto Statement about the image that verifies with the run key; a
// changed payload, another home's key, or another image is refused.
func TestAttestationVerifies(t *testing.T) {
	home := t.TempDir()
	st := scanStatement(t)
	path, err := vulnscan.Write(home, st)
	if err != nil {
		t.Fatal(err)
	}
	if path != layout.Home(home).ImageScan() {
		t.Errorf("stored at %q", path)
	}
	got, err := vulnscan.Read(home, testID, testManifest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != vulnscan.StatementType || len(got.Subject) != 2 || got.Subject[0].Digest["sha256"] != strings.Repeat("2", 64) ||
		got.Predicate.Feed.Digest != st.Predicate.Feed.Digest || got.Predicate.SBOMDigest != st.Predicate.SBOMDigest ||
		got.Predicate.ScannedAt.IsZero() || len(got.Predicate.Findings) != len(st.Predicate.Findings) || got.Predicate.MaxUnwaivedSeverity != "medium" {
		t.Errorf("read back %+v", got)
	}

	// Another image's scan does not count for this one.
	if _, err := vulnscan.Read(home, "sha256:"+strings.Repeat("3", 64), testManifest); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("another image ID: %v", err)
	}

	// A finding removed from the payload: the signature no longer verifies.
	env, _ := os.ReadFile(path)
	var e map[string]any
	json.Unmarshal(env, &e)
	payload, _ := base64.StdEncoding.DecodeString(e["payload"].(string))
	e["payload"] = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"unwaived": `, `"unwaived": 0, "x": `, 1)))
	tampered, _ := json.Marshal(e)
	os.WriteFile(path, tampered, 0o644)
	if _, err := vulnscan.Read(home, testID, testManifest); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "verify") {
		t.Errorf("tampered payload: %v", err)
	}

	// Signed in another home (another run key).
	other := t.TempDir()
	if _, err := vulnscan.Write(other, st); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(layout.Home(other).ImageScan())
	os.WriteFile(path, b, 0o644)
	if _, err := vulnscan.Read(home, testID, testManifest); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("another key: %v", err)
	}

	// No scan at all.
	if _, err := vulnscan.Read(t.TempDir(), testID, testManifest); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("no scan: %v", err)
	}
}
