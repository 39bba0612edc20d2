// Package humaneval scores EvalPlus's code benchmarks, HumanEval+ and MBPP+
// (and the original HumanEval), as evalplus@26d6d00 does: every sample runs
// in the sandbox under a supervisor that returns each output as typed plain
// data, and every verdict is decided here, on the host. The task data comes
// from package task: a task.Dataset carries its task.Benchmark, and each
// task.Task EvalPlus's rules for it (judge.TaskRules: the input rebuild,
// the special oracle), so that one scoring path serves both benchmarks.
// Ground truth is computed in the sandbox and cached; a canonical-solution
// self-check runs before any candidate. The supervisor, and the protocol
// the host speaks with it, are package wire.
package humaneval
