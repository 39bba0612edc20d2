package report

import "github.com/reprolab/repro/internal/runs"

// CheckClaims checks the scores a HumanEval run's record claims against
// the verdicts of the results file in its folder dir, as a report reads
// them: it returns each claim of the summary the verdicts do not give
// (HumanEval.Disagreements), and whether there was a claim to check (a
// record of another kind, or one without a summary or results file, has
// none). The summary of a run that ended ok without a readable results
// file is a claim the verdicts do not give. dir must hold the run that rec is the verified record of.
func CheckClaims(dir string, rec *runs.Record) (disagreements []string, checked bool) {
	if rec == nil || rec.Kind != "humaneval" {
		return nil, false
	}
	he, notes := humanEval(dir, rec)
	switch {
	case he.ResultsFound:
		return he.Disagreements, true
	case rec.Summary != nil && rec.Status == "ok":
		why := "the record claims scores, but no results file gives them"
		if len(notes) > 0 {
			why += " (" + notes[len(notes)-1] + ")"
		}
		return []string{why}, true
	}
	return nil, false
}
