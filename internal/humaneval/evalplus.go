package humaneval

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

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
	"anything, change its inputs before they are checked (find_zero), or forge its own result; the driver's results " +
	"reach repro tagged on a channel no sample holds, so a sample can forge no other sample's verdict, but its own " +
	"verdict is only as trustworthy as EvalPlus's"

// EvalPlusConfig is one run of EvalPlus's scoring core in the sandbox.
type EvalPlusConfig struct {
	Engine      *sandbox.Engine
	Image       sandbox.Image
	HarnessDir  string // checked with CheckHarness
	TreeDir     string // an EvalPlus checkout; its EvalPlusPackage folder is checked against TreeDigest before it is mounted
	TreeDigest  digest.SHA256
	DatasetFile string // the decompressed dataset's JSON lines (EvalPlus hashes these bytes)
	Dataset     *Dataset
	Tasks       []*Task
	Samples     []*Sample
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
	l := SupervisorLimits()
	l.Memory = 2 << 30
	l.Pids = 128
	l.OutputCap = 64 << 20
	return l
}

// evalplusLimitsFor are EvalPlusLimits, with room for MBPP+'s largest
// expected output (Mbpp/255, about 1.1 GB as Python objects, held by the
// driver and by the child it forks): EvalPlus caps each child's address
// space at 4 GiB itself.
func evalplusLimitsFor(b *Benchmark) sandbox.Limits {
	l := EvalPlusLimits()
	if b == MBPPPlus {
		l.Memory = 6 << 30
	}
	return l
}

// RunEvalPlus runs the self-check (the canonical solutions through
// EvalPlus's path) and then the samples through EvalPlus's scoring core.
func RunEvalPlus(ctx context.Context, cfg EvalPlusConfig) (*Report, error) {
	if cfg.Dataset.InputsFrom != "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--engine evalplus scores EvalPlus's own datasets (HumanEval+, MBPP+); %s is not one", cfg.Dataset.ID)
	}
	if err := CheckTree(cfg.packageDir(), "EvalPlus package "+EvalPlusCatalogID, cfg.TreeDigest); err != nil {
		return nil, err
	}
	plus := !cfg.BaseOnly
	rep := &Report{}
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
	return rep.scored(results, st, err, cfg.Tasks, cfg.Dataset, plus)
}

type evalplusPass struct {
	cfg   EvalPlusConfig
	stage string
	mu    sync.Mutex
	done  int
}

type evalplusJob struct {
	TaskID       string           `json:"task_id"`
	Samples      []evalplusSample `json:"samples"`
	BaseOnly     bool             `json:"base_only"`
	MinTimeLimit float64          `json:"min_time_limit"`
	Factor       float64          `json:"gt_time_limit_factor"`
}

type evalplusSample struct {
	ID       int    `json:"id"`
	Solution string `json:"solution"`
}

type evalplusLine struct {
	Error      string   `json:"error"`
	Modules    []string `json:"modules"`
	Hello      int      `json:"hello"`
	TaskID     string   `json:"task_id"`
	GTError    *string  `json:"gt_error"`
	GTSeconds  *float64 `json:"gt_seconds"`
	ID         *int     `json:"id"`
	BaseStatus string   `json:"base_status"`
	BaseFail   int      `json:"base_fail"`
	PlusStatus string   `json:"plus_status"`
	PlusFail   int      `json:"plus_fail"`
}

const maxEvalPlusLine = 1 << 20

// run scores samples, several containers at once, each taking whole tasks.
func (p *evalplusPass) run(ctx context.Context, samples []*Sample) ([]*SampleResult, ScoreStats, error) {
	start := time.Now()
	results := make([]*SampleResult, len(samples))
	byTask := map[string][]int{}
	var order []string
	for i, s := range samples {
		results[i] = &SampleResult{Sample: s}
		if !p.cfg.BaseOnly {
			results[i].Plus = &PhaseResult{}
		}
		if _, ok := byTask[s.TaskID]; !ok {
			order = append(order, s.TaskID)
		}
		byTask[s.TaskID] = append(byTask[s.TaskID], i)
	}
	sort.SliceStable(order, func(i, j int) bool { return len(byTask[order[i]]) > len(byTask[order[j]]) })
	st := ScoreStats{Jobs: len(samples), Supervisors: workpool.Size(p.cfg.Parallel, len(order))}
	var peak peakMemory
	err := workpool.Run(ctx, p.cfg.Parallel, order, workpool.Worker[*evalplusContainer, string]{
		Start: func() *evalplusContainer { return &evalplusContainer{p: p} },
		Do: func(ctx context.Context, c *evalplusContainer, task string) error {
			return c.task(ctx, task, byTask[task], results, len(samples))
		},
		Stop: func(c *evalplusContainer) { peak.note(c.stop(false)) },
	})
	st.Wall, st.PeakMemory = time.Since(start), peak.max()
	if err != nil {
		return nil, st, err
	}
	return results, st, nil
}

// evalplusContainer is one container running the driver.
type evalplusContainer struct {
	p    *evalplusPass
	c    *sandbox.Container
	r    *bufio.Reader
	peak int64
	key  []byte // the channel key of c
	seq  uint64 // lines read from c
	// scored counts the samples c has scored; a sample that breaks the
	// stream as the first of a fresh container fails.
	scored int
}

// errEvalPlusBroken: a line on the driver's stream that the relay did not
// tag, or that is not the one the host awaits.
var errEvalPlusBroken = errors.New("the driver's stream holds a line the driver did not send or did not send now")

func (c *evalplusContainer) start(ctx context.Context) error {
	cfg := c.p.cfg
	if err := CheckHarness(cfg.HarnessDir); err != nil {
		return err
	}
	if err := CheckTree(cfg.packageDir(), "EvalPlus package "+EvalPlusCatalogID, cfg.TreeDigest); err != nil {
		return err
	}
	data := path.Join(evalplusData, cfg.Dataset.Bench().DataFile)
	ct, err := cfg.Engine.Start(ctx, sandbox.Spec{
		Image: cfg.Image,
		Cmd:   []string{"/usr/bin/python3", "-I", HarnessTarget + "/evalplus_driver.py"},
		Env: map[string]string{"REPRO_SANDBOX": "1", "REPRO_EVALPLUS_TREE": EvalPlusTarget,
			"REPRO_EVALPLUS_DATASET": data, "REPRO_EVALPLUS_BENCHMARK": cfg.Dataset.Bench().Name},
		ReadOnly: []sandbox.Mount{
			{Source: cfg.HarnessDir, Target: HarnessTarget},
			{Source: cfg.packageDir(), Target: path.Join(EvalPlusTarget, EvalPlusPackage)},
			{Source: cfg.DatasetFile, Target: data},
		},
		Limits: evalplusLimitsFor(cfg.Dataset.Bench()),
		Stdin:  true,
		Labels: map[string]string{"humaneval": "evalplus"},
	})
	if err != nil {
		return err
	}
	c.c, c.r = ct, bufio.NewReaderSize(ct.Stdout(), 1<<16)
	c.key, c.seq, c.scored = make([]byte, 32), 0, 0
	rand.Read(c.key)
	if _, err := ct.Stdin().Write([]byte(`{"key":"` + hex.EncodeToString(c.key) + "\"}\n")); err != nil {
		c.stop(true)
		return fmt.Errorf("cannot send the channel key to EvalPlus's driver: %v", err)
	}
	line, err := c.line(2 * time.Minute)
	if err != nil {
		c.stop(true)
		return fmt.Errorf("EvalPlus's driver did not start: %v", err)
	}
	if line.Error == "missing" {
		c.stop(true)
		return exitcode.Errorf(exitcode.Precondition, "the evaluator image lacks the Python modules %v that EvalPlus's scoring core imports (Debian python3-numpy, python3-psutil): build an image that holds them", line.Modules)
	}
	if line.Hello != 1 {
		c.stop(true)
		return fmt.Errorf("EvalPlus's driver did not say hello")
	}
	return nil
}

func (c *evalplusContainer) stop(abort bool) int64 {
	if c.c == nil {
		return c.peak
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if abort {
		c.c.Kill(ctx)
	} else {
		c.c.Stdin().Close()
	}
	if o, err := c.c.Wait(ctx); err == nil && o.PeakMemory > c.peak {
		c.peak = o.PeakMemory
	}
	c.c, c.r = nil, nil
	return c.peak
}

var errEvalPlusTimeout = errors.New("no output from EvalPlus's driver in time")

// line reads the next line within d: the relay's tag, a space and the
// driver's JSON line. A line without the tag of the next line number is
// errEvalPlusBroken.
func (c *evalplusContainer) line(d time.Duration) (evalplusLine, error) {
	ct := c.c
	timer := time.AfterFunc(d, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ct.Kill(ctx)
	})
	defer timer.Stop()
	b, err := readLineCapped(c.r, maxEvalPlusLine)
	if err != nil {
		if !timer.Stop() {
			return evalplusLine{}, errEvalPlusTimeout
		}
		return evalplusLine{}, err
	}
	tag, body, ok := bytes.Cut(bytes.TrimSuffix(b, []byte("\n")), []byte(" "))
	want := c.tag(body)
	got := make([]byte, len(want))
	if !ok || len(tag) != 2*len(want) {
		return evalplusLine{}, errEvalPlusBroken
	}
	if _, err := hex.Decode(got, tag); err != nil || !hmac.Equal(got, want) {
		return evalplusLine{}, errEvalPlusBroken
	}
	c.seq++
	var l evalplusLine
	if err := strictjson.DecodeOpen(body, &l); err != nil {
		return evalplusLine{}, fmt.Errorf("a line of EvalPlus's driver is not its JSON: %v", err)
	}
	return l, nil
}

// tag is the relay's tag of the next line, body.
func (c *evalplusContainer) tag(body []byte) []byte {
	m := digest.NewHMAC(c.key)
	m.Write([]byte("repro-evalplus"))
	m.Write(binary.BigEndian.AppendUint64(nil, c.seq))
	m.Write(body)
	sum := m.Digest()
	return sum[:]
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

// task scores the samples idx of one task; if the container dies, the
// sample being scored gets EvalPlus's status for a child that never
// reported (timeout) and the rest go to a fresh container.
func (c *evalplusContainer) task(ctx context.Context, taskID string, idx []int, results []*SampleResult, total int) error {
	task := c.p.cfg.Dataset.Task(taskID)
	for len(idx) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.c == nil {
			if err := c.start(ctx); err != nil {
				return err
			}
		}
		job := evalplusJob{TaskID: taskID, BaseOnly: c.p.cfg.BaseOnly,
			MinTimeLimit: c.p.cfg.Limits.MinTimeLimit, Factor: c.p.cfg.Limits.TimeFactor}
		for _, i := range idx {
			job.Samples = append(job.Samples, evalplusSample{ID: i, Solution: results[i].Sample.Solution})
		}
		b, _ := json.Marshal(job)
		if _, err := c.c.Stdin().Write(append(b, '\n')); err != nil {
			c.stop(true)
			return fmt.Errorf("cannot send %s to EvalPlus's driver: %v", taskID, err)
		}
		l, err := c.line(30 * time.Minute)
		if err == nil && (l.TaskID != taskID || (l.GTError == nil && l.GTSeconds == nil)) {
			err = errEvalPlusBroken
		}
		if err == errEvalPlusBroken && c.scored > 0 {
			// A process left by an earlier task's sample: the task starts
			// again in a fresh container.
			c.stop(true)
			continue
		}
		if err != nil {
			c.stop(true)
			return fmt.Errorf("EvalPlus's ground truth for %s did not finish: %v", taskID, err)
		}
		if l.GTError != nil {
			for _, i := range idx {
				results[i].Base = PhaseResult{Status: StatusFail, FailInput: -1, Reason: "EvalPlus's ground truth failed: " + *l.GTError}
				if results[i].Plus != nil {
					*results[i].Plus = results[i].Base
				}
			}
			return nil
		}
		for len(idx) > 0 {
			i := idx[0]
			// EvalPlus's own limits end a sample's two runs within about
			// two minutes; more means the driver is stuck.
			l, err := c.line(5 * time.Minute)
			if err == nil && (l.TaskID != taskID || l.ID == nil || *l.ID != i) {
				err = errEvalPlusBroken
			}
			if err == errEvalPlusBroken && c.scored > 0 {
				// Sample i or one scored before it in this container wrote
				// into the stream: the container is retired and i and the
				// rest are scored in a fresh one, where i comes first.
				c.stop(true)
				break
			}
			if err != nil {
				// The driver died or hung while scoring sample i, or i broke
				// the stream as the first sample of a fresh container.
				res := PhaseResult{Status: StatusTimeout, FailInput: -1, Reason: "EvalPlus's driver ended while scoring this sample: " + err.Error()}
				if err == errEvalPlusBroken {
					res = PhaseResult{Status: StatusFail, FailInput: -1, Reason: "the sample wrote into the stream of EvalPlus's driver, as the first sample of a fresh container"}
				}
				results[i].Base = res
				if results[i].Plus != nil {
					*results[i].Plus = res
				}
				c.stop(true)
				idx = idx[1:]
				c.progress(total)
				break
			}
			results[i].Base = evalplusPhase(task, Base, l.BaseStatus, l.BaseFail)
			if results[i].Plus != nil {
				*results[i].Plus = evalplusPhase(task, Plus, l.PlusStatus, l.PlusFail)
			}
			c.scored++
			idx = idx[1:]
			c.progress(total)
		}
	}
	return nil
}

func (c *evalplusContainer) progress(total int) {
	p := c.p
	p.mu.Lock()
	p.done++
	d := p.done
	p.mu.Unlock()
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.stage, d, total)
	}
}

func evalplusPhase(task *Task, p Phase, verdict string, fail int) PhaseResult {
	status := Status(verdict)
	switch status {
	case StatusPass, StatusFail, StatusTimeout:
	default:
		status = StatusFail
	}
	if fail < 0 || fail >= len(task.Inputs(p)) || status == StatusPass {
		fail = -1
	}
	return PhaseResult{Status: status, FailInput: fail, Reason: "EvalPlus's verdict"}
}
