// Package reproduce re-executes a submitted scoring run: `repro runs
// reproduce BUNDLE.tar` takes the evidence bundle of a HumanEval run
// scored elsewhere (repro runs export), checks it against the trust file
// of submitters as `runs verify --bundle` does, and scores the samples
// the run kept in its workspace again, in this machine's sandbox, with the
// reference profile: the dataset's catalog pin, every task (the
// submission's subset where it scored one, which a board never ranks),
// repro's own engine, the locally pinned evaluator image and harness
// under this REPRO_HOME's image policy, default limits, the self-check,
// never the verdict cache and never --base-only. The re-execution is a
// run of its own, of kind "reproduce", signed with the local run key; its
// record names the submission (run id, signer key, bundle and record
// digests) and its reproduction.json lists, verdict by verdict, where the
// two agree and where they differ.
//
// Latest is the query a board asks: the newest reproduction of a run made
// on this machine and signed with its own key, or none.
package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/workload"
)

// Kind is the kind of a reproduction run (its id starts "reproduce-").
const Kind = "reproduce"

// OutputFile is the reproduction's output in its run folder.
const OutputFile = "reproduction.json"

// Schema names the format of OutputFile.
const Schema = "repro.reproduction/v1"

// Submission is the run a reproduction re-executed, as its bundle showed
// it after it verified.
type Submission struct {
	RunID string `json:"run_id"`
	// Signer and SignerKeyID are the trusted key that signed the run.
	Signer      string `json:"signer"`
	SignerKeyID string `json:"signer_key_id"`
	// BundleSHA256 is the digest of the bundle's bytes as they were read
	// and checked; RecordSHA256 that of the run's record.json.
	BundleSHA256  string `json:"bundle_sha256"`
	RecordSHA256  string `json:"record_sha256"`
	Label         string `json:"label,omitempty"`
	Dataset       string `json:"dataset"`
	Engine        string `json:"engine"`
	SamplesSHA256 string `json:"samples_sha256"`
	Subset        bool   `json:"subset"`
}

// Result is a reproduction's output (OutputFile).
type Result struct {
	Schema     string     `json:"schema"`
	RunID      string     `json:"run_id"`
	Submission Submission `json:"submission"`
	// Agrees: every verdict agrees (the run's exit code is 0; 1 when not).
	Agrees bool `json:"agrees"`
	Comparison
}

// Report is what Reproduce reports: its result (nil when the re-execution
// did not complete) and the re-execution's scoring report.
type Report struct {
	*Result
	Run *codebench.RunReport `json:"run"`
}

// Options are the choices of a reproduction.
type Options struct {
	Bundle string // the evidence bundle, a path the user named
	// Trust is the trust file of submitters the bundle must verify
	// against.
	Trust    *trust.File
	Parallel int    // sandbox containers at once
	Version  string // repro's version, for the record
	// Verified, if set, is told the submission once its bundle verified,
	// before anything runs.
	Verified func(Submission)
	Warn     func(string)
	Progress func(stage string, done, total int)
}

// recordSummary is the reproduction as the run record states it (the
// lists are in OutputFile).
type recordSummary struct {
	Submission  Submission `json:"submission"`
	Verdicts    int        `json:"verdicts"`
	Agree       int        `json:"agree"`
	Differences int        `json:"differences"`
	Agrees      bool       `json:"agrees"`
}

// recordExtra is the record's extra section of a reproduction run: the
// scoring report and the reproduction.
type recordExtra struct {
	*codebench.RunReport
	Reproduction *recordSummary `json:"reproduction"`
}

// Reproduce re-executes the submission in bundle o.Bundle (see the package
// comment). A bundle that does not verify, or whose samples copy is not
// the samples its record names, is an exitcode.Integrity error and nothing
// runs; a bundle of a run that cannot be re-executed (not a completed
// HumanEval run of samples) is a usage error. Otherwise the re-execution
// is a signed run whatever its outcome; the error is an exitcode.Negative
// error when any verdict differs.
func Reproduce(ctx context.Context, st *store.Store, o Options) (*Report, error) {
	tmp, err := os.MkdirTemp("", "repro-reproduce-")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot make a folder to extract bundle %q into: %v", o.Bundle, err)
	}
	defer os.RemoveAll(tmp)
	bundleDir := filepath.Join(tmp, "bundle")
	v, err := runs.ExtractBundleContext(ctx, o.Bundle, o.Trust, bundleDir)
	if err != nil {
		return nil, err
	}
	rec := v.Record
	if rec.Kind != "humaneval" {
		return nil, exitcode.Errorf(exitcode.Usage, "bundle %q holds a run of kind %q; only humaneval runs are re-executed", o.Bundle, rec.Kind)
	}
	if rec.Status != "ok" {
		return nil, exitcode.Errorf(exitcode.Usage, "bundle %q holds run %s, which ended %s: it has no verdicts to re-execute", o.Bundle, rec.ID, rec.Status)
	}
	sub, run, err := submissionOf(v, o.Bundle)
	if err != nil {
		return nil, err
	}
	runDir := filepath.Join(bundleDir, "run")
	samples, err := stageSamples(runDir, filepath.Join(tmp, "samples"), run)
	if err != nil {
		return nil, err
	}
	submitted, err := ParseResultsFile(filepath.Join(runDir, "eval_results.json"))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "bundle %q: run %s's results file eval_results.json: %v", o.Bundle, rec.ID, err)
	}
	tasks := ""
	if sub.Subset {
		ids := make([]string, 0, len(submitted.Eval))
		for t := range submitted.Eval {
			ids = append(ids, t)
		}
		if len(ids) == 0 {
			return nil, exitcode.Errorf(exitcode.Usage, "bundle %q: run %s scored a subset of no tasks", o.Bundle, rec.ID)
		}
		sort.Slice(ids, func(i, j int) bool { return taskLess(ids[i], ids[j]) })
		tasks = strings.Join(ids, ",")
	}
	if o.Verified != nil {
		o.Verified(sub)
	}
	subject := runlabel.Subject{Label: run.Label, Model: run.Model}
	if runlabel.CheckLabel(subject.Label) != nil {
		subject.Label = ""
	}
	if runlabel.CheckModel(subject.Model) != nil {
		subject.Model = ""
	}
	out := &Report{}
	hopts := codebench.Options{
		Samples: samples, Dataset: run.choice, Tasks: tasks, Limits: codebench.DefaultRunLimits(), Engine: codebench.EngineRepro,
		Parallel: o.Parallel, Version: o.Version, Subject: subject, Kind: Kind, Warn: o.Warn, Progress: o.Progress,
		Finish: func(r *workload.Run, rep *codebench.RunReport, err error) error {
			extra := &recordExtra{RunReport: rep}
			r.Record.Extra = extra
			if err != nil {
				return err
			}
			if got := rep.Samples.SHA256.Hex(); got != sub.SamplesSHA256 {
				return exitcode.Errorf(exitcode.Integrity, "the samples re-executed have sha256 %s, the submission's record names %s", got, sub.SamplesSHA256)
			}
			again, err := ParseResultsFile(rep.ResultsFile)
			if err != nil {
				return err
			}
			c := Compare(submitted, again)
			res := &Result{Schema: Schema, RunID: r.ID, Submission: sub, Agrees: c.Agrees(), Comparison: *c}
			if err := r.WriteJSON(OutputFile, res, 0o644); err != nil {
				return err
			}
			out.Result = res
			extra.Reproduction = &recordSummary{Submission: sub, Verdicts: c.Verdicts, Agree: c.Agree, Differences: len(c.Differences), Agrees: res.Agrees}
			if !res.Agrees {
				return exitcode.Errorf(exitcode.Negative, "run %s of %q is not reproduced: %s", sub.RunID, o.Bundle, res.Tally())
			}
			return nil
		},
	}
	rep, err := codebench.Score(ctx, st, hopts)
	out.Run = rep
	if rep == nil {
		return nil, err
	}
	return out, err
}

// Tally says how the verdicts compared: "3 of 3 verdicts agree", "2 of 3
// verdicts agree, 1 differs".
func (c *Comparison) Tally() string {
	s := fmt.Sprintf("%d of %d verdicts agree", c.Agree, c.Verdicts)
	if n := len(c.Differences); n > 0 {
		s += fmt.Sprintf(", %d differ%s", n, map[bool]string{true: "s", false: ""}[n == 1])
	}
	if c.Dataset != "" {
		s += "; " + c.Dataset
	}
	return s
}

// submittedRun is what a submission's record says about its scoring, read
// from its extra section (RunReport's names).
type submittedRun struct {
	Dataset   string `json:"dataset"`
	Engine    string `json:"engine"`
	Canonical bool   `json:"canonical"`
	Samples   *struct {
		Format string        `json:"format"`
		SHA256 digest.SHA256 `json:"sha256"`
	} `json:"samples"`
	Summary *struct {
		Subset bool `json:"subset"`
	} `json:"summary"`

	Label, Model string `json:"-"`
	choice       string // the key of task.DatasetChoices
}

// submissionOf reads what the verified record v says of its run.
func submissionOf(v *runs.Verification, bundle string) (Submission, *submittedRun, error) {
	rec := v.Record
	bad := func(format string, args ...any) (Submission, *submittedRun, error) {
		return Submission{}, nil, exitcode.Errorf(exitcode.Usage, "bundle %q: run %s: %s", bundle, rec.ID, fmt.Sprintf(format, args...))
	}
	raw, err := jsonOf(rec.Extra)
	if err != nil {
		return bad("its record's extra section: %v", err)
	}
	var run submittedRun
	if err := strictjson.DecodeOpen(raw, &run); err != nil {
		return bad("its record's extra section: %v", err)
	}
	if run.Canonical || run.Samples == nil {
		return bad("it scored the canonical solutions, not submitted samples")
	}
	if run.Summary == nil {
		return bad("its record has no summary")
	}
	if run.Samples.Format != "jsonl" && run.Samples.Format != "folder" {
		return bad("its samples have format %q", run.Samples.Format)
	}
	if len(rec.Assets) > 0 {
		for k, c := range task.DatasetChoices {
			if c.ID == rec.Assets[0].ID {
				run.choice = k
			}
		}
	}
	if run.choice == "" {
		return bad("it scored no dataset of this repro's catalog (%s)", task.DatasetNames)
	}
	run.Label, run.Model = rec.Subject.Label, rec.Subject.Model
	sub := Submission{
		RunID: rec.ID, BundleSHA256: v.BundleSHA256.Hex(), RecordSHA256: v.RecordSHA256, Label: run.Label,
		Dataset: run.Dataset, Engine: run.Engine, SamplesSHA256: run.Samples.SHA256.Hex(), Subset: run.Summary.Subset,
	}
	if v.Key != nil {
		sub.Signer, sub.SignerKeyID = v.Key.Name, v.Key.ID
	}
	return sub, &run, nil
}

// stageSamples finds the samples copy in the run folder's workspace,
// checks it against the digest the record names, and returns a path to
// score it from: the .jsonl file itself, or a folder in EvalPlus's layout
// rebuilt under dir from the workspace's flat names (HumanEval_N-K.py).
// A copy that is not the samples the record names is an
// exitcode.Integrity error.
func stageSamples(runDir, dir string, run *submittedRun) (string, error) {
	ws := filepath.Join(runDir, "workspace")
	ents, err := os.ReadDir(ws)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Integrity, "the run keeps no samples copy (workspace): %v", err)
	}
	want := run.Samples.SHA256
	mismatch := func(got digest.SHA256) error {
		return exitcode.Errorf(exitcode.Integrity, "the samples copy in the run's workspace has sha256 %s, its signed record names %s", got.Hex(), want.Hex())
	}
	if run.Samples.Format == "jsonl" {
		if len(ents) != 1 || !ents[0].Type().IsRegular() || !strings.HasSuffix(ents[0].Name(), ".jsonl") {
			return "", exitcode.Errorf(exitcode.Integrity, "the run's workspace does not hold exactly one .jsonl samples file")
		}
		p := filepath.Join(ws, ents[0].Name())
		f, err := safefile.OpenRegular(p)
		if err != nil {
			return "", err
		}
		got, _, err := digest.ReaderFrom(f)
		f.Close()
		if err != nil {
			return "", err
		}
		if got != want {
			return "", mismatch(got)
		}
		return p, nil
	}
	type flat struct {
		name, task string
		n, k       int
	}
	var files []flat
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".py")
		i := strings.LastIndexByte(stem, '-')
		j := strings.LastIndexByte(stem, '_')
		if !ok || !e.Type().IsRegular() || i < 0 || j < 0 || j > i {
			return "", exitcode.Errorf(exitcode.Integrity, "the run's workspace holds %q, which is not a sample of a samples folder", e.Name())
		}
		n, nerr := strconv.Atoi(stem[j+1 : i])
		k, kerr := strconv.Atoi(stem[i+1:])
		if nerr != nil || kerr != nil || n < 0 || k < 0 || strconv.Itoa(n) != stem[j+1:i] || strconv.Itoa(k) != stem[i+1:] {
			return "", exitcode.Errorf(exitcode.Integrity, "the run's workspace holds %q, which is not a sample of a samples folder", e.Name())
		}
		files = append(files, flat{name: e.Name(), task: stem[:i], n: n, k: k})
	}
	sort.Slice(files, func(a, b int) bool {
		if files[a].n != files[b].n {
			return files[a].n < files[b].n
		}
		return files[a].k < files[b].k
	})
	h := digest.NewHash()
	for _, f := range files {
		b, err := safefile.ReadFile(filepath.Join(ws, f.name), maxProgram)
		if err != nil {
			return "", exitcode.Errorf(exitcode.Integrity, "sample %q of the run's workspace: %v", f.name, err)
		}
		fmt.Fprintf(h, "%s %s\n", f.name, digest.Of(b).Hex())
		td := filepath.Join(dir, f.task)
		if err := os.MkdirAll(td, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(td, strconv.Itoa(f.k)+".py"), b, 0o444); err != nil {
			return "", err
		}
	}
	if got := h.Digest(); got != want {
		return "", mismatch(got)
	}
	return dir, nil
}

// maxProgram bounds one sample file, as the scorer bounds it.
const maxProgram = 1 << 20

// jsonOf is v (a record section decoded as JSON) as JSON again.
func jsonOf(v any) ([]byte, error) {
	if v == nil {
		return nil, errors.New("missing")
	}
	return json.Marshal(v)
}
