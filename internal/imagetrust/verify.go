package imagetrust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/vulnscan"
)

// Options say which trust file to apply and what the run will use.
type Options struct {
	// TrustPath is the trust file; when empty, REPRO_HOME/trust.json if it
	// exists (no file there means no policy). A path named here must exist.
	TrustPath string
	// Trees are the trees the image's SBOM lists besides the packages.
	Trees []sandbox.SBOMTree
	// Now is the time to judge ages against; zero means time.Now.
	Now time.Time
	// Runtime is the runtime asked for ("runc" or "runsc"; the --runtime
	// flag): Open connects with sandbox.ChooseRuntime of it, and Check
	// judges it (empty: SandboxRuntime(home)). Verify judges the runtime
	// the engine really runs containers under.
	Runtime string
	// RuntimeAdvisories judge that runtime against the known escapes
	// (Verify takes them from the engine); a policy that refuses open
	// escapes refuses a run without them.
	RuntimeAdvisories *sandbox.RuntimeAssessment
}

// Verification is what was checked before a run; it goes into the run
// record. A run without a trust file, or under a policy that requires
// nothing, has only Policy "none".
type Verification struct {
	// Policy is "none", "custom" or the profile name ("production").
	Policy          string             `json:"policy"`
	TrustFile       string             `json:"trust_file,omitempty"`
	TrustFileDigest string             `json:"trust_file_digest,omitempty"`
	Requirements    *trust.ImagePolicy `json:"requirements,omitempty"` // the effective image policy
	Signature       *Signed            `json:"signature,omitempty"`
	Scan            *ScanCheck         `json:"scan,omitempty"`
	Runtime         *RuntimeCheck      `json:"runtime,omitempty"`
}

// ScanCheck is the scan attestation a run was admitted with.
type ScanCheck struct {
	ScannedAt           time.Time `json:"scanned_at"`
	AgeSeconds          int64     `json:"age_seconds"`
	MaxAgeDays          int       `json:"max_age_days"`
	MaxSeverity         string    `json:"max_severity"`
	Unwaived            int       `json:"unwaived"`
	MaxUnwaivedSeverity string    `json:"max_unwaived_severity"`
	FeedDigest          string    `json:"feed_digest"`
	AttestationDigest   string    `json:"attestation_digest"`
}

// RuntimeCheck is the container runtime a policy required and the one the
// sandbox uses.
type RuntimeCheck struct {
	Required string `json:"required,omitempty"`
	Used     string `json:"used"`
	// Advisories is the runtime judged against the known escapes, and
	// Waived the open ones the trust file waived, when the policy refuses
	// open escapes.
	Advisories *sandbox.RuntimeAssessment `json:"advisories,omitempty"`
	Waived     []vulnscan.Waiver          `json:"waived,omitempty"`
}

// SandboxRuntime is the container runtime sandboxed runs of home use
// without a --runtime flag by the REPRO_HOME setting (sandbox.ReadSettings):
// "" when none is set (the host then decides, sandbox.DefaultRuntime) or
// the setting cannot be read (which no policy accepts).
func SandboxRuntime(home string) string {
	st, err := sandbox.ReadSettings(home)
	if err != nil {
		return ""
	}
	return string(st.Runtime)
}

// LoadTrust reads the trust file o names, or REPRO_HOME's default; it
// returns nil, "" when there is none at the default path. A named file
// that is missing or any file that does not parse is an
// exitcode.Precondition error (nothing may run under a policy that cannot
// be read).
func LoadTrust(home, path string) (*trust.File, string, error) {
	named := path != ""
	if !named {
		path = layout.Home(home).Trust()
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	tf, err := trust.Load(path)
	if err != nil {
		how := "fix it or name another with --trust FILE"
		if named {
			how = "name an existing trust file"
		}
		return nil, "", exitcode.Errorf(exitcode.Precondition, "%v; %s", err, how)
	}
	return tf, path, nil
}

// RequireTrust is LoadTrust where there must be a trust file: none at
// REPRO_HOME's default path is an exitcode.Precondition error that says
// what to write or name.
func RequireTrust(home, path string) (*trust.File, string, error) {
	tf, p, err := LoadTrust(home, path)
	if err != nil {
		return nil, "", err
	}
	if tf == nil {
		return nil, "", exitcode.Errorf(exitcode.Precondition, "no trust file at %s: write one that lists the image key for \"images\" (docs/supply-chain.md), or name one with --trust FILE", layout.Home(home).Trust())
	}
	return tf, p, nil
}

// Check applies the image policy of the trust file o names to the image
// pinned as pin, whose SBOM (as checked against the pin) has digest sbom.
// A missing or bad signature where one is required, or a scan of another
// image, is an exitcode.Integrity error; a missing, stale or failing scan,
// or a runtime other than the required one, an exitcode.Precondition
// error. Without a trust file, or under a policy that requires nothing,
// it checks nothing.
func Check(home string, o Options, pin *sandbox.Pin, sbom string) (*Verification, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	tf, path, err := LoadTrust(home, o.TrustPath)
	if err != nil {
		return nil, err
	}
	v := &Verification{Policy: "none"}
	if tf == nil || tf.Image.RequiresNothing() {
		if path != "" {
			v.TrustFile = path
		}
		// Whatever the policy, runc with an open known escape runs only
		// under a recorded waiver of each (runsc is the default there).
		if err := checkRuncEscapes(tf, path, v, o, now); err != nil {
			return nil, err
		}
		return v, nil
	}
	pol := tf.Image.Effective()
	v.Policy, v.TrustFile, v.Requirements = "custom", path, &pol
	if tf.Image.Profile != "" {
		v.Policy = tf.Image.Profile
	}
	if d, _, err := digest.File(path); err == nil {
		v.TrustFileDigest = d.String()
	}
	if pol.Runtime != "" {
		used := o.Runtime
		if used == "" {
			used = SandboxRuntime(home)
		}
		v.Runtime = &RuntimeCheck{Required: pol.Runtime, Used: used}
		if used != pol.Runtime {
			return nil, exitcode.Errorf(exitcode.Precondition, "the trust file %q (policy %s) requires the %s runtime, but this run uses %s: choose it with --runtime %s or 'repro sandbox runtime %s' (on a host where the engine has it registered)",
				path, v.Policy, pol.Runtime, used, pol.Runtime, pol.Runtime)
		}
	}
	if pol.RefuseRuntimeEscapes {
		if err := checkRuntimeEscapes(tf, path, v, o, now); err != nil {
			return nil, err
		}
	} else if err := checkRuncEscapes(tf, path, v, o, now); err != nil {
		return nil, err
	}
	if pol.RequireSignature {
		s, err := VerifySignature(tf, SignaturePath(home), pin.ID, pin.ManifestDigest, sbom, now)
		if err != nil {
			return nil, err
		}
		v.Signature = s
	}
	if pol.Scan != nil {
		sc, err := checkScan(home, pol.Scan, pin, sbom, now)
		if err != nil {
			return nil, err
		}
		v.Scan = sc
	}
	return v, nil
}

// checkRuntimeEscapes refuses a runtime with an open known escape
// (sandbox.RuntimeAdvisories) that the trust file's image.runtime_waivers
// does not waive (waivers as 'repro image scan --waivers' takes them,
// package = the runtime's name). It records what it judged in v.Runtime.
func checkRuntimeEscapes(tf *trust.File, path string, v *Verification, o Options, now time.Time) error {
	a := o.RuntimeAdvisories
	if v.Runtime == nil {
		v.Runtime = &RuntimeCheck{Used: o.Runtime}
	}
	if a == nil {
		return exitcode.Errorf(exitcode.Precondition, "the trust file %q (policy %s) refuses a runtime with an open known escape, and the runtime's escapes could not be judged: run under an engine repro can ask", path, v.Policy)
	}
	v.Runtime.Advisories = a
	var ws []vulnscan.Waiver
	if raw := tf.Image.RuntimeWaivers; len(raw) > 0 {
		doc := append(append([]byte(`{"waivers": `), raw...), '}')
		var err error
		if ws, err = vulnscan.ParseWaivers(doc, now); err != nil {
			return exitcode.Errorf(exitcode.Precondition, "the trust file %q: image.runtime_waivers: %v", path, err)
		}
	}
	open := a.OpenFindings()
	fs := make([]vulnscan.Finding, len(open))
	for i, f := range open {
		fs[i] = vulnscan.Finding{ID: f.ID, Package: string(a.Runtime), Severity: "critical"}
	}
	vulnscan.ApplyWaivers(fs, ws)
	var refused []string
	for i, f := range fs {
		if f.Waiver != nil {
			v.Runtime.Waived = append(v.Runtime.Waived, *f.Waiver)
			continue
		}
		refused = append(refused, fmt.Sprintf("%s is %s (%s)", f.ID, open[i].Verdict, open[i].Evidence))
	}
	if len(refused) > 0 {
		return exitcode.Errorf(exitcode.Precondition, "the trust file %q (policy %s) refuses the runtime %s, which has %d open known escape(s): %s: install a %s with the fixes, or waive each in image.runtime_waivers with {\"id\": ..., \"package\": %q, \"reason\": ..., \"expires\": \"YYYY-MM-DD\"}",
			path, v.Policy, a.Label(), len(refused), strings.Join(refused, "; "), a.Runtime, a.Runtime)
	}
	return nil
}

// checkRuncEscapes refuses a run under runc whose open known escapes the
// trust file (tf, nil for none) does not waive each, as a policy that
// refuses runtime escapes does (checkRuntimeEscapes): choosing runc where
// runsc is the default takes an explicit, recorded waiver. Other
// runtimes, a runc with none open, and one that could not be judged pass.
func checkRuncEscapes(tf *trust.File, path string, v *Verification, o Options, now time.Time) error {
	a := o.RuntimeAdvisories
	if o.Runtime != string(sandbox.Runc) || a == nil || len(a.OpenFindings()) == 0 {
		return nil
	}
	if tf == nil {
		v.Runtime = &RuntimeCheck{Used: o.Runtime, Advisories: a}
		return exitcode.Errorf(exitcode.Precondition, "the runtime %s has %d open known escape(s), and no trust file waives them: runs here use gVisor's runsc by default (drop --runtime runc, or set 'repro sandbox runtime runsc'); to run under runc anyway, %s",
			a.Label(), len(a.OpenFindings()), sandbox.RuncWaiverHow)
	}
	return checkRuntimeEscapes(tf, path, v, o, now)
}

// checkScan reads the scan attestation (verified with the run key, bound
// to the pinned image) and checks its SBOM, age and findings.
func checkScan(home string, p *trust.ScanPolicy, pin *sandbox.Pin, sbom string, now time.Time) (*ScanCheck, error) {
	maxRank := vulnscan.LevelRank(p.MaxSeverity)
	if maxRank < 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "the trust file's image.scan.max_severity %q is not a level (want one of %v)", p.MaxSeverity, vulnscan.Levels)
	}
	st, err := vulnscan.Read(home, pin.ID, pin.ManifestDigest)
	if err != nil {
		return nil, err
	}
	path := layout.Home(home).ImageScan()
	pr := st.Predicate
	if pr.SBOMDigest != sbom {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q read SBOM %s, not the pinned %s: run 'repro image scan --osv DIR' again", path, pr.SBOMDigest, sbom)
	}
	if pr.ScannedAt.After(now.Add(maxClockSkew)) {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q states a scan time %s in the future", path, pr.ScannedAt.Format(time.RFC3339))
	}
	age := now.Sub(pr.ScannedAt)
	maxAge := time.Duration(p.MaxAgeDays) * 24 * time.Hour
	if age > maxAge {
		return nil, exitcode.Errorf(exitcode.Precondition, "the scan of the evaluator image is stale: scanned %s, %.1f days ago, and the trust file allows %d days: run 'repro image scan --osv DIR' with a current feed",
			pr.ScannedAt.Format(time.RFC3339), age.Hours()/24, p.MaxAgeDays)
	}
	got := vulnscan.LevelRank(pr.MaxUnwaivedSeverity)
	if got < 0 || got > maxRank {
		return nil, exitcode.Errorf(exitcode.Precondition, "the scan of the evaluator image has %d unwaived finding(s) up to severity %s, above the trust file's max_severity %s: rebuild the image with fixed packages, or waive each finding with a reason ('repro image scan --waivers FILE')",
			pr.Unwaived, pr.MaxUnwaivedSeverity, p.MaxSeverity)
	}
	sc := &ScanCheck{
		ScannedAt: pr.ScannedAt, AgeSeconds: int64(age / time.Second), MaxAgeDays: p.MaxAgeDays, MaxSeverity: p.MaxSeverity,
		Unwaived: pr.Unwaived, MaxUnwaivedSeverity: pr.MaxUnwaivedSeverity, FeedDigest: pr.Feed.Digest,
	}
	if b, err := safefile.ReadFile(path, 64<<20); err == nil {
		sc.AttestationDigest = digest.Of(b).String()
	}
	return sc, nil
}

// Verify returns the image pinned under home, as the engine e holds it,
// with its SBOM digest, after applying the trust file's image policy
// (Check). Call it before any container of a run starts.
func Verify(ctx context.Context, e *sandbox.Engine, home string, o Options) (sandbox.Image, *Verification, error) {
	img, err := sandbox.PinnedImage(ctx, e, home)
	if err != nil {
		return sandbox.Image{}, nil, err
	}
	o.Runtime = string(e.Runtime())
	o.RuntimeAdvisories = e.RuntimeFacts().Advisories
	sb, err := sandbox.ImageSBOM(ctx, e, home, o.Trees)
	if err != nil {
		return sandbox.Image{}, nil, err
	}
	img.SBOMDigest = sb.Digest.String()
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		return sandbox.Image{}, nil, err
	}
	if pin.ID != img.ID || pin.ManifestDigest != img.ManifestDigest {
		return sandbox.Image{}, nil, exitcode.Errorf(exitcode.Integrity, "the image pin changed while it was checked: run again")
	}
	v, err := Check(home, o, pin, img.SBOMDigest)
	if err != nil {
		return sandbox.Image{}, nil, fmt.Errorf("the evaluator image was refused before any container started: %w", err)
	}
	return img, v, nil
}

// Open connects to the engine with the runtime sandbox.ConnectChosen picks
// from REPRO_HOME's setting, o.Runtime and the engine's runc, and returns it with the
// verified pinned image (Verify); the caller closes the engine.
func Open(ctx context.Context, home string, o Options) (*sandbox.Engine, sandbox.Image, *Verification, error) {
	e, err := sandbox.ConnectChosen(ctx, home, o.Runtime)
	if err != nil {
		return nil, sandbox.Image{}, nil, err
	}
	img, v, err := Verify(ctx, e, home, o)
	if err != nil {
		e.Close()
		return nil, sandbox.Image{}, nil, err
	}
	return e, img, v, nil
}

// WriteText writes what was verified for people, one fact a line.
func (v *Verification) WriteText(w io.Writer) {
	switch {
	case v.Policy == "none" && v.Runtime == nil:
		ui.Fprintf(w, "image trust none required (no trust file, or its policy asks for nothing)\n")
		return
	case v.Policy == "none":
		ui.Fprintf(w, "image trust none required but the runc waivers, from %s\n", v.TrustFile)
	default:
		ui.Fprintf(w, "image trust policy %s from %s\n", v.Policy, v.TrustFile)
	}
	if r := v.Runtime; r != nil {
		if r.Required != "" {
			ui.Fprintf(w, "  runtime   %s (required %s)\n", r.Used, r.Required)
		}
		if a := r.Advisories; a != nil {
			ui.Fprintf(w, "  escapes   %s: %d known, %d open, %d waived\n", a.Label(), len(a.Findings), len(a.OpenFindings()), len(r.Waived))
		}
		for _, x := range r.Waived {
			ui.Fprintf(w, "  waived    %s in %s until %s: %s\n", x.ID, x.Package, x.Expires, x.Reason)
		}
	}
	if s := v.Signature; s != nil {
		ui.Fprintf(w, "  signature by %q (%s), signed %s\n", s.KeyName, s.KeyID, s.SignedAt.Format(time.RFC3339))
	}
	if s := v.Scan; s != nil {
		ui.Fprintf(w, "  scan      %s, %.1f days old (at most %d), %d unwaived, highest %s (at most %s)\n",
			s.ScannedAt.Format(time.RFC3339), float64(s.AgeSeconds)/86400, s.MaxAgeDays, s.Unwaived, s.MaxUnwaivedSeverity, s.MaxSeverity)
	}
}
