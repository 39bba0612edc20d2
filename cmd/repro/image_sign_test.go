package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/testenv"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/vulnscan"
)

// imageKey makes an ed25519 image key with OpenSSL (mode 0600) and
// returns its path and public key.
func imageKey(t *testing.T) (string, *keys.Signer) {
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
	k, err := keys.LoadPrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, k
}

// writeTrust writes a trust file listing k for images with the image
// policy given as JSON.
func writeTrust(t *testing.T, k *keys.Signer, image string) string {
	t.Helper()
	kb, _ := json.Marshal([]trust.Key{trust.NewKey("lab-images", k.PublicKey(), []trust.Purpose{trust.Images}, nil, nil)})
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := os.WriteFile(p, []byte(`{"version": 1, "keys": `+string(kb)+`, "image": `+image+`}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// staleScan stores a scan attestation of home's pinned image made age ago.
func staleScan(t *testing.T, home string, age time.Duration) {
	t.Helper()
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		t.Fatal(err)
	}
	hex := func(d string) string { return strings.TrimPrefix(d, "sha256:") }
	st := &vulnscan.Statement{
		Type: vulnscan.StatementType, PredicateType: vulnscan.PredicateType,
		Subject: []vulnscan.Subject{
			{Name: vulnscan.SubjectManifest, Digest: map[string]string{"sha256": hex(pin.ManifestDigest)}},
			{Name: vulnscan.SubjectImageID, Digest: map[string]string{"sha256": hex(pin.ID)}},
		},
		Predicate: vulnscan.Predicate{
			ImageID: pin.ID, ManifestDigest: pin.ManifestDigest, SBOMDigest: pin.SBOMDigest,
			ScannedAt: time.Now().UTC().Add(-age).Truncate(time.Second),
			Feed:      vulnscan.FeedInfo{Digest: digest.Of(nil).String(), Ecosystem: sandbox.ImageOSVEcosystem},
			Findings:  []vulnscan.Finding{}, Waivers: []vulnscan.Waiver{}, MaxUnwaivedSeverity: "none",
		},
	}
	if _, err := vulnscan.Write(home, st); err != nil {
		t.Fatal(err)
	}
}

// TestImageSignAndTrust: under a trust file that requires a signature, an
// unsigned image is refused (exit 4) before any container or run folder
// exists, by humaneval scoring and by 'sandbox check'; 'image sign' with an
// OpenSSL key admits it, and the run record states the signer. A scan
// older than the policy allows is refused (exit 3), a fresh one admitted
// and its age recorded.
func TestImageSignAndTrust(t *testing.T) {
	home := humanevalHome(t, false)
	env := []string{"REPRO_HOME=" + home}
	keyPath, key := imageKey(t)
	signed := writeTrust(t, key, `{"require_signature": true}`)
	score := []string{"humaneval", "--canonical", "--dataset", "humanevalplus-mini", "--tasks", "0", "--json", "--parallel", "1"}

	r := repro(t, env, append(score, "--trust", signed)...)
	if r.code != 4 || !strings.Contains(r.stderr, "not signed") || !strings.Contains(r.stderr, "repro image sign --key FILE") {
		t.Fatalf("unsigned image: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("refused unsigned image:\n%s", r.stderr)
	if ids, _ := os.ReadDir(layout.Home(home).Runs()); len(ids) != 0 {
		t.Errorf("a refused image left %d run folders", len(ids))
	}
	if r := repro(t, env, "sandbox", "check", "--trust", signed); r.code != 4 || strings.Contains(r.stdout, "ok  ") {
		t.Errorf("sandbox check of an unsigned image: exit %d (probes ran: %v)\n%s", r.code, strings.Contains(r.stdout, "ok  "), r.stderr)
	}

	// Key problems stop the signing: none named, too wide a mode.
	if r := repro(t, env, "image", "sign"); r.code != 2 {
		t.Errorf("sign without --key: exit %d %s", r.code, r.stderr)
	}
	os.Chmod(keyPath, 0o644)
	if r := repro(t, env, "image", "sign", "--key", keyPath); r.code != 3 || !strings.Contains(r.stderr, "chmod 600") {
		t.Errorf("sign with a 0644 key: exit %d %s", r.code, r.stderr)
	}
	os.Chmod(keyPath, 0o600)
	if r := repro(t, env, "image", "sign", "--key", keyPath); r.code != 0 || !strings.Contains(r.stdout, keys.ID(key.PublicKey())) {
		t.Fatalf("image sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = repro(t, env, append(score, "--trust", signed)...)
	h := parseHumanEvalJSON(t, r)
	if r.code != 0 || h.Summary == nil || h.Summary.Samples != 1 {
		t.Fatalf("signed image: exit %d %+v\n%s", r.code, h.Summary, r.stderr)
	}
	var rec struct {
		Sandbox struct {
			Verification struct {
				Policy    string `json:"policy"`
				TrustFile string `json:"trust_file"`
				Signature struct {
					KeyName string `json:"key_name"`
					KeyID   string `json:"key_id"`
				} `json:"signature"`
			} `json:"image_verification"`
		} `json:"sandbox"`
	}
	b, err := os.ReadFile(filepath.Join(h.RunDir, "record.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %v", err)
	}
	v := rec.Sandbox.Verification
	if v.Policy != "custom" || v.TrustFile != signed || v.Signature.KeyName != "lab-images" || v.Signature.KeyID != keys.ID(key.PublicKey()) {
		t.Errorf("recorded verification %+v", v)
	}
	if r := repro(t, env, "sandbox", "check", "--trust", signed); r.code != 0 || !strings.Contains(r.stdout, `signature by "lab-images"`) {
		t.Errorf("sandbox check of the signed image: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A scan older than the policy's max_age_days is refused.
	scanned := writeTrust(t, key, `{"require_signature": true, "scan": {"max_age_days": 7, "max_severity": "high"}}`)
	staleScan(t, home, 8*24*time.Hour)
	r = repro(t, env, "sandbox", "check", "--trust", scanned)
	if r.code != 3 || !strings.Contains(r.stderr, "stale") || !strings.Contains(r.stderr, "repro image scan --osv DIR") || strings.Contains(r.stdout, "ok  ") {
		t.Errorf("stale scan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("refused stale scan:\n%s", r.stderr)
	staleScan(t, home, 2*24*time.Hour)
	if r := repro(t, env, "sandbox", "check", "--trust", scanned); r.code != 0 || !strings.Contains(r.stdout, "2.0 days old (at most 7)") {
		t.Errorf("fresh scan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A scoring run under the scan policy records the scan's age.
	r = repro(t, env, append(score, "--trust", scanned)...)
	h = parseHumanEvalJSON(t, r)
	var scanRec struct {
		Sandbox struct {
			Verification struct {
				Signature *struct{} `json:"signature"`
				Scan      *struct {
					AgeSeconds int64  `json:"age_seconds"`
					MaxAgeDays int    `json:"max_age_days"`
					Highest    string `json:"max_unwaived_severity"`
				} `json:"scan"`
			} `json:"image_verification"`
		} `json:"sandbox"`
	}
	b, err = os.ReadFile(filepath.Join(h.RunDir, "record.json"))
	if r.code != 0 || err != nil || json.Unmarshal(b, &scanRec) != nil {
		t.Fatalf("scoring under the scan policy: exit %d %v\n%s", r.code, err, r.stderr)
	}
	if sc := scanRec.Sandbox.Verification.Scan; sc == nil || scanRec.Sandbox.Verification.Signature == nil || sc.AgeSeconds < 2*24*3600 || sc.AgeSeconds > 2*24*3600+600 || sc.MaxAgeDays != 7 || sc.Highest != "none" {
		t.Errorf("recorded scan %+v", sc)
	}

	// The production profile also requires gVisor's runtime.
	production := writeTrust(t, key, `{"profile": "production"}`)
	if imagetrust.SandboxRuntime(home) != trust.RuntimeGVisor {
		r = repro(t, env, "sandbox", "check", "--runtime", "runc", "--trust", production)
		if r.code != 3 || !strings.Contains(r.stderr, "requires the runsc runtime") || strings.Contains(r.stdout, "ok  ") {
			t.Errorf("production profile under runc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	// Under runsc a scoring run under the profile records the runtime, the
	// signer and the scan.
	prodScore := append(score, "--trust", production, "--runtime", "runsc")
	r = repro(t, env, prodScore...)
	{
		h = parseHumanEvalJSON(t, r)
		b, err = os.ReadFile(filepath.Join(h.RunDir, "record.json"))
		var prod struct {
			Sandbox struct {
				Verification struct {
					Policy  string `json:"policy"`
					Runtime *struct {
						Used string `json:"used"`
					} `json:"runtime"`
					Signature *struct{} `json:"signature"`
					Scan      *struct{} `json:"scan"`
				} `json:"image_verification"`
			} `json:"sandbox"`
		}
		if r.code != 0 || err != nil || json.Unmarshal(b, &prod) != nil {
			t.Fatalf("production run: exit %d %v\n%s", r.code, err, r.stderr)
		}
		if v := prod.Sandbox.Verification; v.Policy != "production" || v.Runtime == nil || v.Runtime.Used != "runsc" || v.Signature == nil || v.Scan == nil {
			t.Errorf("production run recorded %+v", v)
		}
	}

	// The default trust file applies without --trust.
	os.Remove(layout.Home(home).ImageSignature())
	b, _ = os.ReadFile(signed)
	os.WriteFile(layout.Home(home).Trust(), b, 0o644)
	if r := repro(t, env, "sandbox", "run", "--", "/bin/true"); r.code != 4 || !strings.Contains(r.stderr, "not signed") {
		t.Errorf("sandbox run under the default trust file, unsigned: exit %d %s", r.code, r.stderr)
	}
}

// TestSandboxCheckRefusesOpenRuntimeEscapes: under a trust file that
// refuses open runtime escapes, 'sandbox check' on this host's runc
// (Debian bookworm's 1.1.5, CVE-2024-21626 backported, the 2025 escapes
// open) stops before any probe with exit 3 naming each open escape; with
// each waived (reason and date) it runs and reports the waivers.
func TestSandboxCheckRefusesOpenRuntimeEscapes(t *testing.T) {
	home := humanevalHome(t, true)
	env := []string{"REPRO_HOME=" + home}
	_, key := imageKey(t)
	refusing := writeTrust(t, key, `{"runtime": "runc", "refuse_runtime_escapes": true}`)
	r := repro(t, env, "sandbox", "check", "--runtime", "runc", "--trust", refusing, "--json")
	var rep struct {
		Host struct {
			Runtime struct {
				Advisories *sandbox.RuntimeAssessment `json:"advisories"`
			} `json:"runtime"`
		} `json:"host"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Host.Runtime.Advisories == nil {
		t.Fatalf("sandbox check --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	open := rep.Host.Runtime.Advisories.OpenFindings()
	if len(open) == 0 {
		testenv.Missing(t, "a runc with an open known escape (Debian bookworm's 1.1.5)", "run on the bookworm test machine")
	}
	if r.code != 3 || strings.Contains(r.stderr, "ok    network") {
		t.Fatalf("open escapes: exit %d, probes ran: %v\n%s", r.code, strings.Contains(r.stderr, "ok    network"), r.stderr)
	}
	for _, f := range open {
		if !strings.Contains(r.stderr, f.ID+" is "+f.Verdict) {
			t.Errorf("the refusal does not name %s:\n%s", f.ID, r.stderr)
		}
	}
	t.Logf("refused:\n%s", r.stderr)
	var ws []string
	for _, f := range open {
		ws = append(ws, fmt.Sprintf(`{"id": %q, "package": "runc", "reason": "single-user preview host, no untrusted tenant", "expires": %q}`, f.ID, time.Now().AddDate(0, 1, 0).Format("2006-01-02")))
	}
	waived := writeTrust(t, key, `{"runtime": "runc", "refuse_runtime_escapes": true, "runtime_waivers": [`+strings.Join(ws, ",")+`]}`)
	r = repro(t, env, "sandbox", "check", "--runtime", "runc", "--trust", waived)
	if r.code != 0 || strings.Count(r.stdout, "  waived    ") != len(open) {
		t.Fatalf("waived: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
