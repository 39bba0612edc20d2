package vulnscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// In-toto and DSSE names of the scan attestation.
const (
	PayloadType   = "application/vnd.in-toto+json"
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://github.com/reprolab/repro/attestation/vulnscan/v1"
)

// Subject names of the image in the Statement.
const (
	SubjectManifest = "evaluator-image/manifest"
	SubjectImageID  = "evaluator-image/id"
)

const maxAttestationBytes = 64 << 20

// Statement is an in-toto Statement v1 whose predicate is a scan.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is an in-toto resource descriptor.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate is what a scan found, and against what.
type Predicate struct {
	ImageID        string    `json:"image_id"`
	ManifestDigest string    `json:"manifest_digest"`
	SBOMDigest     string    `json:"sbom_digest"`
	Feed           FeedInfo  `json:"feed"`
	ScannedAt      time.Time `json:"scanned_at"`
	// Packages and SourcePackages count what the SBOM listed.
	Packages       int       `json:"packages"`
	SourcePackages int       `json:"source_packages"`
	Findings       []Finding `json:"findings"`
	Waivers        []Waiver  `json:"waivers"`
	// Unwaived counts findings without a waiver; MaxUnwaivedSeverity is
	// the highest level among them (see Levels), "none" when there is none.
	Unwaived            int    `json:"unwaived"`
	MaxUnwaivedSeverity string `json:"max_unwaived_severity"`
}

// FeedInfo names the feed a scan read.
type FeedInfo struct {
	Digest    string `json:"digest"` // repro-tree v1 digest of the folder
	Files     int    `json:"files"`
	Records   int    `json:"records"`
	Ecosystem string `json:"ecosystem"`
}

// Input is what a scan reads.
type Input struct {
	ImageID        string // sha256:...
	ManifestDigest string // sha256:...
	SBOMDigest     digest.SHA256
	Packages       []InstalledPackage
	Feed           *Feed
	Ecosystem      string
	Waivers        []Waiver
	Now            time.Time
}

// Scan matches in.Packages against in.Feed, applies the waivers and
// returns the Statement to sign.
func Scan(in Input) (*Statement, error) {
	subj, err := subjects(in.ImageID, in.ManifestDigest)
	if err != nil {
		return nil, err
	}
	findings, err := Match(in.Packages, in.Feed, in.Ecosystem)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OSV feed %q cannot be used: %v", in.Feed.Dir, err)
	}
	if findings == nil {
		findings = []Finding{}
	}
	waivers := in.Waivers
	if waivers == nil {
		waivers = []Waiver{}
	}
	unwaived, max := ApplyWaivers(findings, waivers)
	sources := map[source]bool{}
	for _, p := range in.Packages {
		sources[source{p.Source, p.SourceVersion}] = true
	}
	return &Statement{
		Type: StatementType, Subject: subj, PredicateType: PredicateType,
		Predicate: Predicate{
			ImageID: in.ImageID, ManifestDigest: in.ManifestDigest, SBOMDigest: in.SBOMDigest.String(),
			Feed:      FeedInfo{Digest: in.Feed.Digest.String(), Files: in.Feed.Files, Records: len(in.Feed.Records), Ecosystem: in.Ecosystem},
			ScannedAt: in.Now.UTC().Truncate(time.Second), Packages: len(in.Packages), SourcePackages: len(sources),
			Findings: findings, Waivers: waivers, Unwaived: unwaived, MaxUnwaivedSeverity: max,
		},
	}, nil
}

// subjects names the image by its manifest digest and its image ID.
func subjects(id, manifest string) ([]Subject, error) {
	var out []Subject
	for _, s := range [][2]string{{SubjectManifest, manifest}, {SubjectImageID, id}} {
		d, err := digest.Parse(s[1])
		if err != nil || !strings.HasPrefix(s[1], "sha256:") {
			return nil, fmt.Errorf("image digest %q is not sha256:<hex>", s[1])
		}
		out = append(out, Subject{Name: s[0], Digest: map[string]string{"sha256": d.Hex()}})
	}
	return out, nil
}

// Write signs st with home's run key (internal/runs) and stores the DSSE
// envelope atomically at layout's ImageScan path, which it returns.
func Write(home string, st *Statement) (string, error) {
	payload, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", err
	}
	env, err := runs.SignEnvelope(home, PayloadType, append(payload, '\n'))
	if err != nil {
		return "", fmt.Errorf("the scan attestation: %w", err)
	}
	p := layout.Home(home).ImageScan()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, atomicfile.WriteFile(p, env, 0o644)
}

// Read loads the stored scan attestation, verifies its signature with
// home's public run key and checks that it names the image imageID with
// manifest digest manifest. No attestation is an exitcode.Precondition
// error; a bad signature, a malformed statement or another image's scan
// is an exitcode.Integrity error.
func Read(home, imageID, manifest string) (*Statement, error) {
	p := layout.Home(home).ImageScan()
	b, err := safefile.ReadFile(p, maxAttestationBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.Errorf(exitcode.Precondition, "the evaluator image has no scan attestation %q: run 'repro image scan --osv DIR'", p)
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q cannot be read: %v", p, err)
	}
	payload, err := runs.OpenEnvelope(home, PayloadType, b)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q: %v", p, err)
	}
	var st Statement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q is not a scan statement: %v", p, err)
	}
	if st.Type != StatementType || st.PredicateType != PredicateType {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q has statement type %q and predicate type %q", p, st.Type, st.PredicateType)
	}
	want, err := subjects(imageID, manifest)
	if err != nil {
		return nil, err
	}
	if len(st.Subject) == 0 {
		return nil, exitcode.New(exitcode.Integrity, errNoSubject)
	}
	if !sameSubjects(st.Subject, want) || st.Predicate.ImageID != imageID || st.Predicate.ManifestDigest != manifest {
		return nil, exitcode.Errorf(exitcode.Integrity, "the scan attestation %q is for another image than %s: run 'repro image scan' again", p, imageID)
	}
	return &st, nil
}

func sameSubjects(a, b []Subject) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Digest) != len(b[i].Digest) {
			return false
		}
		for k, v := range b[i].Digest {
			if a[i].Digest[k] != v {
				return false
			}
		}
	}
	return true
}
