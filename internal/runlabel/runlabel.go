// Package runlabel names what a scoring run scored, as a leaderboard shows
// it: a label (one row of the board per label), the model, and how its
// samples were drawn (temperature, samples per task n, top-p).
//
// `repro score --label/--model/--sampling` states them; the run record
// keeps them in its extra section (label, model, sampling), from where
// FromExtra reads them back once, when the record is decoded (the run
// subject, runs.Record.Subject, which the run index and the board read).
// They are claims of whoever ran the scoring, signed with the record like
// everything else in it; nothing checks that a model produced the samples.
package runlabel

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/exitcode"
)

// Bounds on a label and a model name, in characters.
const (
	MaxLabel = 100
	MaxModel = 200
)

// Subject is what a run scored.
type Subject struct {
	// Label names the row of the board the run belongs to.
	Label    string    `json:"label"`
	Model    string    `json:"model,omitempty"`
	Sampling *Sampling `json:"sampling,omitempty"`
}

// Sampling is how the samples were drawn; a field left out was not stated.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	N           int      `json:"n,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
}

// CanonicalLabel is the default label of a run that scores the canonical
// solutions.
const CanonicalLabel = "canonical"

// DefaultLabel is the label of a run that names none: the samples file's
// base name without its extension (.jsonl, .jsonl.gz), or the samples
// folder's name; CanonicalLabel for the canonical solutions.
func DefaultLabel(samples string, canonical bool) string {
	if canonical || samples == "" {
		return CanonicalLabel
	}
	base := filepath.Base(filepath.Clean(samples))
	for _, ext := range []string{".gz", ".jsonl", ".json"} {
		base = strings.TrimSuffix(base, ext)
	}
	return clipRunes(base, MaxLabel)
}

// CheckLabel returns a usage error unless s is a label: 1 to MaxLabel
// printable characters, without leading or trailing space.
func CheckLabel(s string) error { return checkName("--label", s, MaxLabel) }

// CheckModel is CheckLabel for a model name (up to MaxModel characters).
func CheckModel(s string) error { return checkName("--model", s, MaxModel) }

func checkName(flag, s string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return exitcode.Errorf(exitcode.Usage, "%s %q is not UTF-8", flag, s)
	case n == 0 || n > max:
		return exitcode.Errorf(exitcode.Usage, "%s %q: give 1 to %d characters", flag, s, max)
	case strings.TrimSpace(s) != s:
		return exitcode.Errorf(exitcode.Usage, "%s %q starts or ends with a space", flag, s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return exitcode.Errorf(exitcode.Usage, "%s %q holds a character that is not printable (%U)", flag, s, r)
		}
	}
	return nil
}

// ParseSampling reads a --sampling value: comma-separated key=value pairs
// of temperature (0 to 10), n (samples per task, 1 to 1000000) and top-p
// (above 0, at most 1; top_p is accepted too), e.g.
// "temperature=0.8,n=200,top-p=0.95". Empty gives nil.
func ParseSampling(spec string) (*Sampling, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	s := &Sampling{}
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if k == "top_p" {
			k = "top-p"
		}
		if !ok || v == "" {
			return nil, exitcode.Errorf(exitcode.Usage, "--sampling: %q is not key=value (keys temperature, n, top-p)", part)
		}
		if seen[k] {
			return nil, exitcode.Errorf(exitcode.Usage, "--sampling: %s given twice", k)
		}
		seen[k] = true
		switch k {
		case "temperature":
			f, err := number(v, 0, 10, true)
			if err != nil {
				return nil, exitcode.Errorf(exitcode.Usage, "--sampling: temperature %q: %v", v, err)
			}
			s.Temperature = &f
		case "top-p":
			f, err := number(v, 0, 1, false)
			if err != nil {
				return nil, exitcode.Errorf(exitcode.Usage, "--sampling: top-p %q: %v", v, err)
			}
			s.TopP = &f
		case "n":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000000 {
				return nil, exitcode.Errorf(exitcode.Usage, "--sampling: n %q: want a whole number from 1 to 1000000", v)
			}
			s.N = n
		default:
			return nil, exitcode.Errorf(exitcode.Usage, "--sampling: unknown key %q (keys temperature, n, top-p)", k)
		}
	}
	return s, nil
}

// number parses a finite float in [lo, hi], or (lo, hi] without
// withLow.
func number(v string, lo, hi float64, withLow bool) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("not a number")
	case f > hi || f < lo || !withLow && f == lo:
		if withLow {
			return 0, fmt.Errorf("want %g to %g", lo, hi)
		}
		return 0, fmt.Errorf("want more than %g, at most %g", lo, hi)
	}
	return f, nil
}

// String writes s as ParseSampling reads it, keys in a fixed order; ""
// for nil or nothing stated.
func (s *Sampling) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	if s.Temperature != nil {
		parts = append(parts, "temperature="+strconv.FormatFloat(*s.Temperature, 'g', -1, 64))
	}
	if s.N > 0 {
		parts = append(parts, "n="+strconv.Itoa(s.N))
	}
	if s.TopP != nil {
		parts = append(parts, "top-p="+strconv.FormatFloat(*s.TopP, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Matches reports whether s states every value want states, equal.
func (s *Sampling) Matches(want *Sampling) bool {
	if want == nil {
		return true
	}
	if s == nil {
		s = &Sampling{}
	}
	eq := func(a, b *float64) bool { return b == nil || a != nil && *a == *b }
	return eq(s.Temperature, want.Temperature) && eq(s.TopP, want.TopP) && (want.N == 0 || s.N == want.N)
}

// FromExtra reads the subject from a run record's extra section as decoded
// from JSON. The record is untrusted: strings are cut to their bounds and
// numbers outside ParseSampling's ranges are left out. A record without a
// label (one written before labels, or by a merge of shards) gets
// DefaultLabel of the samples path it names, or CanonicalLabel when it
// scored the canonical solutions; a record that scored nothing of the
// kind gets an empty label.
func FromExtra(extra any) Subject {
	m, ok := extra.(map[string]any)
	if !ok {
		return Subject{}
	}
	var s Subject
	s.Label, _ = m["label"].(string)
	s.Label = clipRunes(strings.TrimSpace(s.Label), MaxLabel)
	s.Model, _ = m["model"].(string)
	s.Model = clipRunes(strings.TrimSpace(s.Model), MaxModel)
	if s.Label == "" {
		if samples, ok := m["samples"].(map[string]any); ok {
			if p, _ := samples["path"].(string); p != "" {
				s.Label = DefaultLabel(p, false)
			}
		} else if c, _ := m["canonical"].(bool); c {
			s.Label = CanonicalLabel
		}
	}
	if sm, ok := m["sampling"].(map[string]any); ok {
		smp := &Sampling{}
		if f, ok := sm["temperature"].(float64); ok && f >= 0 && f <= 10 {
			smp.Temperature = &f
		}
		if f, ok := sm["top_p"].(float64); ok && f > 0 && f <= 1 {
			smp.TopP = &f
		}
		if f, ok := sm["n"].(float64); ok && f >= 1 && f <= 1000000 && f == math.Trunc(f) {
			smp.N = int(f)
		}
		if smp.String() != "" {
			s.Sampling = smp
		}
	}
	return s
}

// clipRunes cuts s to at most n characters of valid UTF-8, with control
// characters replaced by U+FFFD, so that a label read from a record stays
// one line.
func clipRunes(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
