// Package vulnscan matches the Debian packages of the evaluator image's
// SBOM against vulnerability records in the OSV format (as published for
// Debian), applies explicit, reasoned waivers, and writes the result as
// an in-toto Statement bound to the image, signed with the run key. The
// same matcher checks repro's own Go modules against Go's OSV records
// (`repro version --scan`).
//
// The feed is untrusted input: every file and count is bounded before it
// is read or allocated, and versions are ordered by Debian's rules through
// a maintained dpkg-version module, or for Go by semantic versioning
// (golang.org/x/mod/semver).
package vulnscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprolab/repro/internal/strictjson"
)

// Bounds on one OSV record.
const (
	MaxRecordBytes   = 4 << 20 // one record file
	maxAffected      = 4096    // affected[] entries
	maxRanges        = 256     // ranges[] per affected entry
	maxEvents        = 1024    // events[] per range
	maxVersions      = 65536   // versions[] per affected entry
	maxAliases       = 1024
	maxSeverities    = 64
	maxFieldBytes    = 1024 // id, ecosystem, package name, version, alias
	maxSummaryBytes  = 4096 // summary kept in a finding
	rangeEcosystem   = "ECOSYSTEM"
	rangeSemver      = "SEMVER"
	debianEcosystems = "Debian"
)

// Record is the part of an OSV record that a scan uses.
type Record struct {
	ID        string   `json:"id"`
	Modified  string   `json:"modified"`
	Published string   `json:"published,omitempty"`
	Withdrawn string   `json:"withdrawn,omitempty"`
	Aliases   []string `json:"aliases,omitempty"`
	// Upstream names the records this one derives from (a DEBIAN-CVE-*
	// record names its CVE here).
	Upstream []string   `json:"upstream,omitempty"`
	Summary  string     `json:"summary,omitempty"`
	Severity []Severity `json:"severity,omitempty"`
	Affected []Affected `json:"affected"`
	// DatabaseSpecific may hold a "severity" level (as GitHub's records do).
	DatabaseSpecific json.RawMessage `json:"database_specific,omitempty"`
}

// Severity is one OSV severity entry: a scoring type and its score (a
// CVSS vector, or a level).
type Severity struct {
	Type  string `json:"type"`
	Score string `json:"score"`
}

// Affected is one OSV affected[] entry.
type Affected struct {
	Package  Package  `json:"package"`
	Ranges   []Range  `json:"ranges,omitempty"`
	Versions []string `json:"versions,omitempty"`
	// EcosystemSpecific may hold Debian's "urgency".
	EcosystemSpecific json.RawMessage `json:"ecosystem_specific,omitempty"`
	DatabaseSpecific  json.RawMessage `json:"database_specific,omitempty"`
}

// Package names the affected package: for Debian, the source package.
type Package struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	PURL      string `json:"purl,omitempty"`
}

// Range is one OSV range.
type Range struct {
	Type   string  `json:"type"`
	Events []Event `json:"events"`
}

// Event is one OSV range event; exactly one field is set.
type Event struct {
	Introduced   string `json:"introduced,omitempty"`
	Fixed        string `json:"fixed,omitempty"`
	LastAffected string `json:"last_affected,omitempty"`
	Limit        string `json:"limit,omitempty"`
}

// isDebian reports whether an OSV ecosystem is Debian's ("Debian" or
// "Debian:<release>").
func isDebian(eco string) bool {
	return eco == debianEcosystems || strings.HasPrefix(eco, debianEcosystems+":")
}

// ParseOSV parses and checks one OSV record of at most MaxRecordBytes.
// Fields a scan does not use are ignored; a record without an id or
// affected packages, with counts over the bounds, or with a Debian range
// whose events are not one introduced/fixed/last_affected/limit each with
// a valid Debian version, is an error.
func ParseOSV(b []byte) (*Record, error) {
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("record is larger than %d bytes", MaxRecordBytes)
	}
	var r Record
	if err := strictjson.DecodeOpen(b, &r); err != nil {
		return nil, fmt.Errorf("not an OSV record: %v", err)
	}
	if err := checkField("id", r.ID); err != nil {
		return nil, err
	}
	if len(r.Affected) == 0 || len(r.Affected) > maxAffected {
		return nil, fmt.Errorf("record %s has %d affected entries, want 1 to %d", r.ID, len(r.Affected), maxAffected)
	}
	if len(r.Aliases) > maxAliases || len(r.Upstream) > maxAliases || len(r.Severity) > maxSeverities {
		return nil, fmt.Errorf("record %s has more than %d aliases or upstream ids, or %d severities", r.ID, maxAliases, maxSeverities)
	}
	for _, a := range append(slices.Clone(r.Aliases), r.Upstream...) {
		if err := checkField("alias", a); err != nil {
			return nil, fmt.Errorf("record %s: %v", r.ID, err)
		}
	}
	if len(r.Summary) > maxSummaryBytes {
		r.Summary = r.Summary[:maxSummaryBytes]
	}
	for i := range r.Affected {
		if err := checkAffected(&r.Affected[i]); err != nil {
			return nil, fmt.Errorf("record %s, affected[%d]: %v", r.ID, i, err)
		}
	}
	return &r, nil
}

func checkField(what, s string) error {
	if s == "" || len(s) > maxFieldBytes || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%s %q is empty, too long or has control characters", what, clip(s))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func checkAffected(a *Affected) error {
	if err := checkField("package name", a.Package.Name); err != nil {
		return err
	}
	if err := checkField("ecosystem", a.Package.Ecosystem); err != nil {
		return err
	}
	if len(a.Ranges) > maxRanges || len(a.Versions) > maxVersions {
		return fmt.Errorf("more than %d ranges or %d versions", maxRanges, maxVersions)
	}
	order := orderOf(a.Package.Ecosystem)
	if order == nil {
		return nil // not ours to order; never matched
	}
	for _, v := range a.Versions {
		if !order.valid(v) {
			return fmt.Errorf("version %q is not a %s version", clip(v), order.name)
		}
	}
	for _, rg := range a.Ranges {
		if len(rg.Events) == 0 || len(rg.Events) > maxEvents {
			return fmt.Errorf("a range has %d events, want 1 to %d", len(rg.Events), maxEvents)
		}
		if !slices.Contains(order.ranges, rg.Type) {
			continue // GIT ranges (and SEMVER ones for Debian) do not describe these versions
		}
		for _, e := range rg.Events {
			kind, v, err := e.kindValue()
			if err != nil {
				return err
			}
			if kind == "introduced" && v == "0" {
				continue
			}
			if !order.valid(v) {
				return fmt.Errorf("%s version %q is not a %s version", kind, clip(v), order.name)
			}
		}
	}
	return nil
}

// kindValue returns the one set field of an event.
func (e Event) kindValue() (string, string, error) {
	var kind, v string
	n := 0
	for _, kv := range [][2]string{{"introduced", e.Introduced}, {"fixed", e.Fixed}, {"last_affected", e.LastAffected}, {"limit", e.Limit}} {
		if kv[1] != "" {
			kind, v = kv[0], kv[1]
			n++
		}
	}
	if n != 1 {
		return "", "", errors.New("an event must set exactly one of introduced, fixed, last_affected and limit")
	}
	if len(v) > maxFieldBytes {
		return "", "", fmt.Errorf("%s version is longer than %d bytes", kind, maxFieldBytes)
	}
	return kind, v, nil
}
