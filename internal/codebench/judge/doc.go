// Package judge decides how one output of a program is judged, as
// evalplus@26d6d00 judges it: the wire format in which the harness sends a
// Python value as typed plain data (Value, ParseValue), Python's equality
// over such values (Equal), EvalPlus's comparison of one output with its
// expected output (Oracle: tolerances, numpy.allclose, find_zero, the
// special MBPP+ oracles) and EvalPlus's per-task rules (TaskRules). It runs
// no program and reads no file; the scoring loop in package codebench
// feeds it the records it reads from the sandbox.
package judge
