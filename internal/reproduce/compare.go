package reproduce

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/digest"
)

// Results is what Compare reads of a results file: its dataset hash and
// each task's samples in the file's order, each as the digest of its
// program and its phases' measurements. The programs themselves are not
// held (at n = 100 they are most of a 20 MB file).
type Results struct {
	Hash string
	Eval map[string][]Sample
}

// Sample is one entry of a results file as Compare reads it.
type Sample struct {
	// Program is the SHA-256 of the entry's solution.
	Program digest.SHA256
	Base    Measurement
	// Plus is nil where the entry has no plus verdict.
	Plus *Measurement
}

// ParseResults reads a results file (eval_results.json) that repro did not
// just write, an entry at a time (codebench.ReadResults, which accepts what
// strictjson.DecodeOpen accepts, duplicate or case-folded names refused,
// and only entries that name the task they are listed under).
// The caller bounds what r yields (codebench.OpenResultsFile does).
func ParseResults(r io.Reader) (*Results, error) {
	rs := &Results{Eval: map[string][]Sample{}}
	head, err := codebench.ReadResults(r, func(id string) error {
		rs.Eval[id] = []Sample{}
		return nil
	}, func(id string, e *codebench.ResultEntry) error {
		rs.Eval[id] = append(rs.Eval[id], sampleOf(e))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("not a results file: %v", err)
	}
	if !head.Eval {
		return nil, fmt.Errorf("not a results file: no \"eval\"")
	}
	rs.Hash = head.Hash
	return rs, nil
}

// ParseResultsFile reads the results file at path (see ParseResults and
// codebench.OpenResultsFile).
func ParseResultsFile(path string) (*Results, error) {
	f, err := codebench.OpenResultsFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseResults(f)
}

// sampleOf is what Compare keeps of entry e.
func sampleOf(e *codebench.ResultEntry) Sample {
	s := Sample{Program: digest.Of([]byte(e.Solution)),
		Base: Measurement{Status: string(e.BaseStatus), Elapsed: e.BaseElapsed, Limit: e.BaseLimit, NearLimit: e.BaseNearLimit, Reason: e.BaseReason, Clocks: e.BaseClocks}}
	if e.PlusStatus != nil {
		s.Plus = &Measurement{Status: string(*e.PlusStatus), Elapsed: e.PlusElapsed, Limit: e.PlusLimit, NearLimit: e.PlusNearLimit, Reason: e.PlusReason, Clocks: e.PlusClocks}
	}
	return s
}

// Measurement is one side's verdict on one phase of one sample: its
// status ("" where that side has no verdict), and the seconds the phase
// took and its limit where they were recorded.
type Measurement struct {
	Status    string               `json:"status"`
	Elapsed   float64              `json:"elapsed,omitempty"`
	Limit     float64              `json:"limit,omitempty"`
	NearLimit *codebench.NearLimit `json:"near_limit,omitempty"`
	Reason    string               `json:"reason,omitempty"`
	// Clocks are the deciding run's times, each named by its clock, in
	// results files that record them (Elapsed and Limit are those of
	// older files).
	Clocks *codebench.PhaseClocks `json:"clocks,omitempty"`
}

// Verdict is one phase ("base" or "plus") of one sample, the Sample-th of
// its task in the results files' order, as the submission and the
// re-execution decided it.
type Verdict struct {
	Task       string      `json:"task"`
	Sample     int         `json:"sample"`
	Phase      string      `json:"phase"`
	Submitted  Measurement `json:"submitted"`
	Reexecuted Measurement `json:"reexecuted"`
	// TimeLimit: the verdict depends on a time limit on either side (a
	// timeout, or a phase near its limit); both measurements are kept.
	TimeLimit bool `json:"time_limit,omitempty"`
	// Why says what differs besides the statuses ("the solution differs
	// from the submitted sample", ...); "" where only the statuses do.
	Why string `json:"why,omitempty"`
}

// Agreed is one verdict both sides decided alike.
type Agreed struct {
	Task   string `json:"task"`
	Sample int    `json:"sample"`
	Phase  string `json:"phase"`
	Status string `json:"status"`
}

// Comparison is the verdict-by-verdict comparison of a submission's
// results file with its re-execution's.
type Comparison struct {
	// Verdicts counts the verdicts compared (each phase of each sample
	// either side has); Agree those that agree.
	Verdicts    int       `json:"verdicts"`
	Agree       int       `json:"agree"`
	Agreements  []Agreed  `json:"agreements"`
	Differences []Verdict `json:"differences"`
	// Dataset names a difference of the dataset itself (the results
	// files' hashes), "" when none.
	Dataset string `json:"dataset_difference,omitempty"`
}

// Agrees reports whether every verdict agrees (and there is one).
func (c *Comparison) Agrees() bool {
	return c.Dataset == "" && len(c.Differences) == 0 && c.Verdicts > 0 && c.Agree == c.Verdicts
}

// Compare compares the submitted results file with the re-executed one,
// verdict by verdict: the samples of each task in the order the files list
// them, base and plus. A sample one side lacks, a plus verdict one side
// lacks, and a solution that is not the same program are differences.
func Compare(submitted, reexecuted *Results) *Comparison {
	c := &Comparison{Agreements: []Agreed{}, Differences: []Verdict{}}
	if submitted.Hash != reexecuted.Hash {
		c.Dataset = fmt.Sprintf("the submission's results are of dataset hash %q, the re-execution's of %q", submitted.Hash, reexecuted.Hash)
	}
	tasks := map[string]bool{}
	for t := range submitted.Eval {
		tasks[t] = true
	}
	for t := range reexecuted.Eval {
		tasks[t] = true
	}
	ids := make([]string, 0, len(tasks))
	for t := range tasks {
		ids = append(ids, t)
	}
	sort.Slice(ids, func(i, j int) bool { return taskLess(ids[i], ids[j]) })
	for _, t := range ids {
		s, r := submitted.Eval[t], reexecuted.Eval[t]
		for i := 0; i < max(len(s), len(r)); i++ {
			var se, re *Sample
			if i < len(s) {
				se = &s[i]
			}
			if i < len(r) {
				re = &r[i]
			}
			why := ""
			switch {
			case se == nil:
				why = "the submission has no verdict for this sample"
			case re == nil:
				why = "the submitted samples have no such sample"
			case se.Program != re.Program:
				why = "the submission's results name another program than the submitted sample"
			}
			for _, phase := range []string{"base", "plus"} {
				sm, sok := measure(se, phase)
				rm, rok := measure(re, phase)
				if !sok && !rok {
					continue
				}
				c.Verdicts++
				if why == "" && sm.Status == rm.Status {
					c.Agree++
					c.Agreements = append(c.Agreements, Agreed{Task: t, Sample: i, Phase: phase, Status: sm.Status})
					continue
				}
				c.Differences = append(c.Differences, Verdict{Task: t, Sample: i, Phase: phase, Submitted: sm, Reexecuted: rm,
					TimeLimit: timeLimited(sm) || timeLimited(rm), Why: why})
			}
		}
	}
	return c
}

// measure is sample e's measurement of phase, and whether e has one.
func measure(e *Sample, phase string) (Measurement, bool) {
	switch {
	case e == nil:
		return Measurement{}, false
	case phase == "base":
		return e.Base, true
	case e.Plus == nil:
		return Measurement{}, false
	}
	return *e.Plus, true
}

func timeLimited(m Measurement) bool {
	return m.Status == string(codebench.StatusTimeout) || m.NearLimit != nil
}

// String is one difference in a line: "HumanEval/2 #0 base: submitted
// pass, re-executed fail", with both measurements of a time-limit case.
func (v Verdict) String() string {
	side := func(m Measurement) string {
		if m.Status == "" {
			return "no verdict"
		}
		if !v.TimeLimit {
			return m.Status
		}
		s := m.Status
		switch {
		case m.NearLimit != nil:
			s += fmt.Sprintf(" (%.2f s CPU of a %.2f s limit)", m.NearLimit.CPU, m.NearLimit.Limit)
		case m.Clocks != nil && m.Clocks.CPULimit > 0:
			s += fmt.Sprintf(" (%.2f s CPU of a %.2f s limit, %s run)", m.Clocks.JobCPU, m.Clocks.CPULimit, m.Clocks.Run)
		case m.Limit > 0:
			s += fmt.Sprintf(" (%.2f s of a %.2f s limit)", m.Elapsed, m.Limit)
		}
		return s
	}
	out := fmt.Sprintf("%s #%d %s: submitted %s, re-executed %s", v.Task, v.Sample, v.Phase, side(v.Submitted), side(v.Reexecuted))
	if v.Why != "" {
		out += " (" + v.Why + ")"
	}
	return out
}

// taskLess orders task ids by benchmark prefix, then task number.
func taskLess(a, b string) bool {
	pa, na := splitTask(a)
	pb, nb := splitTask(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitTask(id string) (string, int) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return id, -1
	}
	n := 0
	for _, c := range id[i+1:] {
		if c < '0' || c > '9' || n > 1<<20 {
			return id, -1
		}
		n = n*10 + int(c-'0')
	}
	return id[:i], n
}
