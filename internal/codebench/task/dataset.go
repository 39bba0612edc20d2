package task

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/codebench/judge"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/strictjson"
)

// Task is one problem of a code benchmark with its test inputs.
type Task struct {
	ID         string // "HumanEval/N" or "Mbpp/N"
	Index      int    // N
	Prompt     string
	EntryPoint string
	Canonical  string            // canonical_solution: the body that follows Prompt
	Base       []json.RawMessage // base_input: argument lists, each a JSON array
	Plus       []json.RawMessage // plus_input; nil for the original HumanEval
	Atol       float64
	// Rules are EvalPlus's task-specific rules (input rebuilding, special
	// oracles); the zero value is plain comparison of JSON inputs.
	Rules judge.TaskRules
}

// Program returns the canonical program: prompt followed by the canonical
// solution, as EvalPlus runs it.
func (t *Task) Program() string { return t.Prompt + t.Canonical }

// Inputs returns the inputs of a phase.
func (t *Task) Inputs(p Phase) []json.RawMessage {
	if p == Plus {
		return t.Plus
	}
	return t.Base
}

// Phase is one of a task's two input lists.
type Phase int

const (
	Base Phase = iota
	Plus
)

func (p Phase) String() string {
	if p == Plus {
		return "plus"
	}
	return "base"
}

// Dataset is a verified, parsed dataset of a code benchmark.
type Dataset struct {
	// Benchmark says whose task ids and rules apply; nil means HumanEval+.
	Benchmark *Benchmark
	ID        string        // catalog id, e.g. "humanevalplus-v0.1.10"
	SHA256    digest.SHA256 // of the .jsonl.gz bytes as pinned
	MD5       string        // of the decompressed JSON lines: EvalPlus's dataset "hash"
	HasPlus   bool          // plus inputs exist (false for the original HumanEval)
	Tasks     []*Task
	// InputsFrom names the dataset the inputs and atol come from when it is
	// not this one (the original HumanEval takes HumanEval+'s base inputs).
	InputsFrom string
}

// Task returns the task with the given id, or nil.
func (d *Dataset) Task(id string) *Task {
	n, ok := d.Bench().taskNumber(id)
	if !ok {
		return nil
	}
	if n < len(d.Tasks) && d.Tasks[n].Index == n {
		return d.Tasks[n]
	}
	// Tasks ascend by number: search.
	i := sort.Search(len(d.Tasks), func(i int) bool { return d.Tasks[i].Index >= n })
	if i < len(d.Tasks) && d.Tasks[i].Index == n {
		return d.Tasks[i]
	}
	return nil
}

// Limits of what a dataset file may hold; the real files are far below.
const (
	maxDatasetBytes = 64 << 20 // decompressed
	maxTasks        = 1000
	maxInputs       = 100000 // per task and phase
)

// MaxDatasetLine is the longest line, in bytes, that a dataset file may
// hold; a reader of a dataset's lines applies it too.
const MaxDatasetLine = 8 << 20

// plusLine is one line of HumanEvalPlus.jsonl (and its -Mini variant);
// "test" and "contract" are not used.
type plusLine struct {
	TaskID     *string         `json:"task_id"`
	Prompt     *string         `json:"prompt"`
	EntryPoint *string         `json:"entry_point"`
	Canonical  *string         `json:"canonical_solution"`
	BaseInput  json.RawMessage `json:"base_input"`
	PlusInput  json.RawMessage `json:"plus_input"`
	Atol       json.RawMessage `json:"atol"`
}

// origLine is one line of OpenAI's HumanEval.jsonl.
type origLine struct {
	TaskID     *string `json:"task_id"`
	Prompt     *string `json:"prompt"`
	EntryPoint *string `json:"entry_point"`
	Canonical  *string `json:"canonical_solution"`
}

// LoadPlus reads a HumanEval+ .jsonl.gz stream that must be exactly size
// bytes with the given SHA-256 (the catalog pin), and parses it. Nothing is
// returned unless the whole stream matched its pin.
func LoadPlus(gz io.Reader, id string, size int64, sum digest.SHA256) (*Dataset, error) {
	return LoadBenchmark(gz, id, size, sum, HumanEvalPlus)
}

// LoadBenchmark reads an EvalPlus .jsonl.gz stream of benchmark b
// (HumanEval+ or MBPP+), pinned like LoadPlus, and attaches EvalPlus's
// task-specific rules of b to its tasks.
func LoadBenchmark(gz io.Reader, id string, size int64, sum digest.SHA256, b *Benchmark) (*Dataset, error) {
	d := &Dataset{ID: id, SHA256: sum, HasPlus: true, Benchmark: b}
	err := readLines(gz, id, size, sum, d, func(n int, line []byte) error {
		line, err := standardJSON(line)
		if err != nil {
			return err
		}
		var l plusLine
		if err := strictjson.DecodeOpen(line, &l); err != nil {
			return err
		}
		if l.TaskID == nil || l.Prompt == nil || l.EntryPoint == nil || l.Canonical == nil || l.BaseInput == nil || l.PlusInput == nil || l.Atol == nil {
			return errors.New("missing one of task_id, prompt, entry_point, canonical_solution, base_input, plus_input, atol")
		}
		t, err := newTask(b, d.Tasks, *l.TaskID, *l.Prompt, *l.EntryPoint, *l.Canonical)
		if err != nil {
			return err
		}
		t.Rules = b.Rules(t)
		if t.Base, err = splitInputs(l.BaseInput); err != nil {
			return fmt.Errorf("base_input: %v", err)
		}
		if t.Plus, err = splitInputs(l.PlusInput); err != nil {
			return fmt.Errorf("plus_input: %v", err)
		}
		if t.Atol, err = parseAtol(l.Atol); err != nil {
			return err
		}
		d.Tasks = append(d.Tasks, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// LoadOriginal reads OpenAI's HumanEval .jsonl.gz (pinned like LoadPlus).
// The original dataset has tests as code, not as inputs; repro scores it on
// the base inputs and atol of HumanEval+ (EvalPlus's transcription of the
// original tests) with the original prompts and canonical solutions, so
// inputs must be the HumanEval+ dataset with the same 164 tasks.
func LoadOriginal(gz io.Reader, id string, size int64, sum digest.SHA256, inputs *Dataset) (*Dataset, error) {
	d := &Dataset{ID: id, SHA256: sum, InputsFrom: inputs.ID}
	err := readLines(gz, id, size, sum, d, func(n int, line []byte) error {
		var l origLine
		if err := strictjson.DecodeOpen(line, &l); err != nil {
			return err
		}
		if l.TaskID == nil || l.Prompt == nil || l.EntryPoint == nil || l.Canonical == nil {
			return errors.New("missing one of task_id, prompt, entry_point, canonical_solution")
		}
		t, err := newTask(HumanEvalPlus, d.Tasks, *l.TaskID, *l.Prompt, *l.EntryPoint, *l.Canonical)
		if err != nil {
			return err
		}
		src := inputs.Task(t.ID)
		if src == nil || src.EntryPoint != t.EntryPoint {
			return fmt.Errorf("task %s has no counterpart with entry point %s in %s", t.ID, t.EntryPoint, inputs.ID)
		}
		t.Base, t.Atol, t.Rules = src.Base, src.Atol, src.Rules
		d.Tasks = append(d.Tasks, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.Tasks) != len(inputs.Tasks) {
		return nil, fmt.Errorf("dataset %s: %d tasks, but %s has %d", id, len(d.Tasks), inputs.ID, len(inputs.Tasks))
	}
	return d, nil
}

// readLines verifies and decompresses gz and calls parse for each line.
func readLines(gz io.Reader, id string, size int64, sum digest.SHA256, d *Dataset, parse func(n int, line []byte) error) error {
	v := digest.NewVerifier(gz, "dataset "+id, size, sum)
	// The verifier only fails at the end of the stream, so the compressed
	// bytes are read in full before anything parsed from them is used.
	raw, err := io.ReadAll(v)
	if err != nil {
		return fmt.Errorf("dataset %s: %w", id, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("dataset %s: not gzip data: %v", id, err)
	}
	h := md5.New()
	lr := &io.LimitedReader{R: zr, N: maxDatasetBytes + 1}
	br := bufio.NewReaderSize(io.TeeReader(lr, h), 1<<20)
	n := 0
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br, MaxDatasetLine)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("dataset %s line %d: %v", id, lineNo, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if n >= maxTasks {
			return fmt.Errorf("dataset %s: more than %d tasks", id, maxTasks)
		}
		if err := parse(n, line); err != nil {
			return fmt.Errorf("dataset %s line %d: %v", id, lineNo, err)
		}
		n++
	}
	if lr.N <= 0 {
		return fmt.Errorf("dataset %s: more than %d bytes decompressed", id, maxDatasetBytes)
	}
	if n == 0 {
		return fmt.Errorf("dataset %s: no tasks", id)
	}
	d.MD5 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// readLine returns the next line without its newline, at most max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, fmt.Errorf("line longer than %d bytes", max)
		}
		line = append(line, chunk...)
		switch err {
		case nil:
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		default:
			return nil, err
		}
	}
}

// newTask checks a task's id against the benchmark and the tasks before
// it: dense benchmarks number tasks 0, 1, 2, ...; others ascend.
func newTask(b *Benchmark, before []*Task, id, prompt, entry, canonical string) (*Task, error) {
	idx, ok := b.taskNumber(id)
	if !ok {
		return nil, fmt.Errorf("task_id %q is not %sN", Clip(id), b.TaskPrefix)
	}
	n := len(before)
	if b.Dense && idx != n {
		return nil, fmt.Errorf("task %s out of order: expected %s", id, b.TaskID(n))
	}
	if !b.Dense && n > 0 && idx <= before[n-1].Index {
		return nil, fmt.Errorf("task %s out of order: task numbers must ascend after %s", id, before[n-1].ID)
	}
	if !isIdentifier(entry) {
		return nil, fmt.Errorf("task %s: entry_point %q is not a Python identifier", id, Clip(entry))
	}
	return &Task{ID: id, Index: idx, Prompt: prompt, EntryPoint: entry, Canonical: canonical}, nil
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// standardJSON turns a line of Python's JSON dialect into standard JSON:
// the bare tokens Infinity and -Infinity, which Python's json module reads
// and writes (MBPP+ Mbpp/404 has them), become 1e999 and -1e999, which
// Python reads as the same floats. NaN has no such spelling and is refused.
func standardJSON(line []byte) ([]byte, error) {
	const inf = "Infinity"
	if !bytes.Contains(line, []byte(inf)) && !bytes.Contains(line, []byte("NaN")) {
		return line, nil
	}
	out := make([]byte, 0, len(line))
	inString := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inString:
			if c == '\\' && i+1 < len(line) {
				out = append(out, c)
				i++
				c = line[i]
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == 'I' && bytes.HasPrefix(line[i:], []byte(inf)):
			out = append(out, "1e999"...)
			i += len(inf) - 1
			continue
		case c == 'N' && bytes.HasPrefix(line[i:], []byte("NaN")):
			return nil, errors.New("a NaN input, which repro cannot pass on unchanged")
		}
		out = append(out, c)
	}
	return out, nil
}

// splitInputs splits a JSON array of argument lists.
// An empty JSON object counts as no inputs: EvalPlus iterates what it
// loaded, and MBPP+ Mbpp/793 has {} as its plus inputs.
func splitInputs(raw json.RawMessage) ([]json.RawMessage, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
		return []json.RawMessage{}, nil
	}
	var list []json.RawMessage
	if err := strictjson.DecodeOpen(raw, &list); err != nil {
		return nil, err
	}
	if len(list) > maxInputs {
		return nil, fmt.Errorf("%d inputs", len(list))
	}
	for k, in := range list {
		if len(in) == 0 || in[0] != '[' {
			return nil, fmt.Errorf("input %d is not a list of arguments", k)
		}
	}
	if list == nil {
		list = []json.RawMessage{}
	}
	return list, nil
}

func parseAtol(raw json.RawMessage) (float64, error) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("atol %q is not a non-negative number", Clip(string(raw)))
	}
	return f, nil
}

// Clip shortens s for a message to at most 200 bytes and an ellipsis,
// keeping it valid UTF-8. Text from outside (a task id, a value, what a
// program printed) goes through it before a message quotes it.
func Clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
