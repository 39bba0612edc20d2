package ociattest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/vulnscan"
)

// maxClockSkew is how far in the future a signing or scan time may lie.
const maxClockSkew = 5 * time.Minute

// Policy is what an image must carry, from a trust file's image policy.
type Policy struct {
	Signature bool              `json:"signature"`
	SBOM      bool              `json:"sbom"`
	Scan      *trust.ScanPolicy `json:"scan,omitempty"`
}

// PolicyOf returns what the trust file's image policy p requires of a
// runtime image: a signature where it requires one, an SBOM and a scan
// where it requires a scan (the production profile requires all three;
// the runtime fields concern the local sandbox only).
func PolicyOf(p trust.ImagePolicy) Policy {
	e := p.Effective()
	return Policy{Signature: e.RequireSignature, SBOM: e.Scan != nil, Scan: e.Scan}
}

// None reports whether the policy requires nothing.
func (p Policy) None() bool { return !p.Signature && !p.SBOM && p.Scan == nil }

// Checked is one verified attestation.
type Checked struct {
	KeyName  string    `json:"key_name"`
	KeyID    string    `json:"key_id"`
	SignedAt time.Time `json:"signed_at"`
	Where    string    `json:"where"`
	// Envelope is the SHA-256 of the DSSE envelope as found.
	Envelope string `json:"envelope_sha256"`
}

// SBOMChecked is the verified SBOM.
type SBOMChecked struct {
	Checked
	// Digest is the SHA-256 of the SBOM document (the statement's
	// predicate, compacted), which a scan names.
	Digest   string `json:"sbom_digest"`
	Packages int    `json:"components"`
}

// ScanChecked is the verified scan.
type ScanChecked struct {
	Checked
	SBOMDigest          string `json:"sbom_digest"`
	AgeSeconds          int64  `json:"age_seconds"`
	MaxAgeDays          int    `json:"max_age_days"`
	MaxSeverity         string `json:"max_severity"`
	Unwaived            int    `json:"unwaived"`
	MaxUnwaivedSeverity string `json:"max_unwaived_severity"`
	FeedDigest          string `json:"feed_digest"`
}

// Verified is what was checked of a runtime image.
type Verified struct {
	Image     string       `json:"image"`
	Store     string       `json:"store"`
	Policy    Policy       `json:"policy"`
	Signature *Checked     `json:"signature,omitempty"`
	SBOM      *SBOMChecked `json:"sbom,omitempty"`
	Scan      *ScanChecked `json:"scan,omitempty"`
}

// Evidence holds the envelopes that met the policy, by kind, so that what
// was verified can be verified again elsewhere.
type Evidence map[Kind][]byte

// Verify judges the envelopes found with the image img (Envelopes) under
// pol against the keys tf trusts for images, at now. For each kind the
// policy requires, the newest envelope that a trusted key signed about
// img is taken; the scan must name the taken SBOM. Every failure says what
// to do: a missing or wrongly signed signature, an attestation about
// another image, a scan of another SBOM or from the future is an
// exitcode.Integrity error; a missing SBOM or scan, a stale scan or
// findings above the policy an exitcode.Precondition error.
func Verify(tf *trust.File, pol Policy, img digest.SHA256, found []Found, now time.Time) (*Verified, Evidence, error) {
	v := &Verified{Policy: pol}
	ev := Evidence{}
	if pol.None() {
		return v, ev, nil
	}
	best := map[Kind]*opened{}
	var scans []*opened
	rejected := map[Kind][]string{}
	var unread []string
	for _, f := range found {
		o, err := open(tf, f.Envelope, img)
		if err != nil {
			k := kindOf(f.Envelope)
			if k == "" {
				unread = append(unread, f.Where+": "+err.Error())
			} else {
				rejected[k] = append(rejected[k], f.Where+": "+err.Error())
			}
			continue
		}
		if o.signedAt.After(now.Add(maxClockSkew)) {
			rejected[o.kind] = append(rejected[o.kind], fmt.Sprintf("%s: states a time %s in the future", f.Where, o.signedAt.Format(time.RFC3339)))
			continue
		}
		o.where = f.Where
		if o.kind == Scan {
			scans = append(scans, o)
		} else if b := best[o.kind]; b == nil || o.signedAt.After(b.signedAt) {
			best[o.kind] = o
		}
	}
	missing := func(k Kind, fix string) error {
		if r := rejected[k]; len(r) > 0 {
			return exitcode.Errorf(exitcode.Integrity, "no %s of %s verifies against the trust file's image keys: %s; %s", k.short(), img, r[0], fix)
		}
		code := exitcode.Precondition
		if k == Signature {
			code = exitcode.Integrity
		}
		extra := ""
		if len(unread) > 0 {
			extra = fmt.Sprintf(" (%d envelope(s) could not be read: %s)", len(unread), unread[0])
		}
		return exitcode.Errorf(code, "the image %s carries no %s%s and the trust file requires one: %s", img, k.short(), extra, fix)
	}
	if pol.Signature {
		o := best[Signature]
		if o == nil {
			return nil, nil, missing(Signature, "sign it with 'repro oci sign --key FILE NAME@sha256:…' (a key the trust file lists for \"images\")")
		}
		v.Signature = checked(o)
		ev[Signature] = o.envelope
	}
	var sbomDigest digest.SHA256
	if pol.SBOM || pol.Scan != nil {
		o := best[SBOM]
		if o == nil {
			return nil, nil, missing(SBOM, "attach one with 'repro oci sbom --key FILE NAME@sha256:…'")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, o.predicate); err != nil {
			return nil, nil, exitcode.Errorf(exitcode.Integrity, "the SBOM of %s (%s) is not JSON: %v", img, o.where, err)
		}
		sbomDigest = digest.Of(buf.Bytes())
		var bom struct {
			Components []json.RawMessage `json:"components"`
		}
		_ = strictjson.DecodeOpen(buf.Bytes(), &bom)
		v.SBOM = &SBOMChecked{Checked: *checked(o), Digest: sbomDigest.String(), Packages: len(bom.Components)}
		ev[SBOM] = o.envelope
	}
	if p := pol.Scan; p != nil {
		maxRank := vulnscan.LevelRank(p.MaxSeverity)
		if maxRank < 0 {
			return nil, nil, exitcode.Errorf(exitcode.Precondition, "the trust file's image.scan.max_severity %q is not a level (want one of %v)", p.MaxSeverity, vulnscan.Levels)
		}
		var pick *opened
		var pred vulnscan.Predicate
		for _, o := range scans {
			var sp vulnscan.Predicate
			if err := strictjson.Decode(o.predicate, &sp); err != nil {
				rejected[Scan] = append(rejected[Scan], o.where+": "+err.Error())
				continue
			}
			if sp.SBOMDigest != sbomDigest.String() || sp.ManifestDigest != img.String() {
				rejected[Scan] = append(rejected[Scan], fmt.Sprintf("%s: the scan by key %q read SBOM %s of image %s, not the attached SBOM %s of %s", o.where, o.key.Name, sp.SBOMDigest, sp.ManifestDigest, sbomDigest, img))
				continue
			}
			if pick == nil || o.signedAt.After(pick.signedAt) {
				pick, pred = o, sp
			}
		}
		if pick == nil {
			return nil, nil, missing(Scan, "scan it with 'repro oci scan --key FILE --osv DIR NAME@sha256:…'")
		}
		age := now.Sub(pred.ScannedAt)
		if age > time.Duration(p.MaxAgeDays)*24*time.Hour {
			return nil, nil, exitcode.Errorf(exitcode.Precondition, "the newest scan of %s is stale: scanned %s, %.1f days ago, and the trust file allows %d days: scan it again with a current feed ('repro oci scan --key FILE --osv DIR NAME@sha256:…')",
				img, pred.ScannedAt.Format(time.RFC3339), age.Hours()/24, p.MaxAgeDays)
		}
		if got := vulnscan.LevelRank(pred.MaxUnwaivedSeverity); got < 0 || got > maxRank {
			return nil, nil, exitcode.Errorf(exitcode.Precondition, "the scan of %s has %d unwaived finding(s) up to severity %s, above the trust file's max_severity %s: rebuild the image with fixed packages, or scan again with a reasoned waiver for each finding",
				img, pred.Unwaived, pred.MaxUnwaivedSeverity, p.MaxSeverity)
		}
		v.Scan = &ScanChecked{Checked: *checked(pick), SBOMDigest: pred.SBOMDigest, AgeSeconds: int64(age / time.Second), MaxAgeDays: p.MaxAgeDays,
			MaxSeverity: p.MaxSeverity, Unwaived: pred.Unwaived, MaxUnwaivedSeverity: pred.MaxUnwaivedSeverity, FeedDigest: pred.Feed.Digest}
		ev[Scan] = pick.envelope
	}
	return v, ev, nil
}

func checked(o *opened) *Checked {
	return &Checked{KeyName: o.key.Name, KeyID: o.key.ID, SignedAt: o.signedAt, Where: o.where, Envelope: digest.Of(o.envelope).Hex()}
}

// kindOf reads the predicate type an envelope claims, unverified, to say
// which requirement a rejected envelope was meant for; "" when unreadable.
func kindOf(b []byte) Kind {
	var env struct {
		Payload []byte `json:"payload"`
	}
	if strictjson.DecodeOpen(b, &env) != nil {
		return ""
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if strictjson.DecodeOpen(env.Payload, &st) != nil {
		return ""
	}
	for _, k := range Kinds {
		if string(k) == st.PredicateType {
			return k
		}
	}
	return ""
}

// WriteText writes what was verified for people, one fact a line.
func (v *Verified) WriteText(w io.Writer) {
	if v.Image != "" {
		ui.Fprintf(w, "image     %s (%s)\n", v.Image, v.Store)
	}
	if v.Policy.None() {
		ui.Fprintf(w, "policy    requires nothing of runtime images\n")
		return
	}
	if s := v.Signature; s != nil {
		ui.Fprintf(w, "signature by %q (%s), signed %s, %s\n", s.KeyName, s.KeyID, s.SignedAt.Format(time.RFC3339), s.Where)
	}
	if s := v.SBOM; s != nil {
		ui.Fprintf(w, "sbom      %s, %d components, by %q, %s\n", s.Digest, s.Packages, s.KeyName, s.Where)
	}
	if s := v.Scan; s != nil {
		ui.Fprintf(w, "scan      %s, %.1f days old (at most %d), %d unwaived, highest %s (at most %s), by %q, %s\n",
			s.SignedAt.Format(time.RFC3339), float64(s.AgeSeconds)/86400, s.MaxAgeDays, s.Unwaived, s.MaxUnwaivedSeverity, s.MaxSeverity, s.KeyName, s.Where)
	}
}
