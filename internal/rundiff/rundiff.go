// Package rundiff compares two runs: the tasks whose verdict changed, with
// the failing input of each side, the score (pass@k, base and plus) of
// both, the other summary values that differ, and the provenance fields
// that differ (image, dataset, harness, limits, sandbox, host, repro).
//
// Both sides are read through internal/report, so each is checked against
// its signed record first; a side that does not verify is marked, never
// silently compared. `repro runs diff` and the dashboard's compare page
// both show a Diff.
package rundiff

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/runs"
)

// Schema names the JSON form of a Diff.
const Schema = "repro.diff/v1"

// Diff is what changed from run A to run B.
type Diff struct {
	Schema string `json:"schema"`
	A      Side   `json:"a"`
	B      Side   `json:"b"`
	// Flipped lists the tasks whose verdict differs, in task order; a
	// task scored on one side only is listed with status "absent" on the
	// other.
	Flipped []Flip `json:"flipped"`
	// Tasks counts the tasks scored on either side.
	Tasks int `json:"tasks"`
	// Score lists pass@k of both sides, base then plus, k ascending.
	Score []Value `json:"score"`
	// Summary lists the other summary values that differ (for kinds
	// other than humaneval: the record's summary, flattened).
	Summary []Value `json:"summary"`
	// Provenance lists the provenance fields that differ, by section.
	Provenance []Value `json:"provenance"`
}

// Side is one run of a Diff.
type Side struct {
	ID       string         `json:"id"`
	Kind     string         `json:"kind"`
	Status   string         `json:"status"`
	Verified bool           `json:"verified"`
	Problems []runs.Problem `json:"problems"`
	// Label is what the run's record says it scored (HumanEval runs).
	Label string `json:"label,omitempty"`
	// Engine is the scoring engine the record names (HumanEval runs;
	// "" when it names none).
	Engine string `json:"engine,omitempty"`
}

// Verdict is a task's outcome on one side: its status ("pass", "fail",
// "partial" or "absent"), samples passed, and the first failing sample's
// phase, input (cut as in reports) and reason.
type Verdict struct {
	Status       string `json:"status"`
	Passed       int    `json:"passed"`
	Samples      int    `json:"samples"`
	Phase        string `json:"phase,omitempty"`
	FailingInput string `json:"failing_input,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Flip is a task whose verdict changed.
type Flip struct {
	Task string  `json:"task"`
	A    Verdict `json:"a"`
	B    Verdict `json:"b"`
}

// Value is one named value on both sides; Section groups provenance
// fields ("image", "dataset", "harness", "limits", "sandbox", "host",
// "repro"). A value a side lacks is "".
type Value struct {
	Section string `json:"section,omitempty"`
	Key     string `json:"key"`
	A       string `json:"a"`
	B       string `json:"b"`
}

// Verified reports whether both sides match their signed records.
func (d *Diff) Verified() bool { return d.A.Verified && d.B.Verified }

// VerifiedError is nil when both sides match their signed records, else an
// integrity error (exit 4) that names the first side that does not (A
// before B) and the command that lists its differences. A diff is still
// shown with its unverified side marked; this error is its exit status.
func (d *Diff) VerifiedError() error {
	for _, s := range []Side{d.A, d.B} {
		if !s.Verified {
			return exitcode.Errorf(exitcode.Integrity, "run %s does not match its signed record; its side of the diff cannot be trusted (see `repro runs verify %s`)", s.ID, s.ID)
		}
	}
	return nil
}

// Build compares runs a and b (ids or unique prefixes) of the store at
// home. An unknown run is a usage error, an unreadable record an
// integrity error; a run that does not verify is compared and marked.
func Build(home, a, b string) (*Diff, error) {
	return BuildContext(context.Background(), home, a, b)
}

// BuildContext is Build, stopping the checks of the runs' files once ctx
// is done (report.BuildContext): then it returns no diff and
// runs.Interrupted's error (exit 1).
func BuildContext(ctx context.Context, home, a, b string) (*Diff, error) {
	ra, err := report.BuildContext(ctx, home, a)
	if err != nil {
		return nil, err
	}
	rb, err := report.BuildContext(ctx, home, b)
	if err != nil {
		return nil, err
	}
	return Compare(ra, rb), nil
}

// Compare compares two run reports.
func Compare(a, b *report.Report) *Diff {
	d := &Diff{Schema: Schema, A: side(a), B: side(b), Flipped: []Flip{}, Score: []Value{}, Summary: []Value{}, Provenance: []Value{}}
	d.Flipped, d.Tasks = flips(a.HumanEval, b.HumanEval)
	d.Score = score(a.HumanEval, b.HumanEval)
	d.Summary = differing("", fieldMap(a.Summary), fieldMap(b.Summary))
	if a.HumanEval != nil || b.HumanEval != nil {
		d.Summary = append(d.Summary, differing("", heSummary(a.HumanEval), heSummary(b.HumanEval))...)
	}
	pa, pb := provenance(a), provenance(b)
	for _, sec := range sections {
		d.Provenance = append(d.Provenance, differing(sec, pa[sec], pb[sec])...)
	}
	return d
}

func side(r *report.Report) Side {
	s := Side{ID: r.Run.ID, Kind: r.Run.Kind, Status: r.Run.Status, Verified: r.Verified, Problems: r.Problems}
	if r.Subject != nil {
		s.Label = r.Subject.Label
	}
	if r.HumanEval != nil {
		s.Engine = r.HumanEval.Engine
	}
	if s.Problems == nil {
		s.Problems = []runs.Problem{}
	}
	return s
}

func verdicts(he *report.HumanEval) map[string]report.TaskRow {
	m := map[string]report.TaskRow{}
	if he != nil {
		for _, r := range he.Rows {
			m[r.Task] = r
		}
	}
	return m
}

func verdict(r report.TaskRow, ok bool) Verdict {
	if !ok {
		return Verdict{Status: "absent"}
	}
	return Verdict{Status: r.Status, Passed: r.Passed, Samples: r.Samples, Phase: r.Phase, FailingInput: r.FailingInput, Reason: r.Reason}
}

// flips lists the tasks whose status differs, in the order of A's rows
// then B's, and counts the tasks of either side.
func flips(a, b *report.HumanEval) ([]Flip, int) {
	va, vb := verdicts(a), verdicts(b)
	var order []string
	seen := map[string]bool{}
	for _, he := range []*report.HumanEval{a, b} {
		if he == nil {
			continue
		}
		for _, r := range he.Rows {
			if !seen[r.Task] {
				seen[r.Task] = true
				order = append(order, r.Task)
			}
		}
	}
	out := []Flip{}
	for _, task := range order {
		ra, oka := va[task]
		rb, okb := vb[task]
		if oka && okb && ra.Status == rb.Status && ra.Passed == rb.Passed && ra.Samples == rb.Samples {
			continue
		}
		out = append(out, Flip{Task: task, A: verdict(ra, oka), B: verdict(rb, okb)})
	}
	return out, len(order)
}

func score(a, b *report.HumanEval) []Value {
	out := []Value{}
	if a == nil && b == nil {
		return out
	}
	get := func(he *report.HumanEval, plus bool) map[string]float64 {
		switch {
		case he == nil:
			return nil
		case plus && he.PlusScored:
			return he.PlusPassAtK
		case plus:
			return nil
		}
		return he.BasePassAtK
	}
	for _, phase := range []string{"base", "plus"} {
		ma, mb := get(a, phase == "plus"), get(b, phase == "plus")
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool { return passAtLess(ks[i], ks[j]) })
		for _, k := range ks {
			out = append(out, Value{Key: phase + " " + k, A: rate(ma, k), B: rate(mb, k)})
		}
	}
	return out
}

// passAtLess orders pass@1 before pass@10.
func passAtLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func rate(m map[string]float64, k string) string {
	v, ok := m[k]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%.4f", v)
}

func heSummary(he *report.HumanEval) map[string]string {
	if he == nil {
		return map[string]string{}
	}
	return map[string]string{
		"tasks":       strconv.Itoa(he.Tasks),
		"samples":     strconv.Itoa(he.Samples),
		"plus_scored": strconv.FormatBool(he.PlusScored),
		"subset":      strconv.FormatBool(he.Subset),
	}
}

// sections are the provenance sections, in the order a Diff lists them.
var sections = []string{"image", "dataset", "harness", "limits", "sandbox", "host", "repro"}

// provenance lays out a report's provenance as section → key → value.
func provenance(r *report.Report) map[string]map[string]string {
	p := r.Provenance
	m := map[string]map[string]string{}
	for _, s := range sections {
		m[s] = map[string]string{}
	}
	put := func(sec, k, v string) {
		if v != "" {
			m[sec][k] = v
		}
	}
	put("image", "id", p.ImageID)
	put("image", "manifest_digest", p.ManifestDigest)
	put("image", "sbom_digest", p.SBOMDigest)
	for _, f := range p.Image {
		put("image", f.Key, f.Value)
	}
	for _, a := range p.Assets {
		put("dataset", "asset "+a.ID, a.SHA256)
	}
	if he := r.HumanEval; he != nil {
		put("dataset", "name", he.Dataset)
		put("dataset", "md5", he.DatasetHash)
	}
	put("harness", "digest", p.HarnessDigest)
	if he := r.HumanEval; he != nil {
		put("harness", "engine", orNotRecorded(he.Engine))
	}
	for _, f := range p.Limits {
		if f.Key != "harness_digest" {
			put("limits", f.Key, f.Value)
		}
	}
	for _, f := range p.Sandbox {
		put("sandbox", f.Key, f.Value)
	}
	h := p.Host
	put("host", "hostname", h.Hostname)
	put("host", "os", h.OS)
	put("host", "arch", h.Arch)
	put("host", "kernel", h.Kernel)
	put("host", "cpu_model", h.CPUModel)
	put("host", "cpus", strconv.Itoa(h.CPUs))
	put("host", "mem_bytes", strconv.FormatInt(h.MemBytes, 10))
	put("repro", "version", p.Repro.Version)
	put("repro", "go", p.Repro.Go)
	return m
}

func fieldMap(fs []report.Field) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		m[f.Key] = f.Value
	}
	return m
}

// differing lists the keys of a or b whose values differ, sorted.
func differing(section string, a, b map[string]string) []Value {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out := []Value{}
	for k := range keys {
		if a[k] != b[k] {
			out = append(out, Value{Section: section, Key: k, A: a[k], B: b[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func orNotRecorded(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}
