package runlabel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

func TestParseSampling(t *testing.T) {
	for spec, want := range map[string]string{
		"":                                  "",
		"temperature=0.8,n=200,top-p=0.95":  "temperature=0.8,n=200,top-p=0.95",
		" n = 10 , TEMPERATURE=0 ":          "temperature=0,n=10",
		"top_p=1":                           "top-p=1",
		"temperature=1e-1":                  "temperature=0.1",
		"n=1":                               "n=1",
		"top-p=0.5,temperature=2,n=1000000": "temperature=2,n=1000000,top-p=0.5",
	} {
		s, err := ParseSampling(spec)
		if err != nil || s.String() != want {
			t.Errorf("ParseSampling(%q) = %q, %v; want %q", spec, s.String(), err, want)
		}
	}
	for _, spec := range []string{
		"temperature", "temperature=", "temperature=-0.1", "temperature=11", "temperature=NaN", "temperature=inf",
		"n=0", "n=1.5", "n=-3", "n=1000001", "top-p=0", "top-p=1.01", "seed=1", "n=1,n=2", "top_p=0.5,top-p=0.5", ",",
	} {
		if _, err := ParseSampling(spec); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ParseSampling(%q): %v, want a usage error", spec, err)
		}
	}
}

func TestMatches(t *testing.T) {
	s, _ := ParseSampling("temperature=0.2,n=10")
	for spec, want := range map[string]bool{"": true, "n=10": true, "temperature=0.2": true, "temperature=0.2,n=10": true, "n=5": false, "top-p=0.9": false, "temperature=0.8": false} {
		w, _ := ParseSampling(spec)
		if got := s.Matches(w); got != want {
			t.Errorf("%s matches %q = %v, want %v", s, spec, got, want)
		}
	}
	var none *Sampling
	if w, _ := ParseSampling("n=1"); none.Matches(w) {
		t.Errorf("a run without sampling matches n=1")
	}
}

func TestLabels(t *testing.T) {
	for in, want := range map[string]string{
		"samples/gpt-4o-temp0.jsonl": "gpt-4o-temp0", "/x/y/model.jsonl.gz": "model", "out/codegen-2b/": "codegen-2b", "a.json": "a",
	} {
		if got := DefaultLabel(in, false); got != want {
			t.Errorf("DefaultLabel(%q) = %q, want %q", in, got, want)
		}
	}
	if DefaultLabel("x.jsonl", true) != CanonicalLabel {
		t.Errorf("canonical runs are labelled %q", CanonicalLabel)
	}
	for _, ok := range []string{"gpt-4o", "Qwen2.5 Coder 7B (greedy)", strings.Repeat("é", MaxLabel)} {
		if err := CheckLabel(ok); err != nil {
			t.Errorf("CheckLabel(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", " x", "x ", "a\nb", "a\x1b[31mb", "\xff", strings.Repeat("x", MaxLabel+1)} {
		if err := CheckLabel(bad); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("CheckLabel(%q): %v, want a usage error", bad, err)
		}
	}
	if err := CheckModel(strings.Repeat("m", MaxModel)); err != nil {
		t.Errorf("CheckModel: %v", err)
	}
}

// TestFromExtra: the subject as a record states it, bounded; older records
// get the default label.
func TestFromExtra(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for in, want := range map[string]string{
		`{"label": "m1", "model": "org/m", "sampling": {"temperature": 0.2, "n": 10, "top_p": 0.95}}`: `m1|org/m|temperature=0.2,n=10,top-p=0.95`,
		`{"samples": {"path": "/data/codellama.jsonl"}}`:                                              `codellama||`,
		`{"canonical": true}`: `canonical||`,
		`{"label": "x", "sampling": {"temperature": -1, "n": 2.5, "top_p": 7}}`: `x||`,
		`{"label": "a\u001b[2Jb\nc"}`:                                           "a\uFFFD[2Jb\uFFFDc||",
		`{"label": 7, "model": ["x"], "sampling": "n=3"}`:                       `||`,
		`[]`: `||`,
		`{"label": "` + strings.Repeat("y", 300) + `"}`: strings.Repeat("y", MaxLabel) + `||`,
	} {
		s := FromExtra(decode(in))
		if got := s.Label + "|" + s.Model + "|" + s.Sampling.String(); got != want {
			t.Errorf("FromExtra(%s) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseSampling: whatever is accepted prints back as a value that
// parses to the same sampling.
func FuzzParseSampling(f *testing.F) {
	for _, s := range []string{"temperature=0.8,n=200,top-p=0.95", "n=1", "top_p=1e-3", "temperature=0x1p-2", "n=+5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSampling(spec)
		if err != nil || s == nil {
			return
		}
		back, err := ParseSampling(s.String())
		if err != nil || back.String() != s.String() || !back.Matches(s) || !s.Matches(back) {
			t.Fatalf("%q parsed to %q, which reads back as %q (%v)", spec, s, back, err)
		}
	})
}
