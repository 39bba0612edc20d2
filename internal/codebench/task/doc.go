// Package task reads the task data of EvalPlus's code benchmarks as
// evalplus@26d6d00 reads it: which benchmarks and datasets there are, a
// pinned dataset file parsed into its tasks, and the samples to score.
//
// A Benchmark (HumanEvalPlus, MBPPPlus) says how its task ids are spelt
// and which of EvalPlus's rules apply; DatasetChoices are the values of
// the --dataset flag. LoadBenchmark (LoadPlus, LoadOriginal) returns a
// Dataset only when the whole file matched its catalog pin; each Task
// carries its base and plus inputs, its atol and EvalPlus's rules for it
// (Benchmark.Rules, from package judge). ReadSamplesJSONL and
// ListSamplesDir read samples the way EvalPlus does, into a SampleSet;
// their every error is a usage error naming the file (and line).
//
// It runs no program and judges nothing: package judge decides one
// output, and package codebench scores, and reads, copies and checks the
// user's samples for a run (LoadSamples).
package task
