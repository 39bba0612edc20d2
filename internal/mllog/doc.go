// Package mllog reads MLPerf MLLOG result logs and judges them the way
// mlcommons/logging does: its compliance checker (training ruleset 2.1.0,
// MiniGo and DLRM) and its result summarizer (time to train, olympic mean).
//
// Logs are untrusted input. Parse bounds every read (Limits) and never
// fails on content: a line that carries the marker but is not a valid
// record comes back with Record.Problem set, and Check turns it into a
// finding. In its default mode Check reaches the verdict the upstream
// checker reaches on the same bytes, including its quirks (identical
// repeats of an exactly-once key only warn, run_stop's status is not
// read); Options.Strict adds the checks upstream lacks. docs/mllog.md lists
// every rule, and the places where repro departs from upstream.
//
// Typical use, for logs that come back from a run:
//
//	rep, err := mllog.VerifyFiles(ctx, paths, mllog.Limits{}, mllog.Options{Benchmark: "minigo", Strict: true})
//	if err != nil { ... }          // *InputError: a file could not be read
//	if !rep.Compliant { ... }      // rep.Files[i].Findings say why
//	score := rep.Scores[0].Minutes // olympic mean, nil when not computable
package mllog
