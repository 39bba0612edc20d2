package codebench

import "github.com/reprolab/repro/internal/codebench/task"

// RecheckReport is the record of a run's rechecks (RecheckRule): the rule,
// the margin and the overrun it sets (RunLimits.Overrun: a timeout whose
// input still ran at that many times its limit is not rechecked), and
// every verdict that was decided by two runs.
type RecheckReport struct {
	Rule      string             `json:"rule"`
	Margin    float64            `json:"near_limit_margin"`
	Overrun   float64            `json:"overrun"`
	Rechecked []RecheckedVerdict `json:"rechecked"`
}

// RecheckedVerdict is one execution that was run twice: a task's phase on
// one program, which served the samples Completions.
type RecheckedVerdict struct {
	Task          string    `json:"task"`
	Phase         string    `json:"phase"`
	Completions   []int     `json:"completion_ids"`
	ProgramSHA256 string    `json:"program_sha256"`
	First         NearLimit `json:"first"`
	Recheck       NearLimit `json:"recheck"`
	DecidedBy     string    `json:"decided_by"`
	Status        Status    `json:"status"` // the final verdict
}

// Rechecks lists the rechecked verdicts of results, in the order of the
// results, one entry per task, phase and program.
func Rechecks(results ResultSource, limits RunLimits) (*RecheckReport, error) {
	out := &RecheckReport{Rule: RecheckRule, Margin: limits.NearLimitMargin, Overrun: limits.Overrun(), Rechecked: []RecheckedVerdict{}}
	seen := map[shareKey]int{}
	err := results.Each(func(r *SampleResult) error {
		for _, p := range []task.Phase{task.Base, task.Plus} {
			pr := r.phase(p)
			if pr == nil || pr.Near == nil || pr.Near.Recheck == nil {
				continue
			}
			k := shareKey{r.Sample.TaskID, p, r.Sample.ProgramSum()}
			if i, ok := seen[k]; ok {
				out.Rechecked[i].Completions = append(out.Rechecked[i].Completions, r.Sample.ID)
				continue
			}
			seen[k] = len(out.Rechecked)
			first := *pr.Near
			first.Recheck, first.DecidedBy = nil, ""
			out.Rechecked = append(out.Rechecked, RecheckedVerdict{
				Task: r.Sample.TaskID, Phase: p.String(), Completions: []int{r.Sample.ID}, ProgramSHA256: programDigest(r.Sample),
				First: first, Recheck: *pr.Near.Recheck, DecidedBy: pr.Near.DecidedBy, Status: pr.Status,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
