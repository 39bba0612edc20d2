package handoff

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
)

// Prepare and its plan: the options, the per-requirement results, and the
// planner that runs each requirement's checks made on this machine.

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
	// Trust is the trust file whose image policy the runtime image must
	// meet (its signature, SBOM and scan); nil applies none.
	Trust *ImageTrust
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
	// Evidence are the bundle files that keep the runtime image's
	// attestations (ImageVerification.Evidence), by name.
	Evidence map[string][]byte
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
	opts Options
	cfg  *Config
	w    *Workload
	cat  *catalog.Catalog
	m    *Manifest
	res  *Result
	// evidence are the envelopes the image check kept.
	evidence map[string][]byte
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
	p := &planner{opts: opts, cfg: cfg, w: w, cat: opts.Catalog, m: m}
	plan := &Plan{Manifest: m}
	for i := range w.Requirements {
		req := &w.Requirements[i]
		p.res = &Result{Requirement: req.ID, Title: req.Title}
		req.check(p, ctx)
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
	plan.Evidence = p.evidence
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
