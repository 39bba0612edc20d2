package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/strictjson"
)

// Reference is the reference profile of a board (see codebench.Reference).
type Reference = codebench.Reference

// LoadReference is the reference profile of the board of dataset in home
// (see codebench.LoadReference).
func LoadReference(home, dataset string) *Reference { return codebench.LoadReference(home, dataset) }

// NotRankedReasons is the ranking decision of a board: the reasons the run
// of rep may not rank on a board whose reference profile is ref, empty when
// it may. A run ranks only when it verifies against its signed record,
// ended ok, is not a run of the canonical solutions, and matches ref: its
// record's summary is what its results file's verdicts give, it was scored
// by ref's engine with ref's harness in one of ref's images under ref's
// limits with a passed self-check, on the dataset at its catalog pins,
// every task of it and nothing else, base and plus tests. Each reason is
// one short sentence a person can act on; a board shows them all.
func NotRankedReasons(ref *codebench.Reference, rep *Report) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	he := rep.HumanEval
	if !rep.Verified {
		add("NOT verified")
	}
	if rep.Run.Status != "ok" {
		add("run ended %s", rep.Run.Status)
	}
	if he == nil {
		return append(out, "not a HumanEval scoring run")
	}
	if he.Canonical {
		add("canonical solutions: a reference, not a model")
	}
	if ref == nil {
		return append(out, "no reference profile to check the run against")
	}
	for _, m := range ref.Missing {
		add("no reference profile: %s", m)
	}
	switch {
	case !he.ResultsFound:
		add("no readable results file: nothing to compute its scores from")
	case len(he.Disagreements) > 0:
		more := ""
		if len(he.Disagreements) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(he.Disagreements)-1)
		}
		add("its record's summary is not what its verdicts give: %s%s", he.Disagreements[0], more)
	}
	if he.Engine != ref.Engine {
		if he.Engine == "" {
			add("engine not recorded (the reference is %s's)", ref.Engine)
		} else {
			add("scored by engine %q, not %s's", he.Engine, ref.Engine)
		}
	}
	if !strings.EqualFold(he.Dataset, ref.Dataset) {
		add("dataset %q, not %s", he.Dataset, ref.Dataset)
	}
	if ref.Missing == nil {
		out = append(out, datasetReasons(ref, rep)...)
	}
	switch {
	case he.BaseOnly:
		add("base tests only (--base-only)")
	case he.Verdicts != nil && !he.Verdicts.PlusScored:
		add("no plus verdicts in its results")
	}
	if ref.Images != nil && !contains(ref.Images, rep.Provenance.ImageID) {
		add("evaluator image %s is not the one this board admits (%s)", orNone(shortDigest(rep.Provenance.ImageID)), strings.Join(shortAll(ref.Images), ", "))
	}
	if bare := func(d string) string { return strings.TrimPrefix(d, "sha256:") }; bare(rep.Provenance.HarnessDigest) != bare(ref.Harness) {
		add("harness %s is not this repro's (%s)", orNone(shortDigest(rep.Provenance.HarnessDigest)), shortDigest(ref.Harness))
	}
	switch {
	case he.Limits == nil:
		add("run limits not recorded")
	case *he.Limits != ref.Limits:
		add("run limits differ from the defaults: %s", limitsDiff(*he.Limits, ref.Limits))
	}
	switch sc := he.SelfCheck; {
	case sc == nil:
		add("no self-check")
	case !sc.OK:
		add("self-check failed (%d of %d tasks passed)", sc.Passed, sc.Tasks)
	case sc.BaseOnly > 0:
		add("self-check of %d tasks on their base inputs only (a shard of a sharded run: rank the merged run)", sc.BaseOnly)
	}
	return out
}

// datasetReasons checks the run's dataset against ref's pins and tasks.
func datasetReasons(ref *codebench.Reference, rep *Report) []string {
	var out []string
	he := rep.HumanEval
	have := map[string]string{}
	for _, a := range rep.Provenance.Assets {
		have[a.ID] = a.SHA256
	}
	for _, a := range ref.Assets {
		switch got, ok := have[a.ID]; {
		case !ok:
			out = append(out, fmt.Sprintf("dataset asset %s not recorded", a.ID))
		case got != a.SHA256:
			out = append(out, fmt.Sprintf("dataset asset %s is not at its catalog pin (sha256 %s, pinned %s)", a.ID, shortDigest(got), shortDigest(a.SHA256)))
		}
	}
	if he.ResultsFound && he.ResultsHash != ref.DatasetMD5 {
		out = append(out, fmt.Sprintf("its results are of another dataset (md5 %s, %s's is %s)", orNone(truncate(he.ResultsHash, 12)), ref.Dataset, truncate(ref.DatasetMD5, 12)))
	}
	if !he.ResultsFound {
		return out
	}
	want := map[string]bool{}
	for _, t := range ref.Tasks {
		want[t] = true
	}
	scored, extra := 0, []string{}
	for _, r := range he.Rows {
		switch {
		case want[r.Task]:
			scored++
		default:
			extra = append(extra, r.Task)
		}
	}
	if scored < len(ref.Tasks) {
		out = append(out, fmt.Sprintf("a subset of the tasks: %d of %d scored", scored, len(ref.Tasks)))
	}
	if len(extra) > 0 {
		out = append(out, fmt.Sprintf("%d tasks not in the dataset (%s)", len(extra), truncate(strings.Join(extra, ", "), 60)))
	}
	return out
}

// limitsDiff names the fields of got that differ from want.
func limitsDiff(got, want codebench.RunLimits) string {
	var g, w map[string]any
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	strictjson.DecodeOpen(gb, &g)
	strictjson.DecodeOpen(wb, &w)
	var keys []string
	for k := range w {
		if fmt.Sprint(g[k]) != fmt.Sprint(w[k]) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %v, default %v", k, g[k], w[k]))
	}
	return strings.Join(parts, "; ")
}

func shortAll(ds []string) []string {
	var out []string
	for _, d := range ds {
		out = append(out, shortDigest(d))
	}
	return out
}

// profileOf is the profile as a board states it.
func profileOf(ref *codebench.Reference) BoardProfile {
	if ref == nil {
		return BoardProfile{Missing: []string{"no reference profile"}}
	}
	p := BoardProfile{Dataset: ref.Dataset, Assets: ref.Assets, DatasetMD5: ref.DatasetMD5, Tasks: len(ref.Tasks), Engine: ref.Engine,
		Images: ref.Images, Harness: ref.Harness, Missing: ref.Missing}
	if p.Assets == nil {
		p.Assets = []runs.Asset{}
	}
	if p.Images == nil {
		p.Images = []string{}
	}
	return p
}
