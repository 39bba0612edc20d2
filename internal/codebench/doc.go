// Package codebench scores samples of a code benchmark (HumanEval+, MBPP+
// and the original HumanEval) as evalplus@26d6d00 does, in the sandbox,
// with every verdict decided on the host: it is the run, from a user's
// options (ScoreAt, Score) to a signed record and eval_results.json.
//
// A run reads the samples once (LoadSamples) and writes them into a
// read-only workspace (Prepare), computes or reuses the ground truth
// (Truth), checks the canonical solutions before any candidate, scores each
// sample's phases (Scorer), re-runs a verdict decided near its limit
// (NearLimit, Rechecks), keeps a journal that --resume continues, writes
// the results file (WriteResults, PassAtK) and hashes the samples once
// more at its end (Input.Check). EvalPlus's own scoring code is a second
// engine of the same run (RunEvalPlus).
//
// Each other concern is a sub-package, below this one:
//   - task: the task data: benchmarks, pinned datasets parsed into tasks,
//     samples files and folders;
//   - wire: the supervisor that runs samples in the sandbox, and the
//     protocol the host speaks with it;
//   - judge: how one output is judged (the value wire format, Python's
//     equality, EvalPlus's oracles and rules).
package codebench
