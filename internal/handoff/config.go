package handoff

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

// MaxConfigBytes bounds a configuration file. Real ones are a few KiB.
const MaxConfigBytes = 256 << 10

// Bounds on the shape of a configuration.
const (
	maxString   = 4096
	maxList     = 256
	maxEnv      = 64
	maxRuns     = 100
	maxGPUs     = 64
	maxGiB      = 1 << 20 // 1 PiB
	maxDays     = 36500
	maxCommands = 64
)

// Config is the operator's description of one handoff: where the data
// lives, which image runs, and the reviewed decisions. It is untrusted
// input: [ParseConfig] decodes it strictly and bounds every field, and
// nothing in it can replace a catalog pin.
//
// Paths under Volumes are absolute. Path is where the data is on this
// machine (repro handoff checks it there); NodePath, when set, is where the
// Slurm nodes see the same folder; Claim names the Kubernetes
// PersistentVolumeClaim (for credentials: the Secret) that holds it.
type Config struct {
	// Image is the container image as name@sha256:<64 hex>; a tag alone
	// is refused.
	Image string `json:"image,omitempty"`
	// ImageLayout is an OCI image layout folder on this machine that
	// holds the image and its attestations, read instead of the registry
	// the image names (offline); the bundle still names the image by its
	// registry reference and digest.
	ImageLayout string `json:"image_layout,omitempty"`
	// ImageCUDA is the CUDA version the image was built with ("11.8"); it
	// decides the driver floor the node must meet.
	ImageCUDA string `json:"image_cuda,omitempty"`
	// GPUs is the number of GPUs the job needs on its node.
	GPUs int `json:"gpus,omitempty"`
	// Container selects the Slurm container runtime: "pyxis" (pyxis and
	// enroot, the default), "apptainer" or "podman".
	Container string      `json:"container,omitempty"`
	Node      *NodeConfig `json:"node,omitempty"`
	Volumes   Volumes     `json:"volumes"`

	// MiniGo only.
	ProGames *ProGamesDecision `json:"pro_games,omitempty"`
	Models   *MiniGoModels     `json:"models,omitempty"`

	// DLRM only.
	CriteoLicense *LicenseAcceptance `json:"criteo_license,omitempty"`
	// CheckpointFile is the model file's path inside the checkpoint
	// volume; the default is the catalog's file name (tb00_40M.pt).
	CheckpointFile string `json:"checkpoint_file,omitempty"`

	Runtime *Runtime `json:"runtime,omitempty"`

	// Runs is the number of training runs (default: the MLPerf count,
	// 10 for MiniGo and 5 for DLRM). Seeds, when given, are one distinct
	// seed per run; otherwise repro draws them.
	Runs  int     `json:"runs,omitempty"`
	Seeds []int64 `json:"seeds,omitempty"`
	// Command is the entry point run inside the container from a writable
	// copy of the pinned source tree; "{seed}" and "{run}" in an argument
	// are replaced per run. LogFile is the MLLOG file it writes, relative
	// to the source copy; empty means the command's standard output.
	Command []string `json:"command,omitempty"`
	LogFile string   `json:"log_file,omitempty"`
	// Env is passed to the workload. Credentials never go here: names that
	// look like secrets are refused; mount them with volumes.credentials.
	Env map[string]string `json:"env,omitempty"`
	// ClearCaches asks the Slurm job to drop the page cache before each run
	// (MLPerf cache_clear), which needs passwordless sudo for sysctl.
	ClearCaches bool `json:"clear_caches,omitempty"`

	Slurm      *SlurmConfig      `json:"slurm,omitempty"`
	Kubernetes *KubernetesConfig `json:"kubernetes,omitempty"`
	Retention  *Retention        `json:"retention,omitempty"`
}

// NodeConfig is what the target node must offer. No upstream publishes
// these figures for MiniGo or DLRM, so a reviewer supplies them.
type NodeConfig struct {
	MinDiskGiB   int64 `json:"min_disk_gib,omitempty"`
	MinMemoryGiB int64 `json:"min_memory_gib,omitempty"`
	// WorkDir is node-local scratch for the writable copy of the source
	// tree (Slurm); default /tmp.
	WorkDir string `json:"work_dir,omitempty"`
}

// Volume is one data class's storage.
type Volume struct {
	Path     string `json:"path,omitempty"`
	NodePath string `json:"node_path,omitempty"`
	Claim    string `json:"claim,omitempty"`
}

// Volumes keeps the data classes apart: each is its own mount with its
// own permissions.
type Volumes struct {
	Dataset     *Volume `json:"dataset,omitempty"`
	Checkpoint  *Volume `json:"checkpoint,omitempty"`
	Source      *Volume `json:"source,omitempty"`
	Output      *Volume `json:"output,omitempty"`
	Credentials *Volume `json:"credentials,omitempty"`
}

// ProGamesDecision is the reviewed decision on professional Go games.
// "none" (the v0.7+ protocol) needs nothing else; "include" needs a source,
// pinned files and a license ruling.
type ProGamesDecision struct {
	Decision      string         `json:"decision"`
	Reviewer      string         `json:"reviewer,omitempty"`
	Date          string         `json:"date,omitempty"`
	Rationale     string         `json:"rationale,omitempty"`
	SourceURL     string         `json:"source_url,omitempty"`
	Files         []PinnedFile   `json:"files,omitempty"`
	LicenseRuling *LicenseRuling `json:"license_ruling,omitempty"`
}

// PinnedFile is a file inside a volume with the SHA-256 a reviewer
// recorded for it.
type PinnedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// LicenseRuling records who decided that material may be used, and under
// which license.
type LicenseRuling struct {
	License  string `json:"license,omitempty"`
	Ruling   string `json:"ruling,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
	Date     string `json:"date,omitempty"`
}

// MiniGoModels are the two downloaded MiniGo inputs, inside the checkpoint
// volume. Neither has an upstream digest: a reviewer records one.
type MiniGoModels struct {
	Bootstrap *ModelPin `json:"bootstrap,omitempty"`
	Target    *ModelPin `json:"target,omitempty"`
}

// ModelPin is a file (SHA256) or a folder (TreeDigest) in the checkpoint
// volume.
type ModelPin struct {
	Path       string `json:"path,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	TreeDigest string `json:"tree_digest,omitempty"`
}

// LicenseAcceptance records that someone accepted a dataset's license.
type LicenseAcceptance struct {
	License    string `json:"license,omitempty"`
	AcceptedBy string `json:"accepted_by,omitempty"`
	Date       string `json:"date,omitempty"`
	Terms      string `json:"terms,omitempty"`
}

// Runtime is the prepared Python runtime inside the image.
type Runtime struct {
	Python        string `json:"python,omitempty"`
	Torch         string `json:"torch,omitempty"`
	TensorFlow    string `json:"tensorflow,omitempty"`
	MLPerfLogging string `json:"mlperf_logging,omitempty"`
}

// SlurmConfig holds optional sbatch settings.
type SlurmConfig struct {
	Partition string `json:"partition,omitempty"`
	Account   string `json:"account,omitempty"`
	Time      string `json:"time,omitempty"`
}

// KubernetesConfig holds optional Kubernetes settings.
type KubernetesConfig struct {
	Namespace string `json:"namespace,omitempty"`
	// CPUs bounds the pod's CPU (requests = limits); unset leaves CPU
	// unbounded, which the bundle records as a relaxed control.
	CPUs int64 `json:"cpus,omitempty"`
	// WorkGiB bounds the writable work volume (default min_disk_gib).
	WorkGiB int64 `json:"work_gib,omitempty"`
	// ShmGiB sizes /dev/shm (default 1).
	ShmGiB int64 `json:"shm_gib,omitempty"`
	// RunAsUser is the non-root UID (default 1000).
	RunAsUser int64 `json:"run_as_user,omitempty"`
}

// Retention overrides how long each data class is kept.
type Retention struct {
	OutputsDays int `json:"outputs_days,omitempty"`
}

// ConfigError is a configuration that cannot be read; it is a usage error.
type ConfigError struct {
	Name string
	Err  error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %s: %v", e.Name, e.Err) }
func (e *ConfigError) Unwrap() error { return e.Err }

// LoadConfig reads and parses the configuration at path and returns it
// with the SHA-256 of the file. A missing, oversized or malformed file is
// an exitcode.Usage error naming the file.
func LoadConfig(name string) (*Config, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, "", exitcode.New(exitcode.Usage, &ConfigError{Name: name, Err: errors.New("cannot open: " + errText(err))})
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, "", exitcode.New(exitcode.Usage, &ConfigError{Name: name, Err: errors.New("cannot read: " + errText(err))})
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, "", exitcode.New(exitcode.Usage, &ConfigError{Name: name, Err: err})
	}
	return c, digest.Of(b).Hex(), nil
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ParseConfig decodes a configuration strictly: one JSON object, no
// unknown fields, no trailing data, at most MaxConfigBytes, and every
// field within its bounds. It checks the shape of values (absolute clean
// paths, no control characters, dates as YYYY-MM-DD); whether they satisfy
// a workload's requirements is decided later, by the requirement checks.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", len(b), MaxConfigBytes)
	}
	if !utf8.Valid(b) {
		return nil, errors.New("not valid UTF-8")
	}
	var c Config
	if err := strictjson.Decode(b, &c); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

var (
	datePattern   = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`)
	envName       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	k8sObjName    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	slurmWord     = regexp.MustCompile(`^[A-Za-z0-9_.:,+-]{1,128}$`)
	versionString = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,127}$`)
)

func (c *Config) validate() error {
	var errs []string
	bad := func(field, format string, args ...any) {
		errs = append(errs, field+": "+fmt.Sprintf(format, args...))
	}
	str := func(field, s string) {
		if err := checkText(s); err != nil {
			bad(field, "%v", err)
		}
	}
	str("image", c.Image)
	if c.ImageLayout != "" {
		if err := checkAbsPath(c.ImageLayout); err != nil {
			bad("image_layout", "%v", err)
		}
	}
	str("image_cuda", c.ImageCUDA)
	if c.GPUs < 0 || c.GPUs > maxGPUs {
		bad("gpus", "%d is out of range 1..%d", c.GPUs, maxGPUs)
	}
	switch c.Container {
	case "", ContainerPyxis, ContainerApptainer, ContainerPodman:
	default:
		bad("container", "%q is none of pyxis, apptainer and podman", clip(c.Container))
	}
	if n := c.Node; n != nil {
		if n.MinDiskGiB < 0 || n.MinDiskGiB > maxGiB {
			bad("node.min_disk_gib", "%d is out of range", n.MinDiskGiB)
		}
		if n.MinMemoryGiB < 0 || n.MinMemoryGiB > maxGiB {
			bad("node.min_memory_gib", "%d is out of range", n.MinMemoryGiB)
		}
		if n.WorkDir != "" {
			if err := checkAbsPath(n.WorkDir); err != nil {
				bad("node.work_dir", "%v", err)
			}
		}
	}
	for _, v := range []struct {
		name string
		vol  *Volume
	}{{"dataset", c.Volumes.Dataset}, {"checkpoint", c.Volumes.Checkpoint}, {"source", c.Volumes.Source}, {"output", c.Volumes.Output}, {"credentials", c.Volumes.Credentials}} {
		if v.vol == nil {
			continue
		}
		f := "volumes." + v.name
		if v.vol.Path != "" {
			if err := checkAbsPath(v.vol.Path); err != nil {
				bad(f+".path", "%v", err)
			}
		}
		if v.vol.NodePath != "" {
			if err := checkAbsPath(v.vol.NodePath); err != nil {
				bad(f+".node_path", "%v", err)
			}
		}
		if v.vol.Claim != "" && !k8sObjName.MatchString(v.vol.Claim) {
			bad(f+".claim", "%q is not a Kubernetes object name (lowercase letters, digits and '-', at most 63)", clip(v.vol.Claim))
		}
	}
	if p := c.ProGames; p != nil {
		str("pro_games.decision", p.Decision)
		str("pro_games.reviewer", p.Reviewer)
		str("pro_games.rationale", p.Rationale)
		str("pro_games.source_url", p.SourceURL)
		checkDate(bad, "pro_games.date", p.Date)
		if len(p.Files) > maxList {
			bad("pro_games.files", "%d files, over the limit of %d", len(p.Files), maxList)
		}
		for i, f := range p.Files {
			if err := checkRelPath(f.Path); err != nil {
				bad(fmt.Sprintf("pro_games.files[%d].path", i), "%v", err)
			}
			str(fmt.Sprintf("pro_games.files[%d].sha256", i), f.SHA256)
		}
		if r := p.LicenseRuling; r != nil {
			str("pro_games.license_ruling.license", r.License)
			str("pro_games.license_ruling.ruling", r.Ruling)
			str("pro_games.license_ruling.reviewer", r.Reviewer)
			checkDate(bad, "pro_games.license_ruling.date", r.Date)
		}
	}
	if m := c.Models; m != nil {
		for _, x := range []struct {
			name string
			p    *ModelPin
		}{{"bootstrap", m.Bootstrap}, {"target", m.Target}} {
			if x.p == nil {
				continue
			}
			if x.p.Path != "" {
				if err := checkRelPath(x.p.Path); err != nil {
					bad("models."+x.name+".path", "%v", err)
				}
			}
			str("models."+x.name+".sha256", x.p.SHA256)
			str("models."+x.name+".tree_digest", x.p.TreeDigest)
		}
	}
	if l := c.CriteoLicense; l != nil {
		str("criteo_license.license", l.License)
		str("criteo_license.accepted_by", l.AcceptedBy)
		str("criteo_license.terms", l.Terms)
		checkDate(bad, "criteo_license.date", l.Date)
	}
	if c.CheckpointFile != "" {
		if err := checkRelPath(c.CheckpointFile); err != nil {
			bad("checkpoint_file", "%v", err)
		}
	}
	if r := c.Runtime; r != nil {
		for _, x := range []struct{ name, v string }{{"python", r.Python}, {"torch", r.Torch}, {"tensorflow", r.TensorFlow}, {"mlperf_logging", r.MLPerfLogging}} {
			if x.v != "" && !versionString.MatchString(x.v) {
				bad("runtime."+x.name, "%q is not a version (letters, digits, '.', '+', '_' and '-')", clip(x.v))
			}
		}
	}
	if c.Runs < 0 || c.Runs > maxRuns {
		bad("runs", "%d is out of range 1..%d", c.Runs, maxRuns)
	}
	if len(c.Seeds) > maxRuns {
		bad("seeds", "%d seeds, over the limit of %d", len(c.Seeds), maxRuns)
	}
	for i, s := range c.Seeds {
		if s < 0 || s > 1<<31-1 {
			bad(fmt.Sprintf("seeds[%d]", i), "%d is out of range 0..2147483647", s)
		}
	}
	if len(c.Command) > maxCommands {
		bad("command", "%d arguments, over the limit of %d", len(c.Command), maxCommands)
	}
	for i, a := range c.Command {
		str(fmt.Sprintf("command[%d]", i), a)
		if a == "" {
			bad(fmt.Sprintf("command[%d]", i), "empty argument")
		}
	}
	if c.LogFile != "" {
		if err := checkRelPath(c.LogFile); err != nil {
			bad("log_file", "%v", err)
		}
	}
	if len(c.Env) > maxEnv {
		bad("env", "%d variables, over the limit of %d", len(c.Env), maxEnv)
	}
	for k, v := range c.Env {
		if !envName.MatchString(k) {
			bad("env", "%q is not an environment variable name", clip(k))
			continue
		}
		if strings.HasPrefix(k, "REPRO_") {
			bad("env."+k, "names starting with REPRO_ are set by the bundle")
		}
		str("env."+k, v)
	}
	if s := c.Slurm; s != nil {
		for _, x := range []struct{ name, v string }{{"partition", s.Partition}, {"account", s.Account}, {"time", s.Time}} {
			if x.v != "" && !slurmWord.MatchString(x.v) {
				bad("slurm."+x.name, "%q has characters sbatch does not take here", clip(x.v))
			}
		}
	}
	if k := c.Kubernetes; k != nil {
		if k.Namespace != "" && !k8sObjName.MatchString(k.Namespace) {
			bad("kubernetes.namespace", "%q is not a Kubernetes namespace name", clip(k.Namespace))
		}
		if k.CPUs < 0 || k.CPUs > 4096 {
			bad("kubernetes.cpus", "%d is out of range", k.CPUs)
		}
		if k.WorkGiB < 0 || k.WorkGiB > maxGiB {
			bad("kubernetes.work_gib", "%d is out of range", k.WorkGiB)
		}
		if k.ShmGiB < 0 || k.ShmGiB > 4096 {
			bad("kubernetes.shm_gib", "%d is out of range", k.ShmGiB)
		}
		if k.RunAsUser < 0 || k.RunAsUser > 1<<31-1 {
			bad("kubernetes.run_as_user", "%d is out of range (0 means the default, 1000; root is never used)", k.RunAsUser)
		}
	}
	if r := c.Retention; r != nil && (r.OutputsDays < 0 || r.OutputsDays > maxDays) {
		bad("retention.outputs_days", "%d is out of range 1..%d", r.OutputsDays, maxDays)
	}
	if len(errs) > 0 {
		if len(errs) > 5 {
			errs = append(errs[:5], fmt.Sprintf("and %d more", len(errs)-5))
		}
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func checkDate(bad func(string, string, ...any), field, s string) {
	if s != "" && !datePattern.MatchString(s) {
		bad(field, "%q is not a date (YYYY-MM-DD)", clip(s))
	}
}

// checkText refuses strings that are too long or hold control characters:
// configuration values end up in shell scripts and YAML, quoted, but a
// newline or NUL there is never legitimate.
func checkText(s string) error {
	if len(s) > maxString {
		return fmt.Errorf("%d bytes, over the limit of %d", len(s), maxString)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return fmt.Errorf("%q holds a control character", clip(s))
		}
	}
	return nil
}

func checkAbsPath(p string) error {
	if err := checkText(p); err != nil {
		return err
	}
	if !path.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", clip(p))
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%q is not a clean path (write it as %q)", clip(p), path.Clean(p))
	}
	if p == "/" {
		return errors.New(`"/" cannot be a volume`)
	}
	if strings.ContainsAny(p, ":,") {
		return fmt.Errorf("%q holds ':' or ',', which container mount lists cannot carry", clip(p))
	}
	return nil
}

func checkRelPath(p string) error {
	if err := checkText(p); err != nil {
		return err
	}
	if p == "" {
		return errors.New("empty path")
	}
	if path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%q must be a clean relative path inside its volume", clip(p))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
