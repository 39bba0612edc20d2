package humaneval

import "github.com/reprolab/repro/internal/humaneval/judge"

// rulesFor returns EvalPlus's rules of a task of benchmark b.
func rulesFor(b *Benchmark, t *Task) judge.TaskRules {
	if b == MBPPPlus {
		return judge.MBPPRules(t.Index, t.EntryPoint)
	}
	return judge.HumanEvalRules(t.EntryPoint)
}
