// Package shard spreads one scoring run over a Slurm job array and merges
// it back: Plan splits the samples into shards balanced by ground-truth
// cost and writes a bundle (the plan, signed; the samples of each shard;
// the dataset in a store; the evaluator image as a tarball; repro's own
// binary; an sbatch script); RunShard is one array task, which checks the
// bundle, loads and checks the image, runs the normal sandboxed scoring
// path on its shard (self-check included) and writes a signed shard
// record; Merge verifies every shard and writes one eval_results.json and
// one run record.
//
// Bundle layout (a folder every node can read and write, such as a shared
// file system):
//
//	plan.json            the plan (Plan)
//	plan.dsse.json       its signature by the bundle's run key
//	input/               the samples as given, copied
//	shards/shard-K.jsonl the samples of shard K
//	shards/shard-K.dsse.json   shard K's signed record (ShardRecord)
//	image.tar            the evaluator image (docker save)
//	bin/repro            the repro binary the nodes run
//	home/                a repro home: the dataset in its store, the image
//	                     pin, the run key, ground truth, and shard runs
//	repro-shard.sbatch   the job array script
package shard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/codebench/task"
	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/strictjson"
)

// Format is the plan format; a bundle of another format is refused.
// Format 2 shards hold task parts (sample ranges); format 1 held whole
// tasks.
const Format = 2

// Names in the bundle.
const (
	PlanFile     = "plan.json"
	PlanSigFile  = "plan.dsse.json"
	ImageFile    = "image.tar"
	BinaryFile   = "bin/repro"
	HomeDir      = "home"
	InputDir     = "input"
	ShardsDir    = "shards"
	SbatchFile   = "repro-shard.sbatch"
	planPayload  = "application/vnd.repro.shard-plan+json"
	shardPayload = "application/vnd.repro.shard-record+json"
	maxPlanBytes = 64 << 20
	maxShards    = 1000
)

// Plan is what a sharded run is to do, written once by [WritePlan] and
// read by every array task and by [Merge].
type Plan struct {
	Format int `json:"format"`
	// Dataset is the scoring command's --dataset value; DatasetID, its
	// digest and MD5 name the dataset the shards must have scored.
	Dataset       string        `json:"dataset"`
	DatasetID     string        `json:"dataset_id"`
	DatasetSHA256 digest.SHA256 `json:"dataset_sha256"`
	DatasetMD5    string        `json:"dataset_md5"`
	Assets        []runs.Asset  `json:"assets"`
	// Tasks are the scored task ids, in dataset order; TaskSamples the
	// number of samples of each, in the same order.
	Tasks       []string            `json:"tasks"`
	TaskSamples []int               `json:"task_samples"`
	Subset      bool                `json:"subset"`
	Samples     SamplesPin          `json:"samples"`
	Image       ImagePin            `json:"image"`
	Binary      FilePin             `json:"binary"`
	Harness     digest.SHA256       `json:"harness_digest"`
	Limits      codebench.RunLimits `json:"limits"`
	BaseOnly    bool                `json:"base_only"`
	Shards      []Shard             `json:"shards"`
}

// SamplesPin names the samples as given and how many there are.
type SamplesPin struct {
	Path   string        `json:"path"`
	Format string        `json:"format"`
	SHA256 digest.SHA256 `json:"sha256"`
	Count  int           `json:"count"`
}

// ImagePin is the evaluator image and its tarball in the bundle.
type ImagePin struct {
	ID             string  `json:"id"`
	ManifestDigest string  `json:"manifest_digest"`
	Tarball        FilePin `json:"tarball"`
}

// FilePin is a file of the bundle with its size and digest.
type FilePin struct {
	Path   string        `json:"path"`
	Size   int64         `json:"size"`
	SHA256 digest.SHA256 `json:"sha256"`
}

// Shard is one array task's work: parts of tasks, each a range of a
// task's samples. A task is in a shard at most once; its parts over all
// shards hold each of its samples exactly once.
type Shard struct {
	Index   int    `json:"index"`
	Parts   []Part `json:"parts"`
	Samples int    `json:"samples"`
	// Cost is the estimated seconds of CPU time: per part, its samples
	// and its self-check, each sample the canonical solution's measured
	// time on every input plus a fixed cost per sample; the self-check
	// as dear as one sample where the part holds the task's first sample,
	// the canonical solution on the base inputs otherwise (TaskLoad).
	Cost float64 `json:"cost_seconds"`
	File FilePin `json:"file"`
}

// Part is the samples From (inclusive) to To (exclusive) of task Task, by
// their order among the task's samples in the input.
type Part struct {
	Task string `json:"task"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Tasks returns the ids of the shard's tasks, in the order of its parts.
func (s *Shard) Tasks() []string {
	out := make([]string, len(s.Parts))
	for i, p := range s.Parts {
		out[i] = p.Task
	}
	return out
}

// LaterParts returns the ids of the tasks of which the shard holds a part
// that does not start at the task's first sample, in the order of its
// parts: their self-check is the shard holding the first sample's.
func (s *Shard) LaterParts() []string {
	var out []string
	for _, p := range s.Parts {
		if p.From > 0 {
			out = append(out, p.Task)
		}
	}
	return out
}

// SplitTasks returns the ids of the tasks of shard k that are split over
// several shards (its part of them does not hold all their samples), in
// the order of its parts.
func (p *Plan) SplitTasks(k int) []string {
	samples := make(map[string]int, len(p.Tasks))
	for i, id := range p.Tasks {
		samples[id] = p.TaskSamples[i]
	}
	var out []string
	for _, pt := range p.Shards[k].Parts {
		if pt.From > 0 || pt.To < samples[pt.Task] {
			out = append(out, pt.Task)
		}
	}
	return out
}

// PlanOptions are the choices of a plan.
type PlanOptions struct {
	Samples   string // a .jsonl file or a samples folder
	Dataset   string // --dataset value
	Tasks     string // task selection; empty for all
	Shards    int
	BaseOnly  bool
	Limits    codebench.RunLimits
	Out       string // the bundle folder, which must not exist
	Binary    string // the repro binary to ship; empty for this one
	Partition string // Slurm partition; empty for the default
	CPUs      int    // CPUs per array task; 0 for Slurm's default
	Time      string // Slurm time limit; empty for the partition's
	Progress  func(string)
}

// perSampleSeconds is the fixed cost of one sample (starting the program,
// passing records) in the balance, where ground truth is cached; without
// it a task of many fast samples would look free.
const perSampleSeconds = 0.05

// taskLoad is the balance's cost of a task of n samples whose canonical
// solution took base and plus seconds over its base and plus inputs; with
// baseOnly (a run without plus inputs) only the base seconds count, and a
// part's self-check is the whole one.
func taskLoad(n int, base, plus float64, baseOnly bool) TaskLoad {
	if baseOnly {
		u := base + perSampleSeconds
		return TaskLoad{Samples: n, Unit: u, Check: u}
	}
	return TaskLoad{Samples: n, Unit: base + plus + perSampleSeconds, Check: base + perSampleSeconds}
}

func (o *PlanOptions) validate() error {
	if o.Samples == "" {
		return exitcode.Errorf(exitcode.Usage, "--samples PATH is required")
	}
	if o.Shards < 1 || o.Shards > maxShards {
		return exitcode.Errorf(exitcode.Usage, "--shards %d: want 1 to %d", o.Shards, maxShards)
	}
	if o.Out == "" {
		return exitcode.Errorf(exitcode.Usage, "--out DIR is required")
	}
	if _, err := os.Lstat(o.Out); err == nil {
		return exitcode.Errorf(exitcode.Usage, "--out %q already exists; a bundle is written into a new folder", o.Out)
	}
	if err := o.Limits.Validate(); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	for _, v := range []string{o.Partition, o.Time} {
		if strings.ContainsFunc(v, func(r rune) bool {
			return !(r == '-' || r == '_' || r == ':' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) {
			return exitcode.Errorf(exitcode.Usage, "Slurm option %q: only letters, digits and - _ : . are allowed", v)
		}
	}
	if o.CPUs < 0 || o.CPUs > 1024 {
		return exitcode.Errorf(exitcode.Usage, "--cpus-per-task %d: want 0 to 1024", o.CPUs)
	}
	return nil
}

// Balance assigns whole tasks (with their costs) to n shards, largest
// first each to the least loaded shard, ties to the lower index. It
// returns the task indexes of each shard, in the given order. It is the
// balance BalanceParts starts from.
func Balance(costs []float64, n int) [][]int {
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]float64, n)
	out := make([][]int, n)
	for _, i := range order {
		k := 0
		for j := 1; j < n; j++ {
			if load[j] < load[k] {
				k = j
			}
		}
		load[k] += costs[i]
		out[k] = append(out[k], i)
	}
	for _, s := range out {
		slices.Sort(s)
	}
	return out
}

// WritePlan writes a bundle for a sharded scoring run of o.Samples into
// o.Out: it needs the dataset in st, the pinned evaluator image in the
// engine and, for the balance, uses the ground truth cached in st (a task
// without it counts its inputs). The bundle's home gets the ground truth
// of the planned tasks that st has cached for this machine's CPU model.
func WritePlan(ctx context.Context, st *store.Store, o PlanOptions) (*Plan, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	note := func(format string, args ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(format, args...))
		}
	}
	d, assets, err := codebench.OpenDataset(ctx, st, o.Dataset)
	if err != nil {
		return nil, err
	}
	tasks, err := codebench.SelectTasks(d, o.Tasks)
	if err != nil {
		return nil, err
	}
	tmp, err := st.StateDir("humaneval")
	if err != nil {
		return nil, err
	}
	samples, err := codebench.LoadSamples(o.Samples, d, tasks, tmp)
	if err != nil {
		return nil, err
	}
	defer samples.Close()
	bin := o.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "cannot find repro's own binary: %v", err)
		}
	}
	// The image shipped to the nodes is the one this REPRO_HOME's trust
	// file admits (imagetrust; the nodes check it again as they score).
	e, img, _, err := imagetrust.Open(ctx, st.Home(), imagetrust.Options{Trees: wire.SBOMTrees()})
	if err != nil {
		return nil, err
	}
	defer e.Close()

	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--out %q: %v", o.Out, err)
	}
	if err := os.MkdirAll(filepath.Join(out, ShardsDir), 0o755); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create the bundle %q: %v", out, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(out)
		}
	}()
	input, err := samples.Prepare(filepath.Join(out, InputDir))
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Format: Format, Dataset: o.Dataset, DatasetID: d.ID, DatasetSHA256: d.SHA256, DatasetMD5: d.MD5, Assets: assets,
		Subset: len(tasks) < len(d.Tasks), Harness: wire.HarnessDigest, Limits: o.Limits, BaseOnly: o.BaseOnly,
		Samples: SamplesPin{Path: o.Samples, Format: input.Format, SHA256: input.SHA256, Count: 0},
		Image:   ImagePin{ID: img.ID, ManifestDigest: img.ManifestDigest},
	}

	// The balance: ground-truth seconds per task where cached.
	truth, err := codebench.CachedTruth(st, d, img.ID)
	if err != nil {
		return nil, err
	}
	loads := make([]TaskLoad, len(tasks))
	cached := 0
	for i, t := range tasks {
		n := len(input.Set.ByTask[t.ID])
		p.Tasks, p.TaskSamples = append(p.Tasks, t.ID), append(p.TaskSamples, n)
		p.Samples.Count += n
		base, plus, ok := truth.CachedSeconds(t)
		if ok {
			cached++
		} else {
			base, plus = 0.001*float64(len(t.Base)), 0.001*float64(len(t.Plus))
		}
		loads[i] = taskLoad(n, base, plus, o.BaseOnly || !d.HasPlus)
	}
	if p.Samples.Count < o.Shards {
		return nil, exitcode.Errorf(exitcode.Usage, "--shards %d: only %d samples to share out", o.Shards, p.Samples.Count)
	}
	note("balancing %d tasks over %d shards (%d tasks with cached ground-truth times)", len(tasks), o.Shards, cached)
	for k, parts := range BalanceParts(loads, o.Shards) {
		s := Shard{Index: k}
		var lines []byte
		for _, part := range parts {
			t := tasks[part.Task]
			s.Parts = append(s.Parts, Part{Task: t.ID, From: part.From, To: part.To})
			s.Cost += cost(loads, part)
			for _, smp := range input.Set.ByTask[t.ID][part.From:part.To] {
				prog, err := smp.Program()
				if err != nil {
					return nil, err
				}
				b, err := json.Marshal(struct {
					TaskID   string `json:"task_id"`
					Solution string `json:"solution"`
				}{t.ID, string(prog)})
				if err != nil {
					return nil, err
				}
				lines = append(append(lines, b...), '\n')
				s.Samples++
			}
		}
		rel := filepath.Join(ShardsDir, fmt.Sprintf("shard-%03d.jsonl", k))
		if err := atomicfile.WriteFile(filepath.Join(out, rel), lines, 0o444); err != nil {
			return nil, err
		}
		s.File = FilePin{Path: rel, Size: int64(len(lines)), SHA256: digest.Of(lines)}
		p.Shards = append(p.Shards, s)
	}
	if err := input.Check(); err != nil {
		return nil, err
	}

	note("copying repro's binary")
	if p.Binary, err = copyFile(bin, filepath.Join(out, BinaryFile), 0o555); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot copy repro's binary %q into the bundle: %v", bin, err)
	}
	p.Binary.Path = BinaryFile
	note("saving the evaluator image %s", img.ID)
	if p.Image.Tarball, err = saveImage(ctx, e, img.ID, filepath.Join(out, ImageFile)); err != nil {
		return nil, err
	}
	p.Image.Tarball.Path = ImageFile
	note("filling the bundle's home")
	if err := fillHome(ctx, st, filepath.Join(out, HomeDir), p, tasks, truth); err != nil {
		return nil, err
	}
	if err := writeSigned(filepath.Join(out, PlanFile), filepath.Join(out, PlanSigFile), filepath.Join(out, HomeDir), planPayload, p); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(out, SbatchFile), []byte(sbatchScript(p, out, o)), 0o555); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// copyFile copies src to dst (made with perm) and pins the copy.
func copyFile(src, dst string, perm os.FileMode) (FilePin, error) {
	f, err := safefile.OpenRegular(src)
	if err != nil {
		return FilePin{}, err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return FilePin{}, err
	}
	var pin FilePin
	err = atomicfile.Write(dst, perm, func(w io.Writer) error {
		dw := digest.NewWriter(w)
		if _, err := io.Copy(dw, f); err != nil {
			return err
		}
		pin.SHA256, pin.Size = dw.Sum()
		return nil
	}, nil)
	return pin, err
}

// fillHome makes the repro home of the nodes: the dataset assets in its
// store, the image pin and SBOM, the run key, and the cached ground truth
// of the planned tasks.
func fillHome(ctx context.Context, st *store.Store, home string, p *Plan, tasks []*task.Task, truth *codebench.Truth) error {
	nst, err := store.Open(home, st.Catalog())
	if err != nil {
		return err
	}
	for _, a := range p.Assets {
		f, err := st.OpenVerified(ctx, a.ID)
		if err != nil {
			return err
		}
		name := f.Name()
		f.Close()
		if err := nst.Import(ctx, a.ID, name, nil); err != nil {
			return err
		}
	}
	from, to := layout.Home(st.Home()), layout.Home(home)
	for _, f := range [][2]string{{from.ImagePin(), to.ImagePin()}, {from.ImageSBOM(), to.ImageSBOM()}} {
		if _, err := os.Stat(f[0]); err != nil {
			continue
		}
		if _, err := copyFile(f[0], f[1], 0o644); err != nil {
			return err
		}
	}
	d, _, err := codebench.OpenDataset(ctx, nst, p.Dataset)
	if err != nil {
		return err
	}
	nt, err := codebench.CachedTruth(nst, d, p.Image.ID)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		for _, f := range truth.TaskFiles(t) {
			if _, err := copyFile(f, filepath.Join(nt.Dir(), filepath.Base(f)), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSigned writes v as indented JSON to path and its DSSE envelope,
// signed by home's run key (made on first use), to sigPath.
func writeSigned(path, sigPath, home, payloadType string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	env, err := runs.SignEnvelope(home, payloadType, b)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(sigPath, env, 0o644)
}

// readSigned reads path and checks it is the payload of the envelope at
// sigPath, signed by home's run key; it returns the payload.
func readSigned(path, sigPath, home, payloadType string) ([]byte, error) {
	b, err := safefile.ReadFile(path, maxPlanBytes)
	if err != nil {
		return nil, err
	}
	env, err := safefile.ReadFile(sigPath, 2*maxPlanBytes)
	if err != nil {
		return nil, err
	}
	payload, err := runs.OpenEnvelope(home, payloadType, env)
	if err != nil {
		return nil, err
	}
	if string(payload) != string(b) {
		return nil, fmt.Errorf("%q differs from the payload its signature %q covers", path, sigPath)
	}
	return payload, nil
}

// ReadPlan reads and verifies the plan of the bundle at dir: its
// signature by the bundle's run key, its format, and that its shards are
// well formed (indexes 0..N-1, their parts an exact partition of every
// task's samples; see parsePlan). Any problem is an integrity error (exit 4).
func ReadPlan(dir string) (*Plan, error) {
	if _, err := os.Lstat(filepath.Join(dir, PlanFile)); os.IsNotExist(err) {
		return nil, exitcode.Errorf(exitcode.Usage, "%q is not a shard bundle: it has no %s (repro shard plan writes one)", dir, PlanFile)
	}
	b, err := readSigned(filepath.Join(dir, PlanFile), filepath.Join(dir, PlanSigFile), filepath.Join(dir, HomeDir), planPayload)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: the plan does not verify: %v", dir, err)
	}
	p, err := parsePlan(b)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", dir, err)
	}
	return p, nil
}

// parsePlan decodes a plan strictly and checks its shape: its format,
// shards indexed 0..N-1 with their file names, each shard's sample count
// that of its parts, and the parts of every task of the plan an exact
// partition of its samples: each sample in exactly one part, a task in a
// shard at most once, no part of a task the plan does not have.
func parsePlan(b []byte) (*Plan, error) {
	var f struct {
		Format int `json:"format"`
	}
	if err := strictjson.DecodeOpen(b, &f); err != nil {
		return nil, fmt.Errorf("the plan is malformed: %v", err)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("plan format %d, this repro reads %d: make the bundle again with this repro (repro shard plan)", f.Format, Format)
	}
	var p Plan
	if err := strictjson.Decode(b, &p); err != nil {
		return nil, fmt.Errorf("the plan is malformed: %v", err)
	}
	if len(p.Shards) < 1 || len(p.Shards) > maxShards {
		return nil, fmt.Errorf("the plan has %d shards", len(p.Shards))
	}
	if len(p.TaskSamples) != len(p.Tasks) {
		return nil, fmt.Errorf("the plan has %d tasks and %d task sample counts", len(p.Tasks), len(p.TaskSamples))
	}
	count := map[string]int{}
	samples := 0
	for i, t := range p.Tasks {
		if _, dup := count[t]; dup {
			return nil, fmt.Errorf("task %s is in the plan twice", t)
		}
		if p.TaskSamples[i] < 1 {
			return nil, fmt.Errorf("task %s has %d samples", t, p.TaskSamples[i])
		}
		count[t] = p.TaskSamples[i]
		samples += p.TaskSamples[i]
	}
	if samples != p.Samples.Count {
		return nil, fmt.Errorf("the tasks hold %d samples, the plan %d", samples, p.Samples.Count)
	}
	type placed struct{ from, to, shard int }
	parts := map[string][]placed{}
	for i, s := range p.Shards {
		if s.Index != i {
			return nil, fmt.Errorf("shard %d of the plan has index %d", i, s.Index)
		}
		if s.File.Path != filepath.Join(ShardsDir, fmt.Sprintf("shard-%03d.jsonl", i)) {
			return nil, fmt.Errorf("shard %d names file %q", i, s.File.Path)
		}
		if len(s.Parts) == 0 {
			return nil, fmt.Errorf("shard %d has no parts", i)
		}
		n, in := 0, map[string]bool{}
		for _, pt := range s.Parts {
			c, ok := count[pt.Task]
			switch {
			case !ok:
				return nil, fmt.Errorf("shard %d has a part of task %q, which the plan does not score", i, pt.Task)
			case in[pt.Task]:
				return nil, fmt.Errorf("shard %d holds task %s twice", i, pt.Task)
			case pt.From < 0 || pt.From >= pt.To || pt.To > c:
				return nil, fmt.Errorf("shard %d has samples %d to %d of task %s, which has %d", i, pt.From, pt.To, pt.Task, c)
			}
			in[pt.Task] = true
			n += pt.To - pt.From
			parts[pt.Task] = append(parts[pt.Task], placed{pt.From, pt.To, i})
		}
		if s.Samples != n {
			return nil, fmt.Errorf("shard %d has %d samples, its parts %d", i, s.Samples, n)
		}
	}
	for _, t := range p.Tasks {
		ps := parts[t]
		slices.SortFunc(ps, func(a, b placed) int { return cmp.Compare(a.from, b.from) })
		next, last := 0, -1
		for _, pt := range ps {
			if pt.from < next {
				return nil, fmt.Errorf("samples %d to %d of task %s are in shards %d and %d", pt.from, min(next, pt.to), t, last, pt.shard)
			}
			if pt.from > next {
				return nil, fmt.Errorf("samples %d to %d of task %s are in no shard", next, pt.from, t)
			}
			next, last = pt.to, pt.shard
		}
		if next != count[t] {
			return nil, fmt.Errorf("samples %d to %d of task %s are in no shard", next, count[t], t)
		}
	}
	if p.Image.Tarball.Path != ImageFile || p.Binary.Path != BinaryFile {
		return nil, fmt.Errorf("the plan names image %q and binary %q", p.Image.Tarball.Path, p.Binary.Path)
	}
	return &p, nil
}

// checkPinned checks that the bundle file of pin has its size and digest.
func checkPinned(dir string, pin FilePin, what string) error {
	got, n, err := digest.File(filepath.Join(dir, pin.Path))
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "%s %q is missing or unreadable: %v", what, filepath.Join(dir, pin.Path), err)
	}
	if got != pin.SHA256 || n != pin.Size {
		return exitcode.Errorf(exitcode.Integrity, "%s %q changed after the plan was written: sha256 %s (%d bytes), the plan has %s (%d bytes)",
			what, filepath.Join(dir, pin.Path), got.Hex(), n, pin.SHA256.Hex(), pin.Size)
	}
	return nil
}
