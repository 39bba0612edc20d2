package handoff

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// Options are the inputs of Prepare.
type Options struct {
	Workload string
	// Target is TargetSlurm (default) or TargetKubernetes.
	Target string
	// Config is the parsed --config file; nil is an empty configuration.
	Config *Config
	// ConfigSHA256 is the digest of the configuration file, recorded.
	ConfigSHA256 string
	// Catalog holds the pins: catalog.Default() outside tests.
	Catalog *catalog.Catalog
	// StateDir is where first-use digests are kept
	// (store.StateDir("handoff")).
	StateDir string
	// OutDir is the bundle folder; it may not lie inside an input volume.
	OutDir string
	// Host and Now are recorded with every check made here.
	Host string
	Now  func() time.Time
	// Version is repro's version, recorded.
	Version string
	// Rand draws seeds; crypto/rand when nil.
	Rand io.Reader
	// Progress, when set, is told how hashing large inputs advances.
	Progress Progress
}

// Result is the outcome of one requirement's checks made here.
type Result struct {
	Requirement string   `json:"requirement"`
	Title       string   `json:"title"`
	OK          bool     `json:"ok"`
	Problems    []string `json:"problems,omitempty"`
	// Integrity is set when a problem is a digest or size mismatch, not
	// something missing.
	Integrity bool `json:"integrity,omitempty"`
}

// Line is the one-line report of a failed requirement: what is missing
// and how to satisfy it.
func (r Result) Line() string {
	return fmt.Sprintf("%s (%s): %s", r.Requirement, r.Title, strings.Join(r.Problems, "; "))
}

// Plan is a checked handoff: the manifest and every requirement's result.
type Plan struct {
	Manifest *Manifest
	Results  []Result
}

// Ready reports whether every requirement holds.
func (p *Plan) Ready() bool {
	for _, r := range p.Results {
		if !r.OK {
			return false
		}
	}
	return true
}

// Failed returns the results of the requirements that do not hold.
func (p *Plan) Failed() []Result {
	var out []Result
	for _, r := range p.Results {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// Err returns nil when the plan is ready, else an error whose exit code is
// exitcode.Integrity if any failure is a mismatch and exitcode.Precondition
// otherwise.
func (p *Plan) Err() error {
	failed := p.Failed()
	if len(failed) == 0 {
		return nil
	}
	code := exitcode.Precondition
	for _, r := range failed {
		if r.Integrity {
			code = exitcode.Integrity
		}
	}
	what := "requirements are not met"
	if len(failed) == 1 {
		what = "requirement is not met"
	}
	return exitcode.Errorf(code, "handoff %s: %d of %d %s; no bundle was written", p.Manifest.Workload, len(failed), len(p.Results), what)
}

type planner struct {
	ctx  context.Context
	opts Options
	cfg  *Config
	w    *Workload
	cat  *catalog.Catalog
	m    *Manifest
	res  *Result
}

// Prepare checks every requirement of the workload that can be checked on
// this machine and builds the manifest a bundle would carry. It writes
// nothing except, for a file that passes its published MD5 for the first
// time, the first-use record in opts.StateDir. An error is returned only
// for unusable options (exit code Usage) or cancellation; unmet
// requirements are in the plan's results.
func Prepare(ctx context.Context, opts Options) (*Plan, error) {
	w, err := Lookup(opts.Workload)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	if opts.Target == "" {
		opts.Target = TargetSlurm
	}
	if opts.Target != TargetSlurm && opts.Target != TargetKubernetes {
		return nil, exitcode.Errorf(exitcode.Usage, "unknown target %q (want slurm or kubernetes)", opts.Target)
	}
	if opts.Catalog == nil {
		return nil, errors.New("handoff: nil catalog")
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = &Config{}
	}
	if err := checkApplies(w, cfg); err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	runs, err := assignSeeds(w, cfg, opts.Rand)
	if err != nil {
		return nil, err
	}
	m := &Manifest{
		Format:       ManifestFormat,
		Workload:     w.Name,
		Benchmark:    w.Benchmark,
		Ruleset:      w.Ruleset,
		Target:       opts.Target,
		CreatedAt:    opts.Now().UTC().Truncate(time.Second),
		CreatedOn:    opts.Host,
		ReproVersion: opts.Version,
		ConfigSHA256: opts.ConfigSHA256,
		Runs:         runs,
		Env:          cfg.Env,
		ClearCaches:  cfg.ClearCaches,
	}
	if opts.Target == TargetSlurm {
		m.Container = cfg.Container
		if m.Container == "" {
			m.Container = ContainerPyxis
		}
	}
	fillSpecs(m, w, cfg)
	p := &planner{ctx: ctx, opts: opts, cfg: cfg, w: w, cat: opts.Catalog, m: m}
	plan := &Plan{Manifest: m}
	for i := range w.Requirements {
		req := &w.Requirements[i]
		p.res = &Result{Requirement: req.ID, Title: req.Title}
		req.check(p)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.res.OK = len(p.res.Problems) == 0
		plan.Results = append(plan.Results, *p.res)
		for _, c := range req.Checks {
			rec := CheckRecord{Requirement: req.ID, Where: c.Where, What: c.What, Result: ResultDeferred}
			if c.Where == Here {
				rec.Host, rec.At, rec.Result = opts.Host, m.CreatedAt, ResultOK
				if !p.res.OK {
					rec.Result = ResultFailed
				}
			}
			m.Checks = append(m.Checks, rec)
		}
	}
	m.Ready = plan.Ready()
	for _, r := range plan.Failed() {
		for _, pr := range r.Problems {
			m.Missing = append(m.Missing, Missing{Requirement: r.Requirement, Problem: pr})
		}
	}
	m.Relaxations = relaxations(m)
	m.Retention = retention(m, cfg)
	return plan, nil
}

// checkApplies refuses configuration fields that belong to the other
// workload: a mix-up there is a usage error, not a missing requirement.
func checkApplies(w *Workload, c *Config) error {
	var wrong []string
	if w.Name != "minigo" {
		if c.ProGames != nil {
			wrong = append(wrong, "pro_games")
		}
		if c.Models != nil {
			wrong = append(wrong, "models")
		}
	}
	if w.Name != "dlrm" {
		if c.CriteoLicense != nil {
			wrong = append(wrong, "criteo_license")
		}
		if c.CheckpointFile != "" {
			wrong = append(wrong, "checkpoint_file")
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("config: %s do not apply to %s", strings.Join(wrong, ", "), w.Name)
	}
	return nil
}

// assignSeeds returns one run per seed: the configured seeds, which must
// be distinct and one per run, or distinct seeds drawn from r.
func assignSeeds(w *Workload, c *Config, r io.Reader) ([]RunSpec, error) {
	n := c.Runs
	if n == 0 {
		n = w.DefaultRuns
	}
	if len(c.Seeds) > 0 && len(c.Seeds) != n {
		return nil, exitcode.Errorf(exitcode.Usage, "config: %d seeds for %d runs; give one distinct seed per run or none", len(c.Seeds), n)
	}
	seen := map[int64]bool{}
	var out []RunSpec
	for i := 0; i < n; i++ {
		var s int64
		if len(c.Seeds) > 0 {
			s = c.Seeds[i]
			if seen[s] {
				return nil, exitcode.Errorf(exitcode.Usage, "config: seed %d appears twice; MLPerf's seed checker rejects repeated seeds", s)
			}
		} else {
			for {
				var b [4]byte
				if _, err := io.ReadFull(r, b[:]); err != nil {
					return nil, fmt.Errorf("drawing seeds: %v", err)
				}
				s = int64(binary.BigEndian.Uint32(b[:]) & math.MaxInt32)
				if s != 0 && !seen[s] {
					break
				}
			}
		}
		seen[s] = true
		out = append(out, RunSpec{Index: i, Seed: s})
	}
	return out, nil
}

// Container mount points of the data classes.
var mounts = map[string]string{
	ClassDataset:     "/data",
	ClassCheckpoint:  "/checkpoint",
	ClassSource:      "/source",
	ClassOutput:      "/results",
	ClassCredentials: "/credentials",
}

func fillSpecs(m *Manifest, w *Workload, c *Config) {
	m.GPUs = c.GPUs
	m.ImageCUDA = c.ImageCUDA
	if c.Runtime != nil {
		rt := *c.Runtime
		m.Runtime = &rt
	}
	if c.Node != nil {
		m.Node = NodeSpec{MinDiskGiB: c.Node.MinDiskGiB, MinMemoryGiB: c.Node.MinMemoryGiB, WorkDir: c.Node.WorkDir}
	}
	if m.Node.WorkDir == "" {
		m.Node.WorkDir = "/tmp"
	}
	m.Command = c.Command
	m.LogFile = c.LogFile
	if len(m.Command) == 0 {
		m.Command = w.DefaultCommand
		if m.LogFile == "" {
			m.LogFile = w.DefaultLogFile
		}
	}
	if s := c.Slurm; s != nil {
		m.Slurm = SlurmSpec{Partition: s.Partition, Account: s.Account, Time: s.Time}
	}
	k := KubernetesSpec{Namespace: "default", WorkGiB: m.Node.MinDiskGiB, ShmGiB: 1, RunAsUser: 1000}
	if kc := c.Kubernetes; kc != nil {
		if kc.Namespace != "" {
			k.Namespace = kc.Namespace
		}
		k.CPUs = kc.CPUs
		if kc.WorkGiB > 0 {
			k.WorkGiB = kc.WorkGiB
		}
		if kc.ShmGiB > 0 {
			k.ShmGiB = kc.ShmGiB
		}
		if kc.RunAsUser > 0 {
			k.RunAsUser = kc.RunAsUser
		}
	}
	if k.WorkGiB == 0 {
		k.WorkGiB = 1
	}
	m.Kubernetes = k

	add := func(class string, v *Volume, ro bool) {
		vs := VolumeSpec{Class: class, Mount: mounts[class], ReadOnly: ro, Claim: "repro-" + w.Name + "-" + class}
		if v != nil {
			vs.NodePath = v.NodePath
			if vs.NodePath == "" {
				vs.NodePath = v.Path
			}
			if v.Claim != "" {
				vs.Claim = v.Claim
			}
		}
		m.Volumes = append(m.Volumes, vs)
	}
	if w.NeedsDataset || (c.ProGames != nil && c.ProGames.Decision == "include") {
		add(ClassDataset, c.Volumes.Dataset, true)
	}
	add(ClassCheckpoint, c.Volumes.Checkpoint, true)
	add(ClassSource, c.Volumes.Source, true)
	add(ClassOutput, c.Volumes.Output, false)
	if c.Volumes.Credentials != nil {
		add(ClassCredentials, c.Volumes.Credentials, true)
	}
}

// Volume returns the manifest's volume of a class.
func (m *Manifest) Volume(class string) (VolumeSpec, bool) {
	for _, v := range m.Volumes {
		if v.Class == class {
			return v, true
		}
	}
	return VolumeSpec{}, false
}

func (p *planner) fail(format string, args ...any) {
	p.res.Problems = append(p.res.Problems, fmt.Sprintf(format, args...))
}

func (p *planner) mismatch(format string, args ...any) {
	p.res.Integrity = true
	p.fail(format, args...)
}

func (p *planner) pin(pin Pin) {
	pin.Requirement = p.res.Requirement
	p.m.Pins = append(p.m.Pins, pin)
}

// lookup returns a catalog entry, recording a problem when it is absent.
func (p *planner) lookup(id string) (catalog.Entry, bool) {
	e, err := p.cat.Lookup(id)
	if err != nil {
		p.fail("the catalog has no entry %s; this build of repro cannot hand off %s", id, p.w.Name)
		return e, false
	}
	return e, true
}

// volumeDir returns the local folder of a volume, recording a problem
// (with how to fix it) when it is not given or not a folder.
func (p *planner) volumeDir(class string, v *Volume, what string) (string, bool) {
	if v == nil || v.Path == "" {
		p.fail("volumes.%s.path is not set: give the folder on this machine that holds %s", class, what)
		return "", false
	}
	fi, err := os.Stat(v.Path)
	if err != nil {
		p.fail("volumes.%s.path %s: %s: it must be the folder on this machine that holds %s", class, v.Path, errText(err), what)
		return "", false
	}
	if !fi.IsDir() {
		p.fail("volumes.%s.path %s is not a folder", class, v.Path)
		return "", false
	}
	return v.Path, true
}

func (p *planner) checkImage() {
	if p.cfg.Image == "" {
		p.fail(`no image: set "image" to name@sha256:<digest> (a tag alone is refused)`)
		return
	}
	ref, err := ParseImageRef(p.cfg.Image)
	if err != nil {
		p.fail("image: %v", err)
		return
	}
	p.m.Image = ref.String()
}

func (p *planner) checkProGames() {
	d := p.cfg.ProGames
	if d == nil {
		p.m.Decisions.ProGames = &ProGamesDecision{
			Decision:  "none",
			Rationale: "default: the MLPerf v0.7+ MiniGo protocol trains on self-play only and uses no human games",
		}
		return
	}
	rec := *d
	rec.Files = append([]PinnedFile(nil), d.Files...)
	p.m.Decisions.ProGames = &rec
	switch d.Decision {
	case "none":
		if d.SourceURL != "" || len(d.Files) > 0 || d.LicenseRuling != nil {
			p.fail(`pro_games.decision is "none" but names a source, files or a license ruling: either drop them or set decision to "include"`)
		}
		return
	case "include":
	default:
		p.fail(`pro_games.decision is %q: it must be "none" (v0.7+ protocol) or "include"`, clip(d.Decision))
		return
	}
	if d.Reviewer == "" || d.Date == "" {
		p.fail("pro_games: an included game set needs the reviewer and the date of the review")
	}
	if u, err := url.Parse(d.SourceURL); d.SourceURL == "" || err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		p.fail("pro_games.source_url must name where the games come from as an https URL without credentials")
	}
	r := d.LicenseRuling
	if r == nil || r.License == "" || r.Ruling == "" || r.Reviewer == "" || r.Date == "" {
		p.fail("pro_games.license_ruling needs license, ruling, reviewer and date: no license or provenance statement exists upstream, so someone must rule on it")
	}
	if len(d.Files) == 0 {
		p.fail("pro_games.files is empty: list every game file with its sha256")
		return
	}
	dir, ok := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the professional game files")
	for i, f := range d.Files {
		want, err := digest.Parse(f.SHA256)
		if err != nil {
			p.fail("pro_games.files[%d] (%s): sha256: %v", i, f.Path, err)
			continue
		}
		if !ok {
			continue
		}
		sum, err := hashFile(p.ctx, filepath.Join(dir, filepath.FromSlash(f.Path)), false)
		if err != nil {
			p.fail("pro_games.files[%d]: %s: %s", i, f.Path, errText(err))
			continue
		}
		if sum.SHA256 != want {
			p.mismatch("pro_games.files[%d]: %s has sha256 %s, the review recorded %s", i, f.Path, sum.SHA256.Hex(), want.Hex())
			continue
		}
		p.pin(Pin{Name: "pro-game:" + f.Path, Class: ClassDataset, Path: f.Path, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "review"})
	}
}

func (p *planner) checkSource() {
	e, ok := p.lookup(p.w.SourceID)
	if !ok {
		return
	}
	if err := e.RequirePinned(); err != nil {
		p.fail("%v", err)
		return
	}
	commit := e.Facts["upstream_commit"]
	dir, ok := p.volumeDir(ClassSource, p.cfg.Volumes.Source, "the source checkout at "+commit)
	if !ok {
		return
	}
	tree, err := digest.Tree(dir)
	if err != nil {
		p.fail("%v", err)
		return
	}
	got := tree.Digest()
	if got != *e.TreeDigest {
		p.mismatch("the checkout at %s has tree digest %s, the catalog pins %s for %s (%s): a different commit, local edits, or converted line endings", dir, got.Hex(), e.TreeDigest.Hex(), e.ID, commit)
		return
	}
	p.pin(Pin{Name: e.ID, Class: ClassSource, Path: ".", Kind: KindTree, SHA256: got.Hex(), Origin: "catalog"})
	files := map[string]digest.TreeFile{}
	for _, f := range tree {
		files[f.Path] = f
	}
	var keys []string
	for k := range e.Facts {
		if strings.HasPrefix(k, "sha256:") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		rel := strings.TrimPrefix(k, "sha256:")
		want := e.Facts[k]
		f, ok := files[rel]
		if !ok {
			p.mismatch("pinned file %s is missing from the checkout at %s", rel, dir)
			continue
		}
		if f.SHA256.Hex() != want {
			p.mismatch("pinned file %s has sha256 %s, the catalog pins %s", rel, f.SHA256.Hex(), want)
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			p.fail("%s: %s", rel, errText(err))
			continue
		}
		p.pin(Pin{Name: e.ID + ":" + rel, Class: ClassSource, Path: rel, Kind: KindFile, Size: fi.Size(), SHA256: want, Origin: "catalog"})
	}
}

func (p *planner) checkGPURuntime() {
	if p.cfg.GPUs < 1 {
		p.fail(`"gpus" is not set: give the number of GPUs the job needs on its node`)
	}
	if p.cfg.ImageCUDA == "" {
		p.fail(`"image_cuda" is not set: give the CUDA version the image was built with, which decides the driver floor (on record: %s)`, strings.Join(KnownCUDA(), ", "))
		return
	}
	f, ok := FloorFor(p.cfg.ImageCUDA)
	if !ok {
		p.fail("no driver floor is on record for CUDA %s (on record: %s): a reviewer must add the published floor for that version to repro, or use an image built for one of those", clip(p.cfg.ImageCUDA), strings.Join(KnownCUDA(), ", "))
		return
	}
	p.m.DriverFloor = &f
}

func (p *planner) checkNodeFloors() {
	n := p.cfg.Node
	if n == nil || n.MinDiskGiB <= 0 {
		p.fail("node.min_disk_gib is not set: no published figure exists for %s, so a reviewer must state the free disk the node needs", p.w.Name)
	}
	if n == nil || n.MinMemoryGiB <= 0 {
		p.fail("node.min_memory_gib is not set: no published figure exists for %s, so a reviewer must state the memory the node needs", p.w.Name)
	}
}

func (p *planner) checkMiniGoEnvironment() {
	p.checkNodeFloors()
	var bootstrap, target *ModelPin
	if p.cfg.Models != nil {
		bootstrap, target = p.cfg.Models.Bootstrap, p.cfg.Models.Target
	}
	dir, dirOK := "", false
	if bootstrap != nil || target != nil {
		dir, dirOK = p.volumeDir(ClassCheckpoint, p.cfg.Volumes.Checkpoint, "the MiniGo bootstrap checkpoint and target model")
	}
	for _, x := range []struct {
		id, field, what string
		pin             *ModelPin
	}{
		{idMiniGoBootstrap, "models.bootstrap", "the bootstrap checkpoint (mlperf07/, from gs://minigo-pub/ml_perf/0.7/checkpoint.tar.gz)", bootstrap},
		{idMiniGoTarget, "models.target", "the frozen target model (target.minigo.tf, from gs://minigo-pub/ml_perf/0.7/target.*)", target},
	} {
		if _, ok := p.lookup(x.id); !ok {
			continue
		}
		mp := x.pin
		if mp == nil || mp.Path == "" {
			p.fail("%s is not set: give the path of %s inside the checkpoint volume and the digest a reviewer recorded (upstream publishes none)", x.field, x.what)
			continue
		}
		if (mp.SHA256 == "") == (mp.TreeDigest == "") {
			p.fail("%s needs exactly one of sha256 (a file) or tree_digest (a folder), recorded by a reviewer after downloading it: upstream publishes no digest", x.field)
			continue
		}
		if !dirOK {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(mp.Path))
		if mp.TreeDigest != "" {
			want, err := digest.Parse(mp.TreeDigest)
			if err != nil {
				p.fail("%s.tree_digest: %v", x.field, err)
				continue
			}
			tree, err := digest.Tree(full)
			if err != nil {
				p.fail("%s: %v", x.field, err)
				continue
			}
			if got := tree.Digest(); got != want {
				p.mismatch("%s: %s has tree digest %s, the review recorded %s", x.field, mp.Path, got.Hex(), want.Hex())
				continue
			}
			p.pin(Pin{Name: x.id, Class: ClassCheckpoint, Path: mp.Path, Kind: KindTree, SHA256: want.Hex(), Origin: "review"})
			continue
		}
		want, err := digest.Parse(mp.SHA256)
		if err != nil {
			p.fail("%s.sha256: %v", x.field, err)
			continue
		}
		sum, err := hashFileProgress(p.ctx, full, false, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s: %s", x.field, mp.Path, errText(err))
			continue
		}
		if sum.SHA256 != want {
			p.mismatch("%s: %s has sha256 %s, the review recorded %s", x.field, mp.Path, sum.SHA256.Hex(), want.Hex())
			continue
		}
		p.pin(Pin{Name: x.id, Class: ClassCheckpoint, Path: mp.Path, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "review"})
	}
}

func (p *planner) checkEntrypoint() {
	if len(p.m.Command) == 0 {
		p.fail(`"command" is not set: the reference ml_perf scripts log no MLLOG lines, so name the entry point inside the image that does (and "log_file" unless it logs to standard output)`)
	}
}

func (p *planner) checkDLRMCheckpoint() {
	e, ok := p.lookup(idDLRMCheckpoint)
	if !ok {
		return
	}
	wantMD5 := e.Facts["md5"]
	if !isHex(wantMD5, 32) {
		p.fail("the catalog entry %s has no published MD5: a reviewer must supply the upstream MD5 before the checkpoint can be verified", e.ID)
		return
	}
	name := p.cfg.CheckpointFile
	if name == "" {
		name = e.Filename
	}
	dir, ok := p.volumeDir(ClassCheckpoint, p.cfg.Volumes.Checkpoint, "the official checkpoint "+e.Filename)
	if !ok {
		return
	}
	full := filepath.Join(dir, filepath.FromSlash(name))
	sum, err := hashFileProgress(p.ctx, full, true, p.opts.Progress)
	if err != nil {
		p.fail("checkpoint %s: %s: download %s into the checkpoint volume", name, errText(err), firstURL(e))
		return
	}
	if sum.MD5 != wantMD5 {
		p.mismatch("checkpoint %s has MD5 %s, upstream publishes %s for %s", name, sum.MD5, wantMD5, e.ID)
		return
	}
	rec, same, err := firstUse(p.opts.StateDir, FirstUse{ID: e.ID, SHA256: sum.SHA256.Hex(), Size: sum.Size, MD5: sum.MD5,
		FirstVerified: p.m.CreatedAt, Path: full, Host: p.opts.Host})
	if err != nil {
		p.fail("checkpoint %s: cannot keep its first-use record: %v", name, err)
		return
	}
	if !same {
		p.mismatch("checkpoint %s has sha256 %s and %d bytes, but %s was first verified on %s as sha256 %s, %d bytes (%s): refusing a different file with the same MD5",
			name, sum.SHA256.Hex(), sum.Size, e.ID, rec.FirstVerified.Format(time.RFC3339), rec.SHA256, rec.Size, rec.Path)
		return
	}
	p.m.Decisions.CheckpointFirstUse = &rec
	p.pin(Pin{Name: e.ID, Class: ClassCheckpoint, Path: name, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), MD5: sum.MD5, Origin: "first-use"})
}

// duTolerance is how far a file's size may be from a published du figure:
// du counts allocated blocks, not bytes, so only a gross difference (a
// truncated or wrong file) is a finding; the MD5 decides.
const duTolerance = 0.01

func (p *planner) checkCriteo() {
	dir, dirOK := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the Criteo Terabyte day files day_0 … day_23")
	var missing []string
	for i := 0; i < criteoDays; i++ {
		e, ok := p.lookup(idCriteoDayPrefix + strconv.Itoa(i))
		if !ok {
			continue
		}
		wantMD5 := e.Facts["md5"]
		duKiB, err := strconv.ParseInt(e.Facts["du_kib"], 10, 64)
		if !isHex(wantMD5, 32) || err != nil || duKiB <= 0 {
			p.fail("the catalog entry %s lacks its published MD5 or size: a reviewer must supply them", e.ID)
			continue
		}
		if !dirOK {
			continue
		}
		full := filepath.Join(dir, e.Filename)
		fi, err := os.Stat(full)
		if err != nil {
			missing = append(missing, e.Filename)
			continue
		}
		kib := (fi.Size() + 1023) / 1024
		if math.Abs(float64(kib-duKiB)) > duTolerance*float64(duKiB) {
			p.mismatch("%s is %d KiB, upstream publishes %d KiB (du): a truncated or wrong file (copies with days missing or cut to ~1.6 GB circulated in 2026)", e.Filename, kib, duKiB)
			continue
		}
		sum, err := hashFileProgress(p.ctx, full, true, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s", e.Filename, errText(err))
			continue
		}
		if sum.MD5 != wantMD5 {
			p.mismatch("%s has MD5 %s, upstream publishes %s", e.Filename, sum.MD5, wantMD5)
			continue
		}
		p.pin(Pin{Name: e.ID, Class: ClassDataset, Path: e.Filename, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), MD5: sum.MD5, Origin: "recorded-here"})
	}
	if len(missing) > 0 {
		p.fail("%d of %d day files are missing from %s (%s): all of day_0 … day_23, unzipped, are needed", len(missing), criteoDays, dir, shortList(missing))
	}
}

func (p *planner) checkCriteoLicense() {
	e, ok := p.lookup(idCriteoDayPrefix + "0")
	if !ok {
		return
	}
	l := p.cfg.CriteoLicense
	if l == nil {
		p.fail(`no license acceptance is recorded: the Criteo 1TB Click Logs are %s; record criteo_license with license, accepted_by and date`, e.License)
		return
	}
	if l.License != e.License {
		p.fail("criteo_license.license is %q, but the dataset's license is %q: the acceptance must name it", clip(l.License), e.License)
	}
	if l.AcceptedBy == "" || l.Date == "" {
		p.fail("criteo_license needs accepted_by and date")
	}
	if len(p.res.Problems) == 0 {
		rec := *l
		p.m.Decisions.DatasetLicense = &rec
	}
}

func (p *planner) checkPreprocessed() {
	dir, dirOK := p.volumeDir(ClassDataset, p.cfg.Volumes.Dataset, "the preprocessed binaries")
	var missing []string
	for _, id := range []string{idDLRMTrainBin, idDLRMTestBin, idDLRMFeatureCount} {
		e, ok := p.lookup(id)
		if !ok || !dirOK {
			continue
		}
		full := filepath.Join(dir, e.Filename)
		fi, err := os.Stat(full)
		if err != nil {
			missing = append(missing, e.Filename)
			continue
		}
		if s, ok := e.Facts["size"]; ok {
			want, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				p.fail("the catalog entry %s has a malformed size", e.ID)
				continue
			}
			if fi.Size() != want {
				p.fail("%s is %d bytes, but %s rows of %s bytes make %d: preprocessed with other flags, or cut short; preprocess again", e.Filename, fi.Size(), e.Facts["rows"], e.Facts["record_bytes"], want)
				continue
			}
		}
		sum, err := hashFileProgress(p.ctx, full, false, p.opts.Progress)
		if err != nil {
			p.fail("%s: %s", e.Filename, errText(err))
			continue
		}
		p.pin(Pin{Name: e.ID, Class: ClassDataset, Path: e.Filename, Kind: KindFile, Size: sum.Size, SHA256: sum.SHA256.Hex(), Origin: "recorded-here"})
	}
	if len(missing) > 0 {
		p.fail("%s missing from %s: the DLRM job would start the multi-day preprocessing silently inside the timed run; preprocess once, outside it", shortList(missing), dir)
	}
}

var unpinnedRef = regexp.MustCompile(`(?i)^(master|main|head|latest|dev|develop|trunk|nightly)$`)

func (p *planner) checkRuntime() {
	r := p.cfg.Runtime
	if r == nil {
		r = &Runtime{}
	}
	if r.Python == "" {
		p.fail("runtime.python is not set: give the interpreter version installed in the image")
	}
	if r.Torch == "" {
		p.fail("runtime.torch is not set: give the torch version installed in the image")
	}
	switch {
	case r.MLPerfLogging == "":
		p.fail("runtime.mlperf_logging is not set: give the mlperf_logging release or commit installed in the image (dlrm's requirements.txt points at a git:// URL GitHub no longer serves)")
	case unpinnedRef.MatchString(r.MLPerfLogging):
		p.fail("runtime.mlperf_logging is the branch %q: install and name a release or a commit", r.MLPerfLogging)
	}
}

func (p *planner) checkDLRMEnvironment() { p.checkNodeFloors() }

var (
	secretName  = regexp.MustCompile(`(?i)(pass(wd|word)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth)`)
	secretArg   = regexp.MustCompile(`(?i)(pass(wd|word)?|secret|token|api[_-]?key|access[_-]?key)\s*[=:]`)
	secretValue = regexp.MustCompile(`(-----BEGIN [A-Z ]*PRIVATE KEY-----|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bhf_[A-Za-z0-9]{20,})`)
)

func (p *planner) checkDataClasses() {
	c := p.cfg
	out := c.Volumes.Output
	if out == nil || (out.Path == "" && out.NodePath == "") {
		p.fail("volumes.output is not set: give the folder results are written to (path, and node_path if the nodes see it elsewhere), outside every input volume")
	}
	type vol struct {
		class string
		v     *Volume
	}
	vols := []vol{{ClassDataset, c.Volumes.Dataset}, {ClassCheckpoint, c.Volumes.Checkpoint}, {ClassSource, c.Volumes.Source}, {ClassOutput, c.Volumes.Output}, {ClassCredentials, c.Volumes.Credentials}}
	for i := 0; i < len(vols); i++ {
		for j := i + 1; j < len(vols); j++ {
			a, b := vols[i], vols[j]
			if a.v == nil || b.v == nil {
				continue
			}
			// Inputs may share a parent; what must never happen is that
			// outputs or credentials overlap anything else.
			if !(a.class == ClassOutput || b.class == ClassOutput || a.class == ClassCredentials || b.class == ClassCredentials) {
				continue
			}
			for _, pair := range [][2]string{{localPath(a.v.Path), localPath(b.v.Path)}, {nodePath(a.v), nodePath(b.v)}} {
				if overlaps(pair[0], pair[1]) {
					p.fail("volumes.%s (%s) and volumes.%s (%s) overlap: outputs and credentials each need a volume of their own, outside every other", a.class, pair[0], b.class, pair[1])
					break
				}
			}
			if a.v.Claim != "" && a.v.Claim == b.v.Claim {
				p.fail("volumes.%s and volumes.%s name the same claim %q: each data class needs its own volume", a.class, b.class, a.v.Claim)
			}
		}
	}
	if p.opts.OutDir != "" {
		bundle := localPath(p.opts.OutDir)
		for _, v := range vols {
			if v.v == nil || v.class == ClassOutput || v.v.Path == "" {
				continue
			}
			if overlaps(bundle, localPath(v.v.Path)) {
				p.fail("the bundle folder %s overlaps volumes.%s (%s): write the bundle outside every input volume", p.opts.OutDir, v.class, v.v.Path)
			}
		}
	}
	var envKeys []string
	for k := range c.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		v := c.Env[k]
		if secretName.MatchString(k) && !strings.HasPrefix(v, mounts[ClassCredentials]+"/") {
			p.fail("env.%s looks like a credential baked into the manifest: put the secret in volumes.credentials and pass its path (under %s/) instead", k, mounts[ClassCredentials])
		} else if secretValue.MatchString(v) {
			p.fail("env.%s holds what looks like a key or token: credentials never go into the manifest; use volumes.credentials", k)
		}
	}
	for i, a := range c.Command {
		if secretArg.MatchString(a) || secretValue.MatchString(a) {
			p.fail("command[%d] carries what looks like a credential: pass a file under %s/ instead", i, mounts[ClassCredentials])
		}
	}
}

func localPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func nodePath(v *Volume) string {
	if v.NodePath != "" {
		return v.NodePath
	}
	return v.Path
}

// overlaps reports whether a and b are the same folder or one holds the
// other.
func overlaps(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	a, b = path.Clean(filepath.ToSlash(a)), path.Clean(filepath.ToSlash(b))
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") || strings.HasPrefix(b, strings.TrimSuffix(a, "/")+"/")
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func firstURL(e catalog.Entry) string {
	if len(e.URLs) > 0 {
		return e.URLs[0]
	}
	return e.Filename
}

func shortList(s []string) string {
	if len(s) > 6 {
		return strings.Join(s[:6], ", ") + fmt.Sprintf(" and %d more", len(s)-6)
	}
	return strings.Join(s, ", ")
}
