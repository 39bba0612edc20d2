package codebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/workpool"
)

// EvalPlus's scoring core, for users who need upstream's exact code.
const (
	// EvalPlusCommit is the commit of evalplus/evalplus whose code runs.
	EvalPlusCommit = "26d6d00bb1fd0fa37f39c99d5290da67891d1c5e"
	// EvalPlusCatalogID names its tree in the catalog, which pins its
	// tree digest.
	EvalPlusCatalogID = "evalplus-26d6d00"
	// EvalPlusPackage is the folder of a checkout that the catalog pins
	// and the container gets: the evalplus Python package, nothing else
	// of the checkout.
	EvalPlusPackage = "evalplus"
	// EvalPlusTarget is the import root in the container; the package is
	// mounted read-only at EvalPlusTarget/EvalPlusPackage.
	EvalPlusTarget = "/evalplus"
	evalplusData   = "/data"
)

// EvalPlusWeakness is what the run record and the report say about
// verdicts from EvalPlus's own code.
const EvalPlusWeakness = "verdicts are EvalPlus's own (evalplus@26d6d00 untrusted_check, run in repro's sandbox): " +
	"each sample runs in a process forked from the one that holds the expected outputs and reports its result through " +
	"shared memory it can write itself, so a sample can read the expected outputs, return an object that equals " +
	"anything, change its inputs before they are checked (find_zero), or forge its own result; each sample is one job " +
	"of repro's supervisor with a driver of its own, whose processes all end before its result is read, so a sample " +
	"can forge no other sample's verdict, but its own verdict is only as trustworthy as EvalPlus's"

// EvalPlusConfig is one run of EvalPlus's scoring core in the sandbox.
type EvalPlusConfig struct {
	Engine      *sandbox.Engine
	Image       sandbox.Image
	HarnessDir  string // checked with wire.CheckHarness
	TreeDir     string // an EvalPlus checkout, an absolute path; its EvalPlusPackage folder is checked against TreeDigest before it is mounted
	TreeDigest  digest.SHA256
	DatasetFile string // the decompressed dataset's JSON lines (EvalPlus hashes these bytes)
	Dataset     *task.Dataset
	Tasks       []*task.Task
	Samples     []*task.Sample
	Canonical   bool
	BaseOnly    bool
	Parallel    int
	Limits      RunLimits // MinTimeLimit and TimeFactor are passed to EvalPlus
	Progress    func(stage string, done, total int)
}

// packageDir is the folder of the checkout that is pinned and mounted.
func (cfg EvalPlusConfig) packageDir() string { return filepath.Join(cfg.TreeDir, EvalPlusPackage) }

// EvalPlusLimits are the sandbox limits of a container running EvalPlus's
// code: it keeps a task's expected outputs in memory (EvalPlus keeps all of
// them) and forks a process per sample and input list.
func EvalPlusLimits() sandbox.Limits {
	l := wire.SupervisorLimits()
	l.Memory = 2 << 30
	l.Pids = 128
	l.OutputCap = 64 << 20
	return l
}

// evalplusLimitsFor are EvalPlusLimits, with room for MBPP+'s largest
// expected output (Mbpp/255, about 1.1 GB as Python objects, held by the
// driver and by the child it forks): EvalPlus caps each child's address
// space at 4 GiB itself.
func evalplusLimitsFor(b *task.Benchmark) sandbox.Limits {
	l := EvalPlusLimits()
	if b == task.MBPPPlus {
		l.Memory = 6 << 30
	}
	return l
}

// RunEvalPlus runs the self-check (the canonical solutions through
// EvalPlus's path) and then the samples through EvalPlus's scoring core.
func RunEvalPlus(ctx context.Context, cfg EvalPlusConfig) (*StagesReport, error) {
	if cfg.Dataset.InputsFrom != "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--engine evalplus scores EvalPlus's own datasets (HumanEval+, MBPP+); %s is not one", cfg.Dataset.ID)
	}
	if !filepath.IsAbs(cfg.TreeDir) {
		return nil, exitcode.Errorf(exitcode.Usage, "the EvalPlus tree %s is not an absolute path, which the sandbox needs to mount it", cfg.TreeDir)
	}
	if err := wire.CheckTree(cfg.packageDir(), "EvalPlus package "+EvalPlusCatalogID, cfg.TreeDigest); err != nil {
		return nil, err
	}
	plus := !cfg.BaseOnly
	rep := &StagesReport{}
	sc := &evalplusPass{cfg: cfg, stage: "self-check"}
	canon, st, err := sc.run(ctx, CanonicalSamples(cfg.Tasks))
	rep.SelfCheck.Stats = st
	if err != nil {
		return rep, err
	}
	rep.SelfCheck.tally(len(cfg.Tasks), canon, nil)
	if err := rep.SelfCheck.Err("under EvalPlus's code "); err != nil {
		return rep, err
	}
	samples := cfg.Samples
	if cfg.Canonical {
		samples = CanonicalSamples(cfg.Tasks)
	}
	run := &evalplusPass{cfg: cfg, stage: "scoring"}
	results, st, err := run.run(ctx, samples)
	rep.Results = results
	return rep.scored(st, err, cfg.Tasks, cfg.Dataset, plus)
}

type evalplusPass struct {
	cfg   EvalPlusConfig
	stage string
	lines map[string][]byte // each task's line of the dataset file
	mu    sync.Mutex
	done  int
	st    ScoreStats
}

// evalplusResult is the driver's result line (evalplus_driver.py).
type evalplusResult struct {
	Error      string   `json:"error"`
	Modules    []string `json:"modules"`
	GTError    *string  `json:"gt_error"`
	GTSeconds  *float64 `json:"gt_seconds"`
	BaseStatus string   `json:"base_status"`
	BaseFail   int      `json:"base_fail"`
	PlusStatus string   `json:"plus_status"`
	PlusFail   int      `json:"plus_fail"`
}

// evalplusWall is the wall time one sample's driver may run: EvalPlus
// gives the ground truth no limit (the old driver was allowed 30 minutes
// for a task's), and ends each input list's run within about a minute
// (EVALPLUS_TIMEOUT_PER_TASK).
const evalplusWall = 35 * time.Minute

// datasetLines reads the dataset file's lines by task id.
func datasetLines(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	lines := map[string][]byte{}
	for {
		b, err := readLineCapped(r, task.MaxDatasetLine)
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		id, err := lineTaskID(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		lines[id] = b
	}
}

// lineTaskID reads the task id of a dataset line, up to its task_id member:
// the line as a whole is Python's JSON, which may hold Infinity and NaN
// (MBPP+), and is parsed as such by the driver alone.
func lineTaskID(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", fmt.Errorf("a line that is no JSON object")
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", err
		}
		if k == "task_id" {
			if v, err := dec.Token(); err == nil {
				if id, ok := v.(string); ok && id != "" {
					return id, nil
				}
			}
			return "", fmt.Errorf("a line whose task_id is not a name")
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", fmt.Errorf("a line without a task id before %v", err)
		}
	}
	return "", fmt.Errorf("a line without a task id")
}

// run scores samples, each as one job of its own (a fresh driver), several
// containers at once.
func (p *evalplusPass) run(ctx context.Context, samples []*task.Sample) ([]*SampleResult, ScoreStats, error) {
	start := time.Now()
	if p.lines == nil {
		lines, err := datasetLines(p.cfg.DatasetFile)
		if err != nil {
			return nil, ScoreStats{}, err
		}
		p.lines = lines
	}
	results := make([]*SampleResult, len(samples))
	idx := make([]int, len(samples))
	for i, s := range samples {
		results[i] = &SampleResult{Sample: s}
		if !p.cfg.BaseOnly {
			results[i].Plus = &PhaseResult{}
		}
		idx[i] = i
		if p.lines[s.TaskID] == nil {
			return nil, ScoreStats{}, fmt.Errorf("%s is not in %s", s.TaskID, p.cfg.DatasetFile)
		}
	}
	p.st = ScoreStats{Jobs: len(samples), Supervisors: workpool.Size(p.cfg.Parallel, len(samples))}
	var peak peakMemory
	launch := p.launcher()
	err := workpool.Run(ctx, p.cfg.Parallel, idx, workpool.Worker[*wire.Worker, int]{
		Start: func() *wire.Worker { return wire.NewWorker(launch) },
		Do: func(ctx context.Context, w *wire.Worker, i int) error {
			return p.score(ctx, w, results[i], len(samples))
		},
		Stop: func(w *wire.Worker) { peak.note(w.Release(ctx)) },
	})
	st := p.st
	st.Wall, st.PeakMemory = time.Since(start), peak.max()
	if err != nil {
		return nil, st, err
	}
	return results, st, nil
}

// launcher starts a supervisor whose container also holds EvalPlus's
// package, checked against its tree digest before every start.
func (p *evalplusPass) launcher() wire.Launcher {
	cfg := p.cfg
	return func(ctx context.Context) (wire.Transport, error) {
		if err := wire.CheckHarness(cfg.HarnessDir); err != nil {
			return nil, err
		}
		if err := wire.CheckTree(cfg.packageDir(), "EvalPlus package "+EvalPlusCatalogID, cfg.TreeDigest); err != nil {
			return nil, err
		}
		env := map[string]string{"REPRO_SANDBOX": "1", "REPRO_EVALPLUS_TREE": EvalPlusTarget}
		if cfg.Engine.Runtime() == sandbox.Runsc {
			env["REPRO_CPU_CLOCK"] = "proc"
		}
		c, err := cfg.Engine.Start(ctx, sandbox.Spec{
			Image: cfg.Image,
			Cmd:   wire.SupervisorCmd(),
			Env:   env,
			ReadOnly: []sandbox.Mount{
				{Source: cfg.HarnessDir, Target: wire.HarnessTarget},
				{Source: cfg.packageDir(), Target: path.Join(EvalPlusTarget, EvalPlusPackage)},
			},
			Limits: evalplusLimitsFor(cfg.Dataset.Bench()),
			Stdin:  true,
			Labels: map[string]string{"humaneval": "evalplus"},
		})
		if err != nil {
			return nil, err
		}
		return wire.NewTransport(c), nil
	}
}

// score runs one sample as one job and sets its result.
func (p *evalplusPass) score(ctx context.Context, w *wire.Worker, res *SampleResult, total int) error {
	s := res.Sample
	tk := p.cfg.Dataset.Task(s.TaskID)
	hdr := &wire.EvalPlusHeader{Kind: "evalplus", Dataset: p.cfg.Dataset.Bench().Name, BaseOnly: p.cfg.BaseOnly,
		MinTimeLimit: p.cfg.Limits.MinTimeLimit, Factor: p.cfg.Limits.TimeFactor, WallLimit: evalplusWall.Seconds()}
	set := func(pr PhaseResult) {
		res.Base = pr
		if res.Plus != nil {
			*res.Plus = pr
		}
	}
	prog, err := s.Program()
	if err != nil {
		return err
	}
	for setups := 0; ; setups++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		j := &wire.Job{ID: nextJobID(), Program: prog, Body: p.lines[s.TaskID], EvalPlus: hdr,
			PhaseLimit: evalplusWall.Seconds()/20 + 30, FSize: evalplusLimitsFor(p.cfg.Dataset.Bench()).FSize}
		end, err := w.Run(ctx, j, func(int, wire.Record) bool { return true })
		if err != nil {
			return err
		}
		if end.Last || end.Status == wire.EndLost {
			p.count(func(st *ScoreStats) { st.Retired++ })
		}
		switch end.Status {
		case wire.EndDone:
			r, err := parseEvalPlusResult(end.Result, res.Plus != nil)
			switch {
			case err != nil:
				set(PhaseResult{Status: StatusFail, FailInput: -1, Reason: "no verdict from EvalPlus's driver: " + err.Error()})
			case r.Error == "missing":
				return exitcode.Errorf(exitcode.Precondition, "the evaluator image lacks the Python modules %v that EvalPlus's scoring core imports (Debian python3-numpy, python3-psutil): build an image that holds them", r.Modules)
			case r.GTError != nil:
				set(PhaseResult{Status: StatusFail, FailInput: -1, Reason: "EvalPlus's ground truth failed: " + *r.GTError})
			default:
				res.Base = evalplusPhase(tk, task.Base, r.BaseStatus, r.BaseFail)
				if res.Plus != nil {
					*res.Plus = evalplusPhase(tk, task.Plus, r.PlusStatus, r.PlusFail)
				}
			}
		case wire.EndTimeout:
			set(PhaseResult{Status: StatusTimeout, FailInput: -1, Reason: "EvalPlus's driver did not end in time: " + end.Detail})
		case wire.EndSetup:
			if setups == 0 {
				continue // once more, in a fresh container
			}
			return fmt.Errorf("the sandbox could not start EvalPlus's driver for %s: %s", s.TaskID, end.Detail)
		case wire.EndLost:
			st := StatusFail
			if end.Detail == "the supervisor did not finish the job in time" {
				st = StatusTimeout
			}
			set(PhaseResult{Status: st, FailInput: -1, Reason: "the job lost its supervisor: " + end.Detail})
		default:
			reason := fmt.Sprintf("the job ended %s: %s", end.Status, end.Detail)
			if tail := strings.TrimSpace(end.Stderr); tail != "" {
				reason += "; stderr: " + task.Clip(tail)
			}
			set(PhaseResult{Status: StatusFail, FailInput: -1, Reason: reason})
		}
		if end.Outlived > 0 {
			p.count(func(st *ScoreStats) { st.Outlived++ })
			note := fmt.Sprintf("; %d process(es) of the sample outlived EvalPlus's driver and were killed with its job", end.Outlived)
			res.Base.Reason += note
			if res.Plus != nil {
				res.Plus.Reason += note
			}
		}
		p.progress(total)
		return nil
	}
}

// parseEvalPlusResult reads the driver's one line.
func parseEvalPlusResult(s string, plus bool) (evalplusResult, error) {
	var r evalplusResult
	line, rest, ok := strings.Cut(s, "\n")
	if !ok || rest != "" {
		return r, fmt.Errorf("the driver's result pipe holds %d bytes, not one line", len(s))
	}
	if err := strictjson.DecodeOpen([]byte(line), &r); err != nil {
		return r, fmt.Errorf("the driver's result line is not its JSON: %v", err)
	}
	if r.Error == "" && r.GTError == nil && (r.GTSeconds == nil || r.BaseStatus == "" || (plus && r.PlusStatus == "")) {
		return r, fmt.Errorf("the driver's result line lacks a verdict")
	}
	return r, nil
}

func (p *evalplusPass) count(f func(*ScoreStats)) {
	p.mu.Lock()
	f(&p.st)
	p.mu.Unlock()
}

func (p *evalplusPass) progress(total int) {
	p.mu.Lock()
	p.done++
	d := p.done
	p.mu.Unlock()
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.stage, d, total)
	}
}

// readLineCapped reads one line; longer lines are read and dropped.
func readLineCapped(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over && len(line)+len(chunk) <= max {
			line = append(line, chunk...)
		} else {
			over, line = true, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(line) > 0 && !over {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
		if over {
			over, line = false, nil
			continue
		}
		return line, nil
	}
}

func evalplusPhase(tk *task.Task, p task.Phase, verdict string, fail int) PhaseResult {
	status := Status(verdict)
	switch status {
	case StatusPass, StatusFail, StatusTimeout:
	default:
		status = StatusFail
	}
	if fail < 0 || fail >= len(tk.Inputs(p)) || status == StatusPass {
		fail = -1
	}
	return PhaseResult{Status: status, FailInput: fail, Reason: "EvalPlus's verdict"}
}
