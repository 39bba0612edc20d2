package task

import (
	"strconv"
	"strings"
)

// Benchmark is one of EvalPlus's code benchmarks: how its task ids are
// spelt and which of EvalPlus's benchmark-specific rules apply. A Dataset
// carries its Benchmark; everything that differs between HumanEval+ and
// MBPP+ is read from it, so that both share one scoring path.
type Benchmark struct {
	// Name is EvalPlus's --dataset value: "humaneval" or "mbpp".
	Name string
	// Title is the benchmark's name for people.
	Title string
	// TaskPrefix is the task id without its number: "HumanEval/", "Mbpp/".
	TaskPrefix string
	// Dense: task numbers run 0, 1, 2, ... without gaps (HumanEval+);
	// otherwise they only ascend (MBPP+: 2, 3, 4, 6, ...).
	Dense bool
	// DataFile is the decompressed dataset's file name in EvalPlus's cache,
	// which EvalPlus's own code reads (--engine evalplus).
	DataFile string
}

// The benchmarks repro scores.
var (
	// HumanEvalPlus is HumanEval+ (and its Mini variant, and the original
	// HumanEval scored on HumanEval+'s base inputs).
	HumanEvalPlus = &Benchmark{Name: "humaneval", Title: "HumanEval+", TaskPrefix: "HumanEval/", Dense: true, DataFile: "HumanEvalPlus.jsonl"}
	// MBPPPlus is MBPP+ (v0.2.0: 378 tasks, Mbpp/2 to Mbpp/809).
	MBPPPlus = &Benchmark{Name: "mbpp", Title: "MBPP+", TaskPrefix: "Mbpp/", DataFile: "MbppPlus.jsonl"}
)

// DatasetChoice is one value of the --dataset flag: the catalog ids of
// the dataset (and of the dataset its inputs come from, when that is
// another one) and its benchmark.
type DatasetChoice struct {
	ID       string
	InputsID string
	Bench    *Benchmark
}

// DatasetChoices are the datasets the --dataset flag selects.
var DatasetChoices = map[string]DatasetChoice{
	"humanevalplus":      {ID: "humanevalplus-v0.1.10", Bench: HumanEvalPlus},
	"humanevalplus-mini": {ID: "humanevalplus-mini-v0.1.10", Bench: HumanEvalPlus},
	"humaneval":          {ID: "humaneval", InputsID: "humanevalplus-v0.1.10", Bench: HumanEvalPlus},
	"mbppplus":           {ID: "mbppplus-v0.2.0", Bench: MBPPPlus},
}

// DatasetNames lists the --dataset values for messages.
const DatasetNames = "humanevalplus, humanevalplus-mini, humaneval or mbppplus"

// taskNumber parses PREFIX+N with N a decimal number without sign or
// leading zeros.
func (b *Benchmark) taskNumber(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, b.TaskPrefix)
	if !ok || s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// TaskID returns the id of task number n.
func (b *Benchmark) TaskID(n int) string { return b.TaskPrefix + strconv.Itoa(n) }

// Bench returns the dataset's benchmark (HumanEval+ when unset).
func (d *Dataset) Bench() *Benchmark {
	if d.Benchmark == nil {
		return HumanEvalPlus
	}
	return d.Benchmark
}
