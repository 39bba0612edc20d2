package vulnscan

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/strictjson"
)

// InstalledPackage is one Debian binary package of the image, with the
// source package and version that Debian's OSV records name.
type InstalledPackage struct {
	Name          string
	Version       string
	Architecture  string
	Source        string
	SourceVersion string
}

// Finding is one advisory that affects one source package of the image.
type Finding struct {
	ID        string   `json:"id"`
	Aliases   []string `json:"aliases,omitempty"`
	Upstream  []string `json:"upstream,omitempty"`
	Summary   string   `json:"summary,omitempty"`
	Modified  string   `json:"modified,omitempty"`
	Published string   `json:"published,omitempty"`
	// Package is the source package; Binaries the image's packages built
	// from it.
	Package  string   `json:"package"`
	Binaries []string `json:"binaries"`
	// Installed is the source version in the image; Fixed the lowest
	// version the record says fixes it above Installed ("" when none).
	Installed string `json:"installed_version"`
	Fixed     string `json:"fixed_version,omitempty"`
	// Severity is the level (see Levels); Scores the record's scores as
	// given (CVSS vectors).
	Severity string     `json:"severity"`
	Scores   []Severity `json:"scores,omitempty"`
	Waiver   *Waiver    `json:"waiver,omitempty"`
}

// Severity levels, lowest first. A finding whose record states no level
// is "unknown", which ranks above "critical": a policy threshold never
// lets an unrated finding through. "none" is the level of a scan without
// unwaived findings.
var Levels = []string{"none", "low", "medium", "high", "critical", "unknown"}

// LevelRank is the position of a level in Levels, or -1.
func LevelRank(level string) int { return slices.Index(Levels, level) }

// source is one source package (name and version) of the image.
type source struct{ name, version string }

// Match returns the findings of feed for pkgs in ecosystem (for the
// evaluator image "Debian:12", for repro's own modules "Go"), sorted by
// package and advisory id: a record matches a source package when one of
// its affected entries names it in ecosystem and lists its source
// version, or has a range of the ecosystem's kind that contains it
// (Debian version ordering for Debian's ECOSYSTEM ranges, semantic
// versioning for Go's SEMVER and ECOSYSTEM ranges). Withdrawn records,
// and entries of other ecosystems, are skipped; an ecosystem without a
// known version order matches nothing.
func Match(pkgs []InstalledPackage, feed *Feed, ecosystem string) ([]Finding, error) {
	order := orderOf(ecosystem)
	if order == nil {
		return nil, nil
	}
	binaries := map[source][]string{}
	for _, p := range pkgs {
		s := source{p.Source, p.SourceVersion}
		binaries[s] = append(binaries[s], p.Name)
	}
	bySource := map[string][]source{}
	for s := range binaries {
		bySource[s.name] = append(bySource[s.name], s)
	}
	var out []Finding
	for _, r := range feed.Records {
		if r.Withdrawn != "" {
			continue
		}
		hit := map[source]Finding{}
		for _, a := range r.Affected {
			if a.Package.Ecosystem != ecosystem {
				continue // only this ecosystem's entries had their versions checked
			}
			for _, s := range bySource[a.Package.Name] {
				affected, fixed, err := affects(order, a, s.version)
				if err != nil {
					return nil, fmt.Errorf("record %s, package %s: %v", r.ID, s.name, err)
				}
				if !affected {
					continue
				}
				f, seen := hit[s]
				if !seen {
					f = Finding{
						ID: r.ID, Aliases: slices.Clone(r.Aliases), Upstream: slices.Clone(r.Upstream), Summary: r.Summary, Modified: r.Modified, Published: r.Published,
						Package: s.name, Binaries: sorted(binaries[s]), Installed: s.version, Scores: slices.Clone(r.Severity),
						Severity: "unknown",
					}
					if lv, ok := recordLevel(r, a); ok {
						f.Severity = lv
					}
				}
				if fixed != "" && (f.Fixed == "" || order.less(fixed, f.Fixed)) {
					f.Fixed = fixed
				}
				hit[s] = f
			}
		}
		for _, f := range hit {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		if out[i].Installed != out[j].Installed {
			return out[i].Installed < out[j].Installed
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// affects reports whether version v lies in affected entry a, and the
// lowest fixed version above v that a names.
func affects(order *versionOrder, a Affected, v string) (bool, string, error) {
	iv, err := order.parse(v)
	if err != nil {
		return false, "", fmt.Errorf("installed version %q is not a %s version: %v", v, order.name, err)
	}
	hit := false
	for _, s := range a.Versions {
		lv, err := order.parse(s)
		if err != nil {
			return false, "", fmt.Errorf("version %q: %v", s, err)
		}
		if lv.compare(iv) == 0 {
			hit = true
		}
	}
	fixedAbove := ""
	var fixedAboveV version
	for _, rg := range a.Ranges {
		if !slices.Contains(order.ranges, rg.Type) {
			continue
		}
		in, fx, err := inRange(order, rg.Events, iv)
		if err != nil {
			return false, "", err
		}
		if in {
			hit = true
		}
		if fx != nil && (fixedAbove == "" || fx.v.compare(fixedAboveV) < 0) {
			fixedAbove, fixedAboveV = fx.s, fx.v
		}
	}
	return hit, fixedAbove, nil
}

type event struct {
	kind string
	s    string
	v    version
	zero bool // introduced "0": below every version
}

// inRange evaluates one range for iv as the OSV schema defines it: events
// sorted by version; an introduced at or below iv opens the range, a fixed
// at or below it or a last_affected below it closes it, and a limit at or
// below it ends it. It also returns the lowest fixed event above iv.
func inRange(order *versionOrder, events []Event, iv version) (bool, *event, error) {
	evs := make([]event, 0, len(events))
	for _, e := range events {
		kind, s, err := e.kindValue()
		if err != nil {
			return false, nil, err
		}
		ev := event{kind: kind, s: s}
		if kind == "introduced" && s == "0" {
			ev.zero = true
		} else if ev.v, err = order.parse(s); err != nil {
			return false, nil, fmt.Errorf("%s version %q: %v", kind, s, err)
		}
		evs = append(evs, ev)
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if a.zero || b.zero {
			return a.zero && !b.zero
		}
		return a.v.compare(b.v) < 0
	})
	affected := false
	var fixedAbove *event
	for i := range evs {
		e := &evs[i]
		switch e.kind {
		case "introduced":
			if e.zero || iv.compare(e.v) >= 0 {
				affected = true
			}
		case "fixed":
			if iv.compare(e.v) >= 0 {
				affected = false
			} else if fixedAbove == nil {
				fixedAbove = e
			}
		case "last_affected":
			if iv.compare(e.v) > 0 {
				affected = false
			}
		case "limit":
			if iv.compare(e.v) >= 0 {
				affected = false
			}
		}
	}
	return affected, fixedAbove, nil
}

// recordLevel returns the severity level a record states for affected
// entry a: Debian's urgency (ecosystem_specific.urgency) or a
// database_specific.severity level of the entry or the record; the highest
// when several are given.
func recordLevel(r *Record, a Affected) (string, bool) {
	best := ""
	for _, raw := range []json.RawMessage{a.EcosystemSpecific, a.DatabaseSpecific, r.DatabaseSpecific} {
		if len(raw) == 0 {
			continue
		}
		var m struct {
			Urgency  string `json:"urgency"`
			Severity string `json:"severity"`
		}
		if strictjson.DecodeOpen(raw, &m) != nil {
			continue
		}
		for _, s := range []string{m.Urgency, m.Severity} {
			if lv := normalLevel(s); lv != "" && (best == "" || LevelRank(lv) > LevelRank(best)) {
				best = lv
			}
		}
	}
	return best, best != ""
}

// normalLevel maps the words feeds use to a level of Levels ("" for none
// it knows: such a finding stays "unknown").
func normalLevel(s string) string {
	// The Debian tracker marks urgencies taken from NVD with stars.
	switch strings.ToLower(strings.TrimRight(strings.TrimSpace(s), "*")) {
	case "unimportant", "negligible", "low":
		return "low"
	case "medium", "moderate":
		return "medium"
	case "high", "important":
		return "high"
	case "critical":
		return "critical"
	}
	return ""
}
