package mllog

import (
	"fmt"
	"sort"
)

// SetScore is the score of a set of runs of one benchmark, computed as
// mlcommons/logging's result summarizer does.
type SetScore struct {
	Benchmark string `json:"benchmark"`
	// Runs counts the result files of the set; RequiredRuns is how many
	// an official score needs (MiniGo 10, DLRM 5).
	Runs         int `json:"runs"`
	RequiredRuns int `json:"required_runs"`
	// Dropped counts runs that failed verification (or have no time);
	// the summarizer calls them non-converged and allows one.
	Dropped int `json:"dropped"`
	// Minutes is the olympic mean time to train: the sorted per-run
	// minutes without the fastest run and, when no run was dropped, the
	// slowest. Nil when the set cannot be scored; Note says why.
	Minutes *float64 `json:"minutes"`
	// MeanMinutes is the plain mean over the runs that passed, for
	// information (what the summarizer's compute_score prints for an
	// incomplete set).
	MeanMinutes *float64 `json:"mean_minutes,omitempty"`
	Note        string   `json:"note,omitempty"`
}

// maxDropped is the number of non-converged runs the summarizer tolerates
// (4 for unet3d, 1 for every other benchmark).
const maxDropped = 1

// Score scores the runs of one benchmark. Runs that are not compliant or
// have no time count as dropped. rulesetVersion picks the required run
// count; empty means "2.1.0".
func Score(rulesetVersion, benchmark string, runs []*Result) SetScore {
	if rulesetVersion == "" {
		rulesetVersion = "2.1.0"
	}
	s := SetScore{Benchmark: benchmark, Runs: len(runs), RequiredRuns: RequiredRuns(rulesetVersion, benchmark)}
	var minutes []float64
	for _, r := range runs {
		if r.Compliant && r.Minutes != nil {
			minutes = append(minutes, *r.Minutes)
		} else {
			s.Dropped++
		}
	}
	if len(minutes) > 0 {
		mean := pySum(minutes) / float64(len(minutes))
		s.MeanMinutes = &mean
	}
	switch {
	case s.RequiredRuns == 0:
		s.Note = fmt.Sprintf("no run count is known for benchmark %q", benchmark)
		return s
	case s.Runs < s.RequiredRuns:
		s.Note = fmt.Sprintf("olympic scoring needs %d runs of %s, got %d", s.RequiredRuns, benchmark, s.Runs)
		return s
	case s.Dropped > maxDropped:
		s.Note = fmt.Sprintf("too many failed runs: %d dropped, at most %d allowed", s.Dropped, maxDropped)
		return s
	}
	if m, ok := olympicMean(minutes, s.Dropped); ok {
		s.Minutes = &m
	} else {
		s.Note = "no run left after dropping the fastest and slowest"
	}
	return s
}

// olympicMean is the summarizer's _compute_olympic_average: sort, drop
// maxDropped from the bottom and maxDropped-dropped from the top (a
// dropped run already counts as the slowest), average the rest.
func olympicMean(scores []float64, dropped int) (float64, bool) {
	s := append([]float64(nil), scores...)
	sort.Float64s(s)
	hi := len(s) - (maxDropped - dropped)
	if maxDropped >= hi {
		return 0, false
	}
	kept := s[maxDropped:hi]
	return pySum(kept) * 1.0 / float64(len(kept)), true
}

// pySum adds left to right from integer 0, as Python's sum does, so the
// result matches the summarizer to the last bit.
func pySum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}
