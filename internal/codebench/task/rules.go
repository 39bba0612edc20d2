package task

import "github.com/reprolab/repro/internal/codebench/judge"

// Rules returns EvalPlus's rules for task t of benchmark b: the input
// rebuild and the special oracle that evalplus@26d6d00 applies to it.
func (b *Benchmark) Rules(t *Task) judge.TaskRules {
	if b == MBPPPlus {
		return judge.MBPPRules(t.Index, t.EntryPoint)
	}
	return judge.HumanEvalRules(t.EntryPoint)
}
