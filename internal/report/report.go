// Package report turns a run folder into a report a person can read: one
// model (Report) built from the run's signed record and its results, after
// checking the folder against the record exactly as `repro runs verify`
// does, rendered as self-contained HTML (no external assets, no script),
// as Markdown for a paper's appendix, or as one JSON document.
//
// Everything in a run folder is untrusted: files are read bounded through
// safefile, and every value reaches HTML through html/template and
// Markdown through mdText, so a sample's text or a failing input shows as
// text.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
)

// Schema names the JSON form of a report.
const Schema = "repro.report/v1"

const (
	// maxInputChars is how much of a failing input or reason a report shows.
	maxInputChars = 160
	// maxFields bounds a flattened provenance section.
	maxFields = 200
)

// Report is everything a report shows, in the order it shows it.
type Report struct {
	Schema string `json:"schema"`
	Run    Run    `json:"run"`
	// Verified: the record's signature checks with the local public run
	// key and the folder holds exactly the recorded files.
	Verified bool `json:"verified"`
	// Problems are why the run is not verified.
	Problems []runs.Problem `json:"problems"`
	// Signer is the trusted key whose signature verified; nil when none
	// did.
	Signer *Signer `json:"signer,omitempty"`
	// Subject is the label, model and sampling the record names (HumanEval
	// runs; see internal/runlabel).
	Subject    *runlabel.Subject `json:"subject,omitempty"`
	Provenance Provenance        `json:"provenance"`
	HumanEval  *HumanEval        `json:"humaneval,omitempty"`
	Handoff    *Handoff          `json:"handoff,omitempty"`
	MLLOG      *MLLOG            `json:"mllog,omitempty"`
	// Summary and Details are the record's summary and extra section,
	// flattened, for kinds other than humaneval.
	Summary []Field `json:"summary,omitempty"`
	Details []Field `json:"details,omitempty"`
	// Notes say what the report could not show and why.
	Notes []string `json:"notes,omitempty"`

	// recordSHA256 and envelopeSHA256 are the SHA-256 of the
	// record.json and record.dsse.json the report was made from (the
	// envelope's "" where it was not read).
	recordSHA256, envelopeSHA256 string
}

// Run identifies the run.
type Run struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Status     string    `json:"status"`
	ExitCode   int       `json:"exit_code"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Command    string    `json:"command"`
	Error      string    `json:"error,omitempty"`
}

// Signer names the key that signed a run's record, as the trust file
// that verified it names it.
type Signer struct {
	Name  string `json:"name"`
	KeyID string `json:"key_id"`
}

// Provenance is what ran and where.
type Provenance struct {
	Repro          runs.Tool    `json:"repro"`
	Host           runs.Host    `json:"host"`
	Assets         []runs.Asset `json:"assets"`
	ImageID        string       `json:"image_id,omitempty"`
	ManifestDigest string       `json:"manifest_digest,omitempty"`
	SBOMDigest     string       `json:"sbom_digest,omitempty"`
	// Image is the record's image section, flattened, where it is not an
	// evaluator image (an ID and digests).
	Image         []Field `json:"image,omitempty"`
	HarnessDigest string  `json:"harness_digest,omitempty"`
	Limits        []Field `json:"limits,omitempty"`
	Sandbox       []Field `json:"sandbox,omitempty"`
	Files         int     `json:"files"`
}

// Field is one key and value of a flattened record section.
type Field struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// HumanEval is the section of a HumanEval(+) scoring run.
type HumanEval struct {
	Dataset      string             `json:"dataset,omitempty"`
	DatasetHash  string             `json:"dataset_md5,omitempty"`
	Tasks        int                `json:"tasks"`
	Samples      int                `json:"samples"`
	MaxSamples   int                `json:"max_samples_per_task"`
	PlusScored   bool               `json:"plus_scored"`
	Subset       bool               `json:"subset"`
	BasePassAtK  map[string]float64 `json:"base_pass_at_k"`
	PlusPassAtK  map[string]float64 `json:"plus_pass_at_k,omitempty"`
	SelfCheck    *SelfCheck         `json:"self_check,omitempty"`
	Rows         []TaskRow          `json:"tasks_table"`
	ResultsFound bool               `json:"results_found"`
	// Engine is the scoring engine the record names ("repro" or
	// "evalplus"; "" when it names none).
	Engine string `json:"engine"`
	// Canonical: the run scored the dataset's canonical solutions.
	Canonical bool `json:"canonical"`
	// BaseOnly: the run was told to skip the plus tests (--base-only).
	BaseOnly bool `json:"base_only"`
	// Limits are the run limits the record names; nil when it names none.
	Limits *codebench.RunLimits `json:"run_limits,omitempty"`
	// ResultsHash is the dataset hash eval_results.json names.
	ResultsHash string `json:"results_dataset_md5,omitempty"`
	// Verdicts are the scores the verdicts of eval_results.json give
	// (nil without a readable results file). BasePassAtK and PlusPassAtK
	// above are what the record's summary claims; a board ranks by these.
	Verdicts *VerdictScores `json:"verdicts,omitempty"`
	// Disagreements name each claim of the record's summary that its
	// results file's verdicts do not give.
	Disagreements []string `json:"disagreements,omitempty"`
}

// VerdictScores are the scores computed from a results file's verdicts.
type VerdictScores struct {
	Tasks       int                `json:"tasks"`
	Samples     int                `json:"samples"`
	BasePassAtK map[string]float64 `json:"base_pass_at_k"`
	PlusPassAtK map[string]float64 `json:"plus_pass_at_k,omitempty"`
	// PlusScored: every sample has a plus verdict.
	PlusScored bool `json:"plus_scored"`
}

// SelfCheck is the canonical-solution self-check of a run.
type SelfCheck struct {
	Tasks  int  `json:"tasks"`
	Passed int  `json:"passed"`
	OK     bool `json:"ok"`
	// BaseOnly counts the tasks whose canonical solution ran on the base
	// inputs only: a shard of a sharded run, whose other shard checked
	// them in full (the merged run is the one to rank).
	BaseOnly int      `json:"base_only,omitempty"`
	Failures []string `json:"failures,omitempty"`
}

// TaskRow is one task of the per-task table.
type TaskRow struct {
	Task       string `json:"task"`
	Samples    int    `json:"samples"`
	BasePassed int    `json:"base_passed"`
	Passed     int    `json:"passed"` // base and, if scored, plus
	// Status is "pass" (every sample passed), "fail" (none did) or
	// "partial".
	Status string `json:"status"`
	// Phase, FailingInput and Reason describe the first sample that did
	// not pass; FailingInput is cut to maxInputChars.
	Phase        string `json:"phase,omitempty"`
	FailingInput string `json:"failing_input,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// Seconds and LimitSeconds are the CPU time of the task's phase run
	// that came closest to its limit (the deciding run, on the supervisor's
	// job clock), and that limit; 0 where the results do not record them.
	// For a results file written before base_clocks, Seconds is the wall
	// time it recorded.
	Seconds      float64 `json:"seconds,omitempty"`
	LimitSeconds float64 `json:"limit_seconds,omitempty"`
	// SecondsClock names the clock of Seconds: "job CPU", or "wall" for a
	// results file written before base_clocks.
	SecondsClock string `json:"seconds_clock,omitempty"`
	// NearLimit names, for the first sample whose verdict depends on the
	// time limit (a pass within the near-limit margin of it, a timeout), the phase and its
	// CPU seconds against the limit; "" where none does.
	NearLimit string `json:"near_limit,omitempty"`
	// Of the task's phase runs that passed, PassLimitShare is the largest
	// share of a limit one used, by the clocks that hold the limits
	// (codebench.PhaseClocks.LimitShare: under gVisor the job clock
	// against its scaled limit, and the host's reading of the container
	// against its budget, so at most 1 in a file repro writes; an older
	// file's wall time against the list's limit); PassSeconds and PassLimitSeconds are that
	// run's job clock (or wall) time and its list's CPU limit. All 0
	// where none passed or the results do not record times. OverLimit
	// counts the samples with a phase run past its limit, by the clock
	// that holds it (codebench.PhaseClocks.PastLimit). With many samples a
	// task (Seconds) nearly always has a run that struck its limit; these
	// say how near its passes came.
	PassSeconds      float64 `json:"pass_seconds,omitempty"`
	PassLimitSeconds float64 `json:"pass_limit_seconds,omitempty"`
	PassLimitShare   float64 `json:"pass_limit_share,omitempty"`
	OverLimit        int     `json:"samples_over_limit,omitempty"`
}

// PassShare is PassLimitShare (0 without a limit).
func (t TaskRow) PassShare() float64 {
	if t.PassLimitSeconds <= 0 {
		return 0
	}
	return t.PassLimitShare
}

// TimeShare is Seconds over LimitSeconds (0 without a limit).
func (t TaskRow) TimeShare() float64 {
	if t.LimitSeconds <= 0 {
		return 0
	}
	return t.Seconds / t.LimitSeconds
}

// PassRate is the share of the task's samples that passed.
func (t TaskRow) PassRate() float64 {
	if t.Samples == 0 {
		return 0
	}
	return float64(t.Passed) / float64(t.Samples)
}

// Build opens run id (or a unique prefix) of the store at home, verifies
// it against its signed record and builds its report. A run that does not
// verify still gets a report, marked not verified with the problems; an
// unknown run is a usage error, an unreadable record an integrity error.
func Build(home, id string) (*Report, error) {
	return BuildContext(context.Background(), home, id)
}

// BuildContext is Build, stopping the check of the run's files within a
// read of at most 1 MiB once ctx is done: then it returns no report and
// runs.Interrupted's error (exit 1).
func BuildContext(ctx context.Context, home, id string) (*Report, error) {
	if id == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "name a run (see `repro runs list`)")
	}
	r, err := runs.Open(home, id)
	if err != nil {
		return nil, err
	}
	v, verr := verify(ctx, home, r)
	if v == nil || v.Record == nil {
		return nil, verr
	}
	rec, problems, key := v.Record, v.Problems, v.Key
	rep := &Report{
		Schema:   Schema,
		Verified: verr == nil && len(problems) == 0,
		Problems: problems,
		Run: Run{
			ID: rec.ID, Kind: rec.Kind, Status: rec.Status, ExitCode: rec.ExitCode,
			StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, Command: strings.Join(rec.Command, " "),
		},
	}
	rep.recordSHA256, rep.envelopeSHA256 = v.RecordSHA256, v.EnvelopeSHA256
	if rep.Problems == nil {
		rep.Problems = []runs.Problem{}
	}
	if want := runimport.RecordID(home, r.ID); rec.ID != want {
		rep.Verified = false
		rep.Problems = append(rep.Problems, runs.Problem{What: fmt.Sprintf("the record names run %q, the folder %q holds run %q", rec.ID, r.ID, want)})
	}
	if key != nil && rep.Verified {
		rep.Signer = &Signer{Name: key.Name, KeyID: key.ID}
	}
	rep.Provenance = provenance(rec)
	rep.Run.Error = rec.Subject.Error
	switch rec.Kind {
	case "humaneval":
		if subject := rec.Subject.Subject; subject.Label != "" {
			rep.Subject = &subject
		}
		he, notes := humanEval(r.Dir, rec)
		rep.HumanEval = he
		rep.Notes = append(rep.Notes, notes...)
	case "mllog":
		m, notes := mllogSection(r.Dir, rec)
		rep.MLLOG = m
		rep.Notes = append(rep.Notes, notes...)
		rep.Details = flatten(rec.Extra)
	default:
		if strings.HasPrefix(rec.Kind, "handoff-") {
			h, notes := handoffSection(r.Dir, rec)
			rep.Handoff = h
			rep.Notes = append(rep.Notes, notes...)
		}
		rep.Summary = flatten(rec.Summary)
		rep.Details = flatten(rec.Extra)
	}
	return rep, nil
}

// verify checks run r against its signed record with home's trust file
// (or, for a run imported from a bundle, the key it was accepted with; see
// internal/runimport), as `repro runs verify` does, and returns what the
// check found: the record, the SHA-256 of the record's and the envelope's
// bytes verified ("" when nothing was), the problems and the key that
// verified; the record is read once. A missing trust file is a problem,
// not an error: the report is still made, NOT verified (the Verification
// then holds the record and that problem alone); an unreadable record is
// an error (a nil Verification), and so is an interrupted check (ctx done).
func verify(ctx context.Context, home string, r *runs.Run) (*runs.Verification, error) {
	t, err := runimport.LoadTrust(home, r.ID)
	if err != nil {
		rec, _, rerr := r.ReadRecord()
		if rerr != nil {
			return nil, rerr
		}
		return &runs.Verification{Record: rec, Problems: []runs.Problem{{What: err.Error()}}}, err
	}
	return r.VerifyWithContext(ctx, t)
}

func provenance(rec *runs.Record) Provenance {
	p := Provenance{Repro: rec.Repro, Host: rec.Host, Assets: rec.Assets, Files: len(rec.Files)}
	if p.Assets == nil {
		p.Assets = []runs.Asset{}
	}
	if img, ok := rec.Image.(map[string]any); ok {
		p.ImageID, _ = img["id"].(string)
		p.ManifestDigest, _ = img["manifest_digest"].(string)
		p.SBOMDigest, _ = img["sbom_digest"].(string)
	}
	if p.ImageID == "" {
		p.Image = flatten(rec.Image)
	}
	if lim, ok := rec.Limits.(map[string]any); ok {
		p.HarnessDigest, _ = lim["harness_digest"].(string)
	}
	p.Limits = flatten(rec.Limits)
	p.Sandbox = flatten(rec.Sandbox)
	return p
}

// flatten lists the leaves of a decoded JSON value as dotted keys, sorted,
// at most maxFields of them.
func flatten(v any) []Field {
	var out []Field
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if len(out) >= maxFields {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		case nil:
		default:
			b, _ := json.Marshal(x)
			s := string(b)
			if str, ok := x.(string); ok {
				s = str
			}
			out = append(out, Field{Key: prefix, Value: truncate(s, maxInputChars)})
		}
	}
	walk("", v)
	return out
}

// recast re-decodes a generic record section into a typed value.
func recast(v any, into any) bool {
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, into) == nil
}

func humanEval(dir string, rec *runs.Record) (*HumanEval, []string) {
	he := &HumanEval{Rows: []TaskRow{}, BasePassAtK: map[string]float64{}}
	var notes []string
	var sum struct {
		Tasks       int                `json:"tasks"`
		Samples     int                `json:"samples"`
		BasePassAtK map[string]float64 `json:"base_pass_at_k"`
		PlusPassAtK map[string]float64 `json:"plus_pass_at_k"`
		PlusScored  bool               `json:"plus_scored"`
		Subset      bool               `json:"subset"`
	}
	if recast(rec.Summary, &sum) {
		he.Tasks, he.Samples, he.PlusScored, he.Subset = sum.Tasks, sum.Samples, sum.PlusScored, sum.Subset
		if sum.BasePassAtK != nil {
			he.BasePassAtK = sum.BasePassAtK
		}
		he.PlusPassAtK = sum.PlusPassAtK
	} else {
		notes = append(notes, "the record holds no summary: the run did not finish scoring")
	}
	var sc struct {
		Tasks    int      `json:"tasks"`
		Passed   int      `json:"passed"`
		BaseOnly []string `json:"base_only_tasks"`
		Failures []struct {
			Task, Phase, Status, Reason string
			Flaky                       bool
		} `json:"failures"`
	}
	if recast(rec.SelfCheck, &sc) {
		he.SelfCheck = &SelfCheck{Tasks: sc.Tasks, Passed: sc.Passed, OK: sc.Tasks > 0 && sc.Passed == sc.Tasks && len(sc.Failures) == 0, BaseOnly: len(sc.BaseOnly)}
		for _, f := range sc.Failures {
			s := fmt.Sprintf("%s %s: %s %s", f.Task, f.Phase, f.Status, truncate(f.Reason, maxInputChars))
			if f.Flaky {
				s += " (flaky)"
			}
			he.SelfCheck.Failures = append(he.SelfCheck.Failures, s)
		}
	}
	sub := rec.Subject
	he.Dataset, he.DatasetHash, he.Engine, he.Canonical = sub.Dataset, sub.DatasetMD5, sub.Engine, sub.Canonical
	var lim struct {
		Run      *codebench.RunLimits `json:"run"`
		BaseOnly bool                 `json:"base_only"`
	}
	if recast(rec.Limits, &lim) {
		he.Limits, he.BaseOnly = lim.Run, lim.BaseOnly
	}
	recorded := false
	for _, f := range rec.Files {
		recorded = recorded || f.Path == "eval_results.json"
	}
	if !recorded {
		notes = append(notes, "the run left no eval_results.json: no per-task table")
		return he, notes
	}
	path := filepath.Join(dir, "eval_results.json")
	f, err := codebench.OpenResultsFile(path)
	if err != nil {
		notes = append(notes, "eval_results.json cannot be read: "+err.Error())
		return he, notes
	}
	defer f.Close()
	rows, hash, maxSamples, plus, err := parseResults(f)
	if err != nil {
		notes = append(notes, "eval_results.json "+err.Error())
		return he, notes
	}
	he.ResultsFound, he.Rows, he.MaxSamples, he.ResultsHash = true, rows, maxSamples, truncate(hash, 64)
	if he.DatasetHash == "" {
		he.DatasetHash = he.ResultsHash
	}
	he.Verdicts = verdictScores(rows, plus)
	he.Disagreements = disagreements(he, sum.Samples)
	return he, notes
}

// verdictScores computes pass@k (k in 1, 10, 100 where every task has k
// samples, as the scorer does) from the per-task verdicts.
func verdictScores(rows []TaskRow, plus bool) *VerdictScores {
	v := &VerdictScores{Tasks: len(rows), PlusScored: plus && len(rows) > 0, BasePassAtK: map[string]float64{}}
	var base, both [][2]int
	for _, r := range rows {
		v.Samples += r.Samples
		base = append(base, [2]int{r.Samples, r.BasePassed})
		both = append(both, [2]int{r.Samples, r.Passed})
	}
	v.BasePassAtK = passAtK(base)
	if v.PlusScored {
		v.PlusPassAtK = passAtK(both)
	}
	return v
}

func passAtK(counts [][2]int) map[string]float64 {
	out := map[string]float64{}
	if len(counts) == 0 {
		return out
	}
	minN := counts[0][0]
	for _, c := range counts {
		minN = min(minN, c[0])
	}
	for _, k := range []int{1, 10, 100} {
		if minN < k {
			continue
		}
		sum := 0.0
		for _, c := range counts {
			sum += codebench.EstimatePassAtK(c[0], c[1], k)
		}
		out["pass@"+strconv.Itoa(k)] = sum / float64(len(counts))
	}
	return out
}

// disagreements lists the claims of the record's summary (tasks, samples,
// plus scored, pass@k) that the verdicts do not give. samples is the
// summary's sample count.
func disagreements(he *HumanEval, samples int) []string {
	v := he.Verdicts
	var out []string
	if he.Tasks != v.Tasks {
		out = append(out, fmt.Sprintf("the record claims %d tasks, the results hold %d", he.Tasks, v.Tasks))
	}
	if samples != v.Samples {
		out = append(out, fmt.Sprintf("the record claims %d samples, the results hold %d", samples, v.Samples))
	}
	if he.PlusScored != v.PlusScored {
		out = append(out, fmt.Sprintf("the record claims plus scored %v, the results say %v", he.PlusScored, v.PlusScored))
	}
	cmp := func(phase string, claim, got map[string]float64) {
		keys := map[string]bool{}
		for k := range claim {
			keys[k] = true
		}
		for k := range got {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			c, okc := claim[k]
			g, okg := got[k]
			switch {
			case !okc:
				out = append(out, fmt.Sprintf("the record claims no %s %s, the verdicts give %.1f%%", phase, k, 100*g))
			case !okg:
				out = append(out, fmt.Sprintf("the record claims %s %s %.1f%%, the verdicts give none", phase, k, 100*c))
			case math.Abs(c-g) > 1e-9:
				out = append(out, fmt.Sprintf("the record claims %s %s %.1f%%, the verdicts give %.1f%%", phase, k, 100*c, 100*g))
			}
		}
	}
	cmp("base", he.BasePassAtK, v.BasePassAtK)
	if he.PlusScored || v.PlusScored {
		cmp("plus", he.PlusPassAtK, v.PlusPassAtK)
	}
	return out
}

// parseResults reads an EvalPlus-format results file into one row per
// task, in task order, with the file's dataset hash and the largest number
// of samples of a task. It holds one task's entries at a time, without
// their programs, never the file.
func parseResults(r io.Reader) (rows []TaskRow, hash string, maxSamples int, plus bool, err error) {
	type idRow struct {
		id  string
		row TaskRow
	}
	var (
		tasks   []idRow
		id      string
		entries []codebench.ResultEntry
		started bool
	)
	flush := func() {
		if started {
			tasks = append(tasks, idRow{id, taskRow(id, entries)})
			maxSamples = max(maxSamples, len(entries))
		}
	}
	plus = true
	head, err := codebench.ReadResults(r, func(next string) error {
		flush()
		id, entries, started = next, nil, true
		return nil
	}, func(_ string, e *codebench.ResultEntry) error {
		e.Solution = "" // a row needs no program
		entries = append(entries, *e)
		plus = plus && e.PlusStatus != nil
		return nil
	})
	if err != nil {
		return nil, "", 0, false, fmt.Errorf("is not valid JSON: %v", err)
	}
	flush()
	hash = head.Hash
	sort.Slice(tasks, func(i, j int) bool { return taskLess(tasks[i].id, tasks[j].id) })
	rows = make([]TaskRow, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, t.row)
	}
	return rows, hash, maxSamples, plus, nil
}

func taskRow(id string, entries []codebench.ResultEntry) TaskRow {
	row := TaskRow{Task: truncate(id, maxInputChars), Samples: len(entries)}
	for _, e := range entries {
		over := false
		for _, p := range []task.Phase{task.Base, task.Plus} {
			c := e.Clocks(p)
			if c == nil {
				continue
			}
			secs, clock := c.JobCPU, "job CPU"
			if c.Run == "" {
				secs, clock = c.Wall, "wall" // an older file: its only figure
			}
			if c.CPULimit > 0 && secs >= 0 && (row.LimitSeconds == 0 || secs/c.CPULimit > row.TimeShare()) {
				row.Seconds, row.LimitSeconds, row.SecondsClock = secs, c.CPULimit, clock
			}
			st := e.BaseStatus
			if p == task.Plus && e.PlusStatus != nil {
				st = *e.PlusStatus
			}
			if share := passShare(c, secs); c.CPULimit > 0 && secs >= 0 && st == codebench.StatusPass && (row.PassLimitSeconds == 0 || share > row.PassShare()) {
				row.PassSeconds, row.PassLimitSeconds, row.PassLimitShare = secs, c.CPULimit, share
			}
			// Past the limit by the clock that holds it (gVisor's job clock
			// is held at a scale of its limit); an older file by its wall.
			over = over || c.PastLimit() || c.Run == "" && c.CPULimit > 0 && secs > c.CPULimit
		}
		if over {
			row.OverLimit++
		}
		if row.NearLimit == "" {
			if e.BaseNearLimit != nil {
				row.NearLimit = "base: " + e.BaseNearLimit.String()
			} else if e.PlusNearLimit != nil {
				row.NearLimit = "plus: " + e.PlusNearLimit.String()
			}
		}
		basePass := e.BaseStatus == codebench.StatusPass
		plusPass := e.PlusStatus == nil || *e.PlusStatus == codebench.StatusPass
		if basePass {
			row.BasePassed++
		}
		if basePass && plusPass {
			row.Passed++
			continue
		}
		if row.Phase != "" {
			continue
		}
		if !basePass {
			row.Phase, row.Reason, row.FailingInput = "base", e.BaseReason, firstInput(e.BaseFailTests)
			if row.Reason == "" {
				row.Reason = string(e.BaseStatus)
			}
		} else {
			row.Phase, row.Reason, row.FailingInput = "plus", e.PlusReason, firstInput(e.PlusFailTests)
			if row.Reason == "" {
				row.Reason = string(*e.PlusStatus)
			}
		}
		row.Reason = truncate(row.Reason, maxInputChars)
	}
	switch {
	case row.Samples > 0 && row.Passed == row.Samples:
		row.Status = "pass"
	case row.Passed == 0:
		row.Status = "fail"
	default:
		row.Status = "partial"
	}
	return row
}

func firstInput(tests []json.RawMessage) string {
	if len(tests) == 0 {
		return ""
	}
	// Re-encode compactly and without JSON's HTML escapes, so the input
	// reads as written; numbers keep their digits.
	dec := json.NewDecoder(bytes.NewReader(tests[0]))
	dec.UseNumber()
	var v any
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if dec.Decode(&v) != nil || enc.Encode(v) != nil {
		return truncate(string(tests[0]), maxInputChars)
	}
	return truncate(strings.TrimSuffix(buf.String(), "\n"), maxInputChars)
}

// truncate cuts s to at most n runes, marking the cut with an ellipsis,
// and replaces line breaks so a value stays on one line.
func truncate(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// taskLess orders task ids by prefix, then by number: HumanEval/2 before
// HumanEval/10.
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
	n, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return id, -1
	}
	return id[:i], n
}

// passShare is how near a pass with clocks c came to a limit (see
// TaskRow.PassLimitShare); secs is its time on the clock the row shows,
// an older file's wall time where c names no run.
func passShare(c *codebench.PhaseClocks, secs float64) float64 {
	if c.Run == "" {
		return secs / c.CPULimit
	}
	return c.LimitShare()
}
