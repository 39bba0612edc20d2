package shard

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/workload"
)

// MergeReport is the merged run's report: the humaneval report of the
// whole run, and the shards it was merged from. It is the merge command's
// --json document and the merged run record's extra section.
type MergeReport struct {
	codebench.RunReport
	Bundle     string        `json:"bundle"`
	PlanSHA256 digest.SHA256 `json:"plan_sha256"`
	Shards     []MergedShard `json:"shards"`
}

// MergedShard is one shard as the merge verified it.
type MergedShard struct {
	Index     int     `json:"index"`
	RunID     string  `json:"run_id"`
	Host      string  `json:"host"`
	SlurmJob  string  `json:"slurm_job,omitempty"`
	Tasks     int     `json:"tasks"`
	Samples   int     `json:"samples"`
	Cost      float64 `json:"cost_seconds"`
	Wall      float64 `json:"wall_seconds"`
	SelfCheck int     `json:"self_check_passed"`
	// SelfCheckBaseOnly counts the shard's tasks it self-checked on their
	// base inputs only (another shard self-checked them in full).
	SelfCheckBaseOnly int `json:"self_check_base_only,omitempty"`
}

// shardProblem is the integrity error of shard k.
func shardProblem(k int, format string, args ...any) error {
	return exitcode.Errorf(exitcode.Integrity, "shard %d: %s", k, fmt.Sprintf(format, args...))
}

// verified is what the merge takes from one verified shard.
type verified struct {
	rec     *Record
	run     *runs.Record
	rep     codebench.RunReport
	results map[string][]codebench.ResultEntry
	ended   time.Time
}

// Merge verifies every shard of the bundle at dir and writes one run in
// home (kind humaneval) with the merged eval_results.json and a signed
// record. It refuses, with an integrity error naming the shard, a shard
// that is missing, failed, duplicated or tampered with: no partial score
// is ever written. Merging twice gives the same eval_results.json.
func Merge(ctx context.Context, dir, home, version string) (*MergeReport, error) {
	start := time.Now()
	p, err := ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	planDigest, _, err := digest.File(filepath.Join(dir, PlanFile))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", dir, err)
	}
	bst, err := store.Open(filepath.Join(dir, HomeDir), catalog.Default())
	if err != nil {
		return nil, err
	}
	d, _, err := codebench.OpenDataset(ctx, bst, p.Dataset)
	if err != nil {
		return nil, err
	}
	if d.ID != p.DatasetID || d.SHA256 != p.DatasetSHA256 || d.MD5 != p.DatasetMD5 {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: the dataset in its store is %s %s, the plan's %s %s", dir, d.ID, d.SHA256.Hex(), p.DatasetID, p.DatasetSHA256.Hex())
	}
	var tasks []*task.Task
	for _, id := range p.Tasks {
		t := d.Task(id)
		if t == nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: plan task %s is not in %s", dir, id, d.ID)
		}
		tasks = append(tasks, t)
	}

	shards := make([]*verified, len(p.Shards))
	runOwner := map[string]int{}
	total := 0
	for k := range p.Shards {
		v, err := verifyShard(dir, p, planDigest, k)
		if err != nil {
			return nil, err
		}
		if j, dup := runOwner[v.rec.RunID]; dup {
			return nil, shardProblem(k, "its record names run %s, which is shard %d's: a duplicated shard", v.rec.RunID, j)
		}
		runOwner[v.rec.RunID] = k
		shards[k] = v
		total += p.Shards[k].Samples
	}
	if total != p.Samples.Count {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: the shards hold %d samples, the plan %d", dir, total, p.Samples.Count)
	}
	checks := make([]shardCheck, len(shards))
	for k, v := range shards {
		checks[k] = shardCheck{baseOnly: v.rep.SelfCheck.BaseOnlyTasks}
		if v.rep.Truth != nil {
			checks[k].key, checks[k].truth = &v.rep.Truth.Key, v.rep.Truth.TaskDigests
		}
	}
	if err := checkSelfCheckCover(dir, p, checks); err != nil {
		return nil, err
	}

	// Verdicts per task, in dataset order, as one run would have them.
	perShard := make([]map[string][]codebench.ResultEntry, len(shards))
	for k, v := range shards {
		perShard[k] = v.results
	}
	eval, err := mergeParts(p, perShard)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", dir, err)
	}
	var results []*codebench.SampleResult
	var ended time.Time
	rep := &MergeReport{Bundle: dir, PlanSHA256: planDigest}
	for k, v := range shards {
		if v.ended.After(ended) {
			ended = v.ended
		}
		s := p.Shards[k]
		rep.Shards = append(rep.Shards, MergedShard{Index: k, RunID: v.rec.RunID, Host: v.rec.Host, SlurmJob: v.rec.SlurmJob,
			Tasks: len(s.Parts), Samples: s.Samples, Cost: s.Cost, Wall: v.rep.WallSeconds, SelfCheck: v.rep.SelfCheck.Passed,
			SelfCheckBaseOnly: len(v.rep.SelfCheck.BaseOnlyTasks)})
		rep.PeakMemory = max(rep.PeakMemory, v.rep.PeakMemory)
	}
	results = resultsOf(tasks, eval)
	plus := !p.BaseOnly && d.HasPlus
	sum := codebench.Summarize(tasks, results, plus, p.Subset)

	run, err := workload.Start(home, "humaneval", version)
	if err != nil {
		return nil, err
	}
	rec := run.Record
	rec.Assets = p.Assets
	rec.Image = map[string]any{"id": p.Image.ID, "manifest_digest": p.Image.ManifestDigest}
	rec.Limits = map[string]any{"run": p.Limits, "harness_digest": p.Harness, "base_only": p.BaseOnly, "shards": len(p.Shards)}
	rec.Summary = sum
	// Every shard passed the self-check of each of its tasks (verifyShard),
	// in full where it holds the task's first sample and at least on the
	// base inputs elsewhere (checkSelfCheckCover); a task split over
	// shards counts once.
	sc := codebench.SelfCheckReport{Tasks: len(tasks), Passed: len(tasks)}
	rec.SelfCheck = sc
	rep.RunID, rep.RunDir, rep.Engine, rep.Dataset, rep.DatasetMD5 = run.ID, run.Dir, codebench.EngineRepro, d.ID, d.MD5
	rep.Tasks, rep.Summary, rep.SelfCheck = len(tasks), &sum, &sc
	// A slice never fails to be read.
	rep.Recheck, _ = codebench.Rechecks(codebench.ResultSlice(results), p.Limits)
	rep.Samples = &codebench.Input{Path: p.Samples.Path, Format: p.Samples.Format, SHA256: p.Samples.SHA256, Samples: p.Samples.Count}
	resultsPath := filepath.Join(run.Dir, "eval_results.json")
	// Tasks in dataset order, dated by the last shard's end, so that a
	// second merge writes the same bytes.
	err = codebench.WriteResultEntries(resultsPath, d.MD5, tasks, eval, sum, ended.UTC())
	if err == nil {
		rep.ResultsFile = resultsPath
		rec.Tests, _ = codebench.TestsOf(codebench.ResultSlice(results), filepath.Base(resultsPath))
	}
	rep.WallSeconds = time.Since(start).Seconds()
	if err != nil {
		rep.Error = err.Error()
	}
	rec.Extra = rep
	return rep, run.End(err)
}

// shardCheck is what the merge takes from a shard's self-check: the tasks
// it ran on their base inputs only, the ground-truth key it ran under
// (nil if the run reports none), and the digests of the ground truth it
// judged its split tasks by.
type shardCheck struct {
	baseOnly []string
	key      *codebench.TruthKey
	truth    map[string]digest.SHA256
}

// checkSelfCheckCover checks that every task was self-checked in full
// where the plan puts its self-check: a shard may have self-checked a
// task on its base inputs only where it holds a later part of it (not
// the task's first sample), and the shard holding the first sample must
// have self-checked it in full under the same ground-truth key (dataset,
// image, harness, CPU model) and by the same ground truth (the same
// expected outputs and per-input times, compared by digest). Anything else is an integrity error naming every
// such shard and the way out: each run again with --full-self-check.
func checkSelfCheckCover(dir string, p *Plan, checks []shardCheck) error {
	first := map[string]int{} // task -> the shard holding its first sample
	for k, s := range p.Shards {
		for _, pt := range s.Parts {
			if pt.From == 0 {
				first[pt.Task] = k
			}
		}
	}
	var problems []string
	var rerun []int
	for k, c := range checks {
		later := map[string]bool{}
		for _, id := range p.Shards[k].LaterParts() {
			later[id] = true
		}
		why := ""
		for _, id := range c.baseOnly {
			j := first[id]
			jd, jok := checks[j].truth[id]
			kd, kok := c.truth[id]
			switch {
			case !later[id]:
				why = fmt.Sprintf("it self-checked %s on its base inputs only, but it holds that task's first sample, whose shard self-checks it in full", id)
			case c.key == nil || checks[j].key == nil:
				why = fmt.Sprintf("it self-checked %s on its base inputs only, and its run or shard %d's names no ground truth to match", id, j)
			case *c.key != *checks[j].key:
				why = fmt.Sprintf("it self-checked %s on its base inputs only, with ground truth %s (CPU %q), and shard %d checked it in full with other ground truth (%s, CPU %q)",
					id, c.key.Digest().Hex()[:12], c.key.CPU, j, checks[j].key.Digest().Hex()[:12], checks[j].key.CPU)
			case !jok || !kok:
				why = fmt.Sprintf("it self-checked %s on its base inputs only, and its run or shard %d's records no digest of that task's ground truth", id, j)
			case jd != kd:
				why = fmt.Sprintf("it self-checked %s on its base inputs only, and judged it by ground truth %s, not the %s that shard %d checked in full (both computed it)", id, kd.Hex()[:12], jd.Hex()[:12], j)
			default:
				continue
			}
			break
		}
		if why != "" {
			problems = append(problems, fmt.Sprintf("shard %d: %s", k, why))
			rerun = append(rerun, k)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	var cmds []string
	for _, k := range rerun {
		cmds = append(cmds, fmt.Sprintf("repro shard run %s --index %d --full-self-check", dir, k))
	}
	return exitcode.Errorf(exitcode.Integrity, "%s; run again: %s", strings.Join(problems, "; "), strings.Join(cmds, ", "))
}

// verifyShard checks shard k: its signed record, the run it names (the
// run record's signature and files, exit code, image, dataset, harness,
// limits, self-check), and that the run scored exactly the shard's
// samples. It returns the shard's verdicts by task.
func verifyShard(dir string, p *Plan, planDigest digest.SHA256, k int) (*verified, error) {
	s := p.Shards[k]
	home := filepath.Join(dir, HomeDir)
	jsonPath, sigPath := recordPaths(dir, k)
	if _, err := os.Lstat(sigPath); os.IsNotExist(err) {
		return nil, shardProblem(k, "no record %q: the shard has not run, is still running, or was stopped before it ended; run it (repro shard run %q --index %d) or resubmit", sigPath, dir, k)
	}
	b, err := readSigned(jsonPath, sigPath, home, shardPayload)
	if err != nil {
		return nil, shardProblem(k, "its record does not verify: %v", err)
	}
	var rec Record
	if err := strictjson.Decode(b, &rec); err != nil {
		return nil, shardProblem(k, "its record is malformed: %v", err)
	}
	switch {
	case rec.Index != k:
		return nil, shardProblem(k, "its record is shard %d's: a duplicated shard", rec.Index)
	case rec.Plan != planDigest:
		return nil, shardProblem(k, "its record belongs to another plan (%s)", rec.Plan.Hex())
	case !rec.OK:
		return nil, shardProblem(k, "it failed on %s (exit %d): %s", rec.Host, rec.ExitCode, rec.Error)
	case rec.Binary != p.Binary.SHA256:
		return nil, shardProblem(k, "it ran a repro binary with sha256 %s, not the plan's %s", rec.Binary.Hex(), p.Binary.SHA256.Hex())
	case rec.ImageID != p.Image.ID:
		return nil, shardProblem(k, "it ran image %s, not the plan's %s", rec.ImageID, p.Image.ID)
	}
	run, err := runs.Open(home, rec.RunID)
	if err != nil {
		return nil, shardProblem(k, "its run %q: %v", rec.RunID, err)
	}
	if run.ID != rec.RunID {
		return nil, shardProblem(k, "its record names run %q, not a whole run id", rec.RunID)
	}
	rr, _, err := run.Verify()
	if err != nil {
		return nil, shardProblem(k, "%v", err)
	}
	var rep codebench.RunReport
	if err := remarshal(rr.Extra, &rep); err != nil {
		return nil, shardProblem(k, "run %s has no scoring report: %v", rec.RunID, err)
	}
	var img struct {
		ID string `json:"id"`
	}
	var lim struct {
		Run      codebench.RunLimits `json:"run"`
		Harness  digest.SHA256       `json:"harness_digest"`
		BaseOnly bool                `json:"base_only"`
	}
	if err := remarshal(rr.Image, &img); err != nil {
		return nil, shardProblem(k, "run %s records no image: %v", rec.RunID, err)
	}
	if err := remarshal(rr.Limits, &lim); err != nil {
		return nil, shardProblem(k, "run %s records no limits: %v", rec.RunID, err)
	}
	switch {
	case rr.ExitCode != 0 || rep.Error != "":
		return nil, shardProblem(k, "run %s ended with exit %d: %s", rec.RunID, rr.ExitCode, rep.Error)
	case img.ID != p.Image.ID:
		return nil, shardProblem(k, "run %s used image %s, not the plan's %s", rec.RunID, img.ID, p.Image.ID)
	case lim.Harness != p.Harness:
		return nil, shardProblem(k, "run %s used harness %s, not the plan's %s", rec.RunID, lim.Harness.Hex(), p.Harness.Hex())
	case lim.Run != p.Limits || lim.BaseOnly != p.BaseOnly:
		return nil, shardProblem(k, "run %s used other limits than the plan's", rec.RunID)
	case rep.Dataset != p.DatasetID || rep.DatasetMD5 != p.DatasetMD5:
		return nil, shardProblem(k, "run %s scored dataset %s (md5 %s), not the plan's %s", rec.RunID, rep.Dataset, rep.DatasetMD5, p.DatasetID)
	case rep.SelfCheck == nil || !rep.SelfCheck.OK() || rep.SelfCheck.Tasks != len(s.Parts):
		return nil, shardProblem(k, "run %s has no passed self-check over the shard's %d tasks", rec.RunID, len(s.Parts))
	case rep.Samples == nil || rep.Samples.SHA256 != s.File.SHA256 || rep.Samples.Samples != s.Samples:
		return nil, shardProblem(k, "run %s did not score the shard's samples %q", rec.RunID, s.File.Path)
	}
	if err := checkAssets(rr.Assets, p.Assets); err != nil {
		return nil, shardProblem(k, "run %s: %v", rec.RunID, err)
	}
	if err := checkPinned(dir, s.File, fmt.Sprintf("the samples of shard %d", k)); err != nil {
		return nil, err
	}
	want, err := readShardSamples(filepath.Join(dir, s.File.Path))
	if err != nil {
		return nil, shardProblem(k, "%v", err)
	}
	for _, pt := range s.Parts {
		if len(want[pt.Task]) != pt.To-pt.From {
			return nil, shardProblem(k, "its samples file has %d samples of %s, its part %d", len(want[pt.Task]), pt.Task, pt.To-pt.From)
		}
	}
	results, hash, err := readResults(filepath.Join(run.Dir, "eval_results.json"), want)
	if err != nil {
		return nil, shardProblem(k, "run %s: %v", rec.RunID, err)
	}
	if hash != p.DatasetMD5 {
		return nil, shardProblem(k, "run %s's results have dataset hash %q, not %q", rec.RunID, hash, p.DatasetMD5)
	}
	if len(results) != len(s.Parts) {
		return nil, shardProblem(k, "run %s has results for %d tasks, the shard %d", rec.RunID, len(results), len(s.Parts))
	}
	for _, pt := range s.Parts {
		if got, w := results[pt.Task], want[pt.Task]; len(got) != len(w) {
			return nil, shardProblem(k, "run %s has %d results for %s, the shard %d samples", rec.RunID, len(got), pt.Task, len(w))
		}
	}
	return &verified{rec: &rec, run: rr, rep: rep, results: results, ended: rr.FinishedAt}, nil
}

// resultsOf turns the verdicts of tasks, by task in sample order, into
// the results Summarize and Rechecks read, as one run holds them.
func resultsOf(tasks []*task.Task, eval map[string][]codebench.ResultEntry) []*codebench.SampleResult {
	var results []*codebench.SampleResult
	for _, t := range tasks {
		for i, e := range eval[t.ID] {
			r := &codebench.SampleResult{Sample: &task.Sample{TaskID: t.ID, ID: i, Solution: e.Solution}, Base: codebench.PhaseResult{Status: e.BaseStatus, Near: e.BaseNearLimit, Exact: e.BaseExactRun}}
			if e.PlusStatus != nil {
				r.Plus = &codebench.PhaseResult{Status: *e.PlusStatus, Near: e.PlusNearLimit, Exact: e.PlusExactRun}
			}
			results = append(results, r)
		}
	}
	return results
}

// mergeParts puts the verdicts of each shard (by task, for the shard's
// part of it, in sample order) together into each task's verdicts for all
// its samples, in sample order, as one unsharded run has them. It refuses
// anything but an exact partition of every task's samples: the plan's
// shape (parsePlan) and, per part, exactly as many verdicts as samples.
func mergeParts(p *Plan, perShard []map[string][]codebench.ResultEntry) (map[string][]codebench.ResultEntry, error) {
	if len(perShard) != len(p.Shards) {
		return nil, fmt.Errorf("%d shards of results for a plan of %d", len(perShard), len(p.Shards))
	}
	type piece struct {
		from    int
		entries []codebench.ResultEntry
	}
	pieces := map[string][]piece{}
	for k, s := range p.Shards {
		if len(perShard[k]) != len(s.Parts) {
			return nil, fmt.Errorf("shard %d has results for %d tasks, its parts %d", k, len(perShard[k]), len(s.Parts))
		}
		for _, pt := range s.Parts {
			es, ok := perShard[k][pt.Task]
			if !ok || len(es) != pt.To-pt.From {
				return nil, fmt.Errorf("shard %d has %d results for task %s, its part %d samples", k, len(es), pt.Task, pt.To-pt.From)
			}
			pieces[pt.Task] = append(pieces[pt.Task], piece{pt.From, es})
		}
	}
	out := make(map[string][]codebench.ResultEntry, len(p.Tasks))
	for i, id := range p.Tasks {
		ps := pieces[id]
		slices.SortFunc(ps, func(a, b piece) int { return cmp.Compare(a.from, b.from) })
		all := make([]codebench.ResultEntry, 0, p.TaskSamples[i])
		for _, pc := range ps {
			if pc.from != len(all) {
				return nil, fmt.Errorf("task %s: the shards' parts start at sample %d where %d is next: not a partition of its samples", id, pc.from, len(all))
			}
			all = append(all, pc.entries...)
		}
		if len(all) != p.TaskSamples[i] {
			return nil, fmt.Errorf("task %s: the shards hold %d of its %d samples", id, len(all), p.TaskSamples[i])
		}
		out[id] = all
	}
	return out, nil
}

// checkAssets checks that got holds every planned asset with its digest.
func checkAssets(got, want []runs.Asset) error {
	have := map[string]string{}
	for _, a := range got {
		have[a.ID] = a.SHA256
	}
	for _, a := range want {
		if have[a.ID] != a.SHA256 {
			return fmt.Errorf("asset %s has sha256 %q, the plan's %q", a.ID, have[a.ID], a.SHA256)
		}
	}
	return nil
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	if string(b) == "null" {
		return fmt.Errorf("missing")
	}
	return json.Unmarshal(b, to)
}

// readShardSamples reads a shard's samples file: the solutions of each
// task in order.
func readShardSamples(path string) (map[string][]string, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 8<<20)
	for sc.Scan() {
		var l struct {
			TaskID   string `json:"task_id"`
			Solution string `json:"solution"`
		}
		if err := strictjson.DecodeOpen(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("samples %q: %v", path, err)
		}
		out[l.TaskID] = append(out[l.TaskID], l.Solution)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("samples %q: %v", path, err)
	}
	return out, nil
}

// readResults reads a shard run's eval_results.json an entry at a time
// and returns its entries by task, and its dataset hash. Each entry must
// be the shard's sample at its place (want: the samples file's programs
// by task), and keeps want's program rather than a second copy of it.
// It holds no more than the entries: not the file.
func readResults(path string, want map[string][]string) (map[string][]codebench.ResultEntry, string, error) {
	f, err := codebench.OpenResultsFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("results %q: %v", path, err)
	}
	defer f.Close()
	eval := map[string][]codebench.ResultEntry{}
	head, err := codebench.ReadResults(f, func(id string) error {
		if _, ok := want[id]; !ok {
			return fmt.Errorf("results for task %s, which the shard's samples do not hold", id)
		}
		eval[id] = []codebench.ResultEntry{}
		return nil
	}, func(id string, e *codebench.ResultEntry) error {
		i, w := len(eval[id]), want[id]
		if i >= len(w) {
			return fmt.Errorf("more results for %s than the shard's %d samples", id, len(w))
		}
		if e.Solution != w[i] {
			return fmt.Errorf("result %d of %s is not the shard's sample %d", i, id, i)
		}
		e.Solution = w[i]
		eval[id] = append(eval[id], *e)
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("results %q: %v", path, err)
	}
	if !head.Eval {
		return nil, "", fmt.Errorf("results %q: no \"eval\"", path)
	}
	return eval, head.Hash, nil
}
