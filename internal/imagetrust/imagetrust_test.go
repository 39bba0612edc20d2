package imagetrust_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/testenv"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
)

// opensslKey makes an image key with OpenSSL, as a user would, and loads it.
func opensslKey(t testing.TB) (string, *keys.Signer) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		testenv.Missing(t, "openssl", "apt-get install openssl (scripts/deps.sh)")
	}
	p := filepath.Join(t.TempDir(), "image.key")
	if out, err := exec.Command("openssl", "genpkey", "-algorithm", "ed25519", "-out", p).CombinedOutput(); err != nil {
		t.Fatalf("openssl genpkey: %v: %s", err, out)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := keys.LoadPrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func sha(s string) string { return digest.Of([]byte(s)).String() }

// fakeHome pins an image of made-up digests under a new REPRO_HOME (the
// policy reads the pin; no engine is needed to sign or check it).
func fakeHome(t testing.TB) (string, *sandbox.Pin) {
	t.Helper()
	home := t.TempDir()
	sbom := []byte(`{"bomFormat": "CycloneDX"}`)
	pin := &sandbox.Pin{
		Image:     sandbox.Image{ID: sha("config"), ManifestDigest: sha("manifest"), SBOMDigest: digest.Of(sbom).String()},
		Reference: sandbox.ImageRepository + ":test", LayerDigest: sha("layer"),
	}
	writePin(t, home, pin)
	if err := os.WriteFile(layout.Home(home).ImageSBOM(), sbom, 0o644); err != nil {
		t.Fatal(err)
	}
	return home, pin
}

func writePin(t testing.TB, home string, pin *sandbox.Pin) {
	t.Helper()
	if err := os.MkdirAll(layout.Home(home).Sandbox(), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pin)
	if err := os.WriteFile(layout.Home(home).ImagePin(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trustFile writes a trust file listing pub for images with the given
// image policy (JSON) and returns its path.
func trustFile(t testing.TB, dir string, pub *keys.Signer, image string) string {
	t.Helper()
	kb, _ := json.Marshal([]trust.Key{trust.NewKey("lab-images", pub.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)})
	p := filepath.Join(dir, "trust.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "keys": `+string(kb)+`, "image": `+image+`}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantCode(t *testing.T, what string, err error, code exitcode.Code, msg string) {
	t.Helper()
	if exitcode.Of(err) != code || err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: got exit %d (%v), want exit %d with %q", what, exitcode.Of(err), err, code, msg)
	}
}

// TestSignatureRequired signs a pinned image with an OpenSSL-made key and
// checks it under a trust file that requires a signature; then tries what
// an attacker would: no signature, a key the trust file does not list, a
// swapped SBOM, another image, an edited statement, a statement moved to
// another envelope type. Each is refused with exit 4.
func TestSignatureRequired(t *testing.T) {
	home, pin := fakeHome(t)
	_, key := opensslKey(t)
	_, other := opensslKey(t)
	now := time.Now().UTC()

	// No trust file: today's behaviour, nothing checked, also unsigned.
	v, err := imagetrust.Check(home, imagetrust.Options{}, pin, pin.SBOMDigest)
	if err != nil || v.Policy != "none" || v.Signature != nil {
		t.Fatalf("no trust file: %+v, %v", v, err)
	}
	tf := trustFile(t, t.TempDir(), key, `{"require_signature": true}`)
	o := imagetrust.Options{TrustPath: tf}

	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "unsigned image", err, exitcode.Integrity, "repro image sign --key")

	path, pred, err := imagetrust.Sign(home, key, pin.SBOMDigest, now)
	if err != nil {
		t.Fatal(err)
	}
	if pred.ImageID != pin.ID || pred.SBOMDigest != pin.SBOMDigest || path != layout.Home(home).ImageSignature() {
		t.Fatalf("signed %+v at %q", pred, path)
	}
	v, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	if err != nil {
		t.Fatalf("signed image: %v", err)
	}
	if v.Policy != "custom" || v.Signature == nil || v.Signature.KeyID != keys.ID(key.PublicKey()) || v.Signature.KeyName != "lab-images" || v.TrustFileDigest == "" {
		t.Fatalf("verification %+v", v)
	}

	// The same signature under a trust file that lists another key.
	_, err = imagetrust.Check(home, imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), other, `{"require_signature": true}`)}, pin, pin.SBOMDigest)
	wantCode(t, "untrusted key", err, exitcode.Integrity, "not signed by a trusted key")

	// A swapped SBOM: the pin's SBOM digest is not the signed one.
	_, err = imagetrust.Check(home, o, pin, sha("another sbom"))
	wantCode(t, "swapped SBOM", err, exitcode.Integrity, "is for image")

	// Another image under the same signature (a re-tagged or rebuilt one).
	moved := *pin
	moved.ID = sha("another config")
	_, err = imagetrust.Check(home, o, &moved, pin.SBOMDigest)
	wantCode(t, "another image", err, exitcode.Integrity, "is for image")

	// An edited statement keeps the signature of the original.
	sig := layout.Home(home).ImageSignature()
	orig, _ := os.ReadFile(sig)
	var env map[string]any
	json.Unmarshal(orig, &env)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	edited := strings.Replace(string(payload), pin.ID[len("sha256:"):], moved.ID[len("sha256:"):], -1)
	env["payload"] = base64.StdEncoding.EncodeToString([]byte(edited))
	b, _ := json.Marshal(env)
	os.WriteFile(sig, b, 0o644)
	_, err = imagetrust.Check(home, o, &moved, pin.SBOMDigest)
	wantCode(t, "edited statement", err, exitcode.Integrity, "signature does not verify")

	// A statement signed by the trusted key for another payload type.
	env["payload"] = base64.StdEncoding.EncodeToString(payload)
	env["payloadType"] = "application/json"
	b, _ = json.Marshal(env)
	os.WriteFile(sig, b, 0o644)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "other payload type", err, exitcode.Integrity, "payload type")

	// A signature by the trusted key but outside its window.
	os.WriteFile(sig, orig, 0o644)
	dir := t.TempDir()
	kb, _ := json.Marshal([]trust.Key{trust.NewKey("old", key.PublicKey(), []trust.Purpose{trust.Images}, nil, &[]time.Time{now.Add(-time.Hour)}[0])})
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version": 1, "keys": `+string(kb)+`, "image": {"require_signature": true}}`), 0o644)
	_, err = imagetrust.Check(home, imagetrust.Options{TrustPath: filepath.Join(dir, "trust.json")}, pin, pin.SBOMDigest)
	wantCode(t, "expired key", err, exitcode.Integrity, "not valid at the signing time")

	// A run key is not an image key: a key listed only for run records
	// does not admit an image.
	kb, _ = json.Marshal([]trust.Key{
		trust.NewKey("runs", key.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil),
		trust.NewKey("images", other.PublicKey(), []trust.Purpose{trust.Images}, nil, nil),
	})
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version": 1, "keys": `+string(kb)+`, "image": {"require_signature": true}}`), 0o644)
	_, err = imagetrust.Check(home, imagetrust.Options{TrustPath: filepath.Join(dir, "trust.json")}, pin, pin.SBOMDigest)
	wantCode(t, "run-records key", err, exitcode.Integrity, "not signed by a trusted key")

	// A policy that requires nothing checks nothing, as without a file.
	os.Remove(sig)
	v, err = imagetrust.Check(home, imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), key, `{}`)}, pin, pin.SBOMDigest)
	if err != nil || v.Policy != "none" {
		t.Errorf("empty policy: %+v, %v", v, err)
	}
}

// TestRunKeyIsNotAnImageKey: the key that signs run records cannot sign
// the image.
func TestRunKeyIsNotAnImageKey(t *testing.T) {
	home, pin := fakeHome(t)
	writeScan(t, home, pin, pin.SBOMDigest, time.Now(), "none", 0) // makes the run key
	p := filepath.Join(layout.Home(home).Keys(), "run-signing.key")
	run, err := keys.LoadPrivate(p)
	if err != nil {
		b, rerr := os.ReadFile(p)
		if rerr != nil {
			t.Fatal(rerr)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("run key %q: %v", p, err)
		}
		if run, err = keys.FromSeed(blk.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = imagetrust.Sign(home, run, pin.SBOMDigest, time.Now())
	wantCode(t, "signing with the run key", err, exitcode.Usage, "run key")
	if _, err := os.Stat(layout.Home(home).ImageSignature()); err == nil {
		t.Error("the run key signed the image")
	}
	_, other := opensslKey(t)
	if _, _, err := imagetrust.Sign(home, other, pin.SBOMDigest, time.Now()); err != nil {
		t.Errorf("an image key: %v", err)
	}
}

// TestTrustFileFailsClosed: a named trust file that is missing, or a
// default one that does not parse, stops the run (exit 3).
func TestTrustFileFailsClosed(t *testing.T) {
	home, pin := fakeHome(t)
	_, err := imagetrust.Check(home, imagetrust.Options{TrustPath: filepath.Join(t.TempDir(), "nope.json")}, pin, pin.SBOMDigest)
	wantCode(t, "missing named trust file", err, exitcode.Precondition, "nope.json")
	os.WriteFile(layout.Home(home).Trust(), []byte(`{"version": 1, "keys": [], "image": {"require_signature": "yes"}}`), 0o644)
	_, err = imagetrust.Check(home, imagetrust.Options{}, pin, pin.SBOMDigest)
	wantCode(t, "corrupt default trust file", err, exitcode.Precondition, "trust.json")
}

// writeScan stores a scan attestation of pin, signed with home's run key.
func writeScan(t testing.TB, home string, pin *sandbox.Pin, sbom string, at time.Time, maxSeverity string, unwaived int) {
	t.Helper()
	hex := func(d string) string { return d[len("sha256:"):] }
	st := &vulnscan.Statement{
		Type: vulnscan.StatementType, PredicateType: vulnscan.PredicateType,
		Subject: []vulnscan.Subject{
			{Name: vulnscan.SubjectManifest, Digest: map[string]string{"sha256": hex(pin.ManifestDigest)}},
			{Name: vulnscan.SubjectImageID, Digest: map[string]string{"sha256": hex(pin.ID)}},
		},
		Predicate: vulnscan.Predicate{
			ImageID: pin.ID, ManifestDigest: pin.ManifestDigest, SBOMDigest: sbom, ScannedAt: at,
			Feed: vulnscan.FeedInfo{Digest: sha("feed"), Ecosystem: sandbox.ImageOSVEcosystem}, Findings: []vulnscan.Finding{}, Waivers: []vulnscan.Waiver{},
			Unwaived: unwaived, MaxUnwaivedSeverity: maxSeverity,
		},
	}
	if _, err := vulnscan.Write(home, st); err != nil {
		t.Fatal(err)
	}
}

// TestScanRequired: a policy with a scan needs a scan attestation of the
// pinned image and SBOM, no older than max_age_days, with nothing
// unwaived above max_severity.
func TestScanRequired(t *testing.T) {
	home, pin := fakeHome(t)
	_, key := opensslKey(t)
	now := time.Now().UTC().Truncate(time.Second)
	o := imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), key, `{"scan": {"max_age_days": 7, "max_severity": "high"}}`), Now: now}

	_, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "no scan", err, exitcode.Precondition, "repro image scan --osv DIR")

	writeScan(t, home, pin, pin.SBOMDigest, now.Add(-8*24*time.Hour), "none", 0)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "stale scan", err, exitcode.Precondition, "stale")

	writeScan(t, home, pin, pin.SBOMDigest, now.Add(-time.Hour), "critical", 2)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "critical finding", err, exitcode.Precondition, "above the trust file's max_severity high")

	writeScan(t, home, pin, pin.SBOMDigest, now.Add(-time.Hour), "unknown", 1)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "unrated finding", err, exitcode.Precondition, "above the trust file's max_severity high")

	writeScan(t, home, pin, sha("another sbom"), now.Add(-time.Hour), "none", 0)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "scan of another SBOM", err, exitcode.Integrity, "read SBOM")

	writeScan(t, home, pin, pin.SBOMDigest, now.Add(24*time.Hour), "none", 0)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "scan from the future", err, exitcode.Integrity, "future")

	moved := *pin
	moved.ID = sha("another config")
	writeScan(t, home, &moved, pin.SBOMDigest, now.Add(-time.Hour), "none", 0)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "scan of another image", err, exitcode.Integrity, "another image")

	writeScan(t, home, pin, pin.SBOMDigest, now.Add(-6*24*time.Hour), "high", 1)
	v, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	if err != nil {
		t.Fatalf("fresh scan within the policy: %v", err)
	}
	if v.Scan == nil || v.Scan.AgeSeconds != 6*24*3600 || v.Scan.MaxUnwaivedSeverity != "high" || v.Scan.AttestationDigest == "" {
		t.Errorf("scan check %+v", v.Scan)
	}

	// The attestation must carry the run key's signature.
	p := layout.Home(home).ImageScan()
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"sig": "`, `"sig": "AAAA`, 1)), 0o644)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "forged scan", err, exitcode.Integrity, "scan attestation")
}

// TestProductionProfile: the one setting requires the gVisor runtime, a
// signature and a fresh scan; each missing part refuses the run.
func TestProductionProfile(t *testing.T) {
	home, pin := fakeHome(t)
	_, key := opensslKey(t)
	now := time.Now().UTC()
	o := imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), key, `{"profile": "production"}`), Now: now,
		RuntimeAdvisories: sandbox.AssessRuntime(t.TempDir(), sandbox.Runsc, "/usr/bin/runsc", "runsc version 0.0~20221219.0")}
	o.Runtime = trust.RuntimeRunc
	_, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "production under runc", err, exitcode.Precondition, "requires the runsc runtime")
	o.Runtime = trust.RuntimeGVisor
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "production unsigned", err, exitcode.Integrity, "not signed")
	if _, _, err := imagetrust.Sign(home, key, pin.SBOMDigest, now); err != nil {
		t.Fatal(err)
	}
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "production unscanned", err, exitcode.Precondition, "scan")
	writeScan(t, home, pin, pin.SBOMDigest, now.Add(-time.Hour), "none", 0)
	v, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	if err != nil || v.Policy != trust.ProfileProduction || v.Runtime == nil || v.Runtime.Used != trust.RuntimeGVisor || v.Signature == nil || v.Scan == nil || v.Runtime.Advisories == nil {
		t.Fatalf("production: %+v, %v", v, err)
	}
	// A runtime whose escapes were not judged is refused.
	noAdv := o
	noAdv.RuntimeAdvisories = nil
	_, err = imagetrust.Check(home, noAdv, pin, pin.SBOMDigest)
	wantCode(t, "production without advisories", err, exitcode.Precondition, "could not be judged")
	// A policy that names runc refuses a run under runsc: the runtime is
	// what the trust file says, not "at least as strong".
	_, err = imagetrust.Check(home, imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), key, `{"runtime": "runc"}`), Runtime: trust.RuntimeGVisor}, pin, pin.SBOMDigest)
	wantCode(t, "runc policy under runsc", err, exitcode.Precondition, "requires the runc runtime")
}

// BenchmarkCheck measures what the image policy adds to every sandboxed
// run: reading the trust file, verifying the signature and the scan.
func BenchmarkCheck(b *testing.B) {
	home, pin := fakeHome(b)
	_, key := opensslKey(b)
	now := time.Now().UTC()
	if _, _, err := imagetrust.Sign(home, key, pin.SBOMDigest, now); err != nil {
		b.Fatal(err)
	}
	writeScan(b, home, pin, pin.SBOMDigest, now, "none", 0)
	tf := trustFile(b, b.TempDir(), key, `{"require_signature": true, "scan": {"max_age_days": 7, "max_severity": "high"}}`)
	o := imagetrust.Options{TrustPath: tf, Now: now}
	for b.Loop() {
		if _, err := imagetrust.Check(home, o, pin, pin.SBOMDigest); err != nil {
			b.Fatal(err)
		}
	}
}

// openRunc is runc 1.1.5 as Debian bookworm ships it: CVE-2024-21626
// backported, the three 2025 escapes open.
func openRunc() *sandbox.RuntimeAssessment {
	a := &sandbox.RuntimeAssessment{Runtime: sandbox.Runc, Version: "runc version 1.1.5+ds1", Upstream: "1.1.5", Package: "runc", PackageVersion: "1.1.5+ds1-1+deb12u1"}
	for _, adv := range sandbox.RuntimeAdvisories {
		if adv.Runtime != sandbox.Runc {
			continue
		}
		v := sandbox.AdvisoryAffected
		if adv.ID == "CVE-2024-21626" {
			v = sandbox.AdvisoryBackported
		}
		a.Findings = append(a.Findings, sandbox.RuntimeFinding{ID: adv.ID, Fixed: adv.Fixed, Verdict: v, Evidence: "test"})
	}
	return a
}

// TestRuntimeEscapes: a policy that refuses open runtime escapes refuses
// runc with the 2025 escapes open, unless each is waived with a reason
// and a date; an expired, reasonless or misaddressed waiver does not
// help, and an unknown verdict counts as open.
func TestRuntimeEscapes(t *testing.T) {
	home, pin := fakeHome(t)
	_, key := opensslKey(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	check := func(waivers string, a *sandbox.RuntimeAssessment) (*imagetrust.Verification, error) {
		pol := `{"runtime": "runc", "refuse_runtime_escapes": true`
		if waivers != "" {
			pol += `, "runtime_waivers": ` + waivers
		}
		pol += "}"
		return imagetrust.Check(home, imagetrust.Options{TrustPath: trustFile(t, t.TempDir(), key, pol), Now: now, Runtime: "runc", RuntimeAdvisories: a}, pin, pin.SBOMDigest)
	}
	_, err := check("", openRunc())
	wantCode(t, "open escapes", err, exitcode.Precondition, "3 open known escape(s): CVE-2025-31133 is affected")
	w := func(id, pkg, reason, exp string) string {
		return fmt.Sprintf(`{"id": %q, "package": %q, "reason": %q, "expires": %q}`, id, pkg, reason, exp)
	}
	all := "[" + w("CVE-2025-31133", "runc", "single-user preview host", "2027-01-31") + "," +
		w("CVE-2025-52565", "runc", "single-user preview host", "2027-01-31") + "," +
		w("CVE-2025-52881", "runc", "single-user preview host", "2027-01-31") + "]"
	v, err := check(all, openRunc())
	if err != nil || v.Runtime == nil || len(v.Runtime.Waived) != 3 || v.Runtime.Advisories == nil {
		t.Fatalf("all waived: %+v, %v", v, err)
	}
	two := "[" + w("CVE-2025-31133", "runc", "r", "2027-01-31") + "," + w("CVE-2025-52565", "runc", "r", "2027-01-31") + "]"
	_, err = check(two, openRunc())
	wantCode(t, "one left open", err, exitcode.Precondition, "1 open known escape(s): CVE-2025-52881")
	_, err = check("["+w("CVE-2025-31133", "runc", "r", "2026-11-30")+"]", openRunc())
	wantCode(t, "expired waiver", err, exitcode.Precondition, "expired on 2026-11-30")
	_, err = check("["+w("CVE-2025-31133", "runc", " ", "2027-01-31")+"]", openRunc())
	wantCode(t, "waiver without a reason", err, exitcode.Precondition, "gives no reason")
	_, err = check("["+w("CVE-2025-31133", "runsc", "r", "2027-01-31")+"]", openRunc())
	wantCode(t, "waiver for another runtime", err, exitcode.Precondition, "CVE-2025-31133 is affected")
	unknown := openRunc()
	for i := range unknown.Findings {
		unknown.Findings[i].Verdict = sandbox.AdvisoryUnknown
	}
	_, err = check(all, unknown)
	wantCode(t, "unknown counts as open", err, exitcode.Precondition, "CVE-2024-21626 is unknown")
	fixed := sandbox.AssessRuntime(t.TempDir(), sandbox.Runc, "/usr/bin/runc", "runc version 1.3.3")
	if v, err := check("", fixed); err != nil || len(v.Runtime.Advisories.OpenFindings()) != 0 {
		t.Errorf("fixed runc: %+v, %v", v, err)
	}
	if _, err := trust.Parse([]byte(`{"version": 1, "keys": [], "image": {"runtime_waivers": {"id": "x"}}}`)); err == nil {
		t.Error("runtime_waivers that is not an array was accepted")
	}
}

// TestRuncTakesAWaiver: where runc has open known escapes (runsc is then
// the default), a run that chooses runc is refused without a trust file,
// or under one that does not waive each escape, whatever its policy asks;
// each waived (reason and date), it runs with the waivers recorded. Under
// runsc, or a runc with none open, nothing is asked.
func TestRuncTakesAWaiver(t *testing.T) {
	home, pin := fakeHome(t)
	_, key := opensslKey(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	o := imagetrust.Options{Now: now, Runtime: "runc", RuntimeAdvisories: openRunc()}
	_, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "no trust file", err, exitcode.Precondition, "runtime_waivers")
	o.TrustPath = trustFile(t, t.TempDir(), key, `{}`)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "a trust file without waivers", err, exitcode.Precondition, "CVE-2025-31133 is affected")
	o.TrustPath = trustFile(t, t.TempDir(), key, `{"require_signature": false, "runtime_waivers": [`+
		`{"id": "CVE-2025-31133", "package": "runc", "reason": "r", "expires": "2027-01-31"}]}`)
	_, err = imagetrust.Check(home, o, pin, pin.SBOMDigest)
	wantCode(t, "one of three waived", err, exitcode.Precondition, "CVE-2025-52565 is affected")
	var ws []string
	for _, id := range []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"} {
		ws = append(ws, fmt.Sprintf(`{"id": %q, "package": "runc", "reason": "single-user host", "expires": "2027-01-31"}`, id))
	}
	o.TrustPath = trustFile(t, t.TempDir(), key, `{"runtime_waivers": [`+strings.Join(ws, ",")+`]}`)
	v, err := imagetrust.Check(home, o, pin, pin.SBOMDigest)
	if err != nil || v.Runtime == nil || len(v.Runtime.Waived) != 3 {
		t.Fatalf("all waived: %+v, %v", v, err)
	}
	var b strings.Builder
	v.WriteText(&b)
	if strings.Count(b.String(), "  waived    ") != 3 {
		t.Errorf("the waivers are not reported:\n%s", b.String())
	}
	for _, c := range []imagetrust.Options{
		{Now: now, Runtime: "runsc", RuntimeAdvisories: openRunc()},
		{Now: now, Runtime: "runc", RuntimeAdvisories: sandbox.AssessRuntime(t.TempDir(), sandbox.Runc, "/usr/bin/runc", "runc version 1.3.3")},
	} {
		if _, err := imagetrust.Check(home, c, pin, pin.SBOMDigest); err != nil {
			t.Errorf("%s with %d open: %v", c.Runtime, len(c.RuntimeAdvisories.OpenFindings()), err)
		}
	}
}
