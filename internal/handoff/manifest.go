package handoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// ManifestFormat names the manifest layout; a reader refuses any other.
const ManifestFormat = "repro-handoff v1"

// ManifestName is the manifest's file name inside a bundle.
const ManifestName = "manifest.json"

// MaxManifestBytes bounds a manifest read back from a bundle.
const MaxManifestBytes = 4 << 20

// Manifest is everything a bundle pins and records. The other files of a
// bundle (scripts, Kubernetes objects, README) are rendered from it alone,
// so a bundle verifies by checking the manifest's digest and rendering
// those files again.
//
// Digest is the SHA-256 of the manifest's JSON encoding with Digest empty.
// It names the bundle: the job scripts carry it, the preflight report and
// every result log repeat it, and ingest compares them. It detects any
// change to a bundle made without repro; it does not stop someone from
// writing a new, self-consistent manifest, which is what run records and
// their signatures are for.
type Manifest struct {
	Format    string    `json:"format"`
	Workload  string    `json:"workload"`
	Benchmark string    `json:"benchmark"`
	Ruleset   string    `json:"ruleset"`
	Ready     bool      `json:"ready"`
	Missing   []Missing `json:"missing,omitempty"`
	Target    string    `json:"target"`
	Container string    `json:"container,omitempty"`

	CreatedAt    time.Time `json:"created_at"`
	CreatedOn    string    `json:"created_on"`
	ReproVersion string    `json:"repro_version"`
	ConfigSHA256 string    `json:"config_sha256,omitempty"`

	Image string `json:"image"`
	// ImageVerification is what the trust file's image policy found of
	// the image (signature, SBOM, scan).
	ImageVerification *ImageVerification `json:"image_verification,omitempty"`
	ImageCUDA         string             `json:"image_cuda,omitempty"`
	DriverFloor       *DriverFloor       `json:"driver_floor,omitempty"`
	GPUs              int                `json:"gpus"`
	Node              NodeSpec           `json:"node"`
	Volumes           []VolumeSpec       `json:"volumes"`
	Pins              []Pin              `json:"pins"`
	Decisions         Decisions          `json:"decisions"`
	Runtime           *Runtime           `json:"runtime,omitempty"`

	Runs        []RunSpec         `json:"runs"`
	Command     []string          `json:"command,omitempty"`
	LogFile     string            `json:"log_file,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	ClearCaches bool              `json:"clear_caches,omitempty"`
	Slurm       SlurmSpec         `json:"slurm"`
	Kubernetes  KubernetesSpec    `json:"kubernetes"`

	Checks      []CheckRecord   `json:"checks"`
	Relaxations []Relaxation    `json:"relaxations"`
	Retention   []RetentionRule `json:"retention"`
	Files       []string        `json:"files"`

	Digest string `json:"digest,omitempty"`
}

// Missing is one requirement a plan bundle does not meet.
type Missing struct {
	Requirement string `json:"requirement"`
	Problem     string `json:"problem"`
}

// NodeSpec is what the preflight demands of the node.
type NodeSpec struct {
	MinDiskGiB   int64  `json:"min_disk_gib"`
	MinMemoryGiB int64  `json:"min_memory_gib"`
	WorkDir      string `json:"work_dir"`
}

// Data classes. Each is its own volume with its own permissions.
const (
	ClassDataset     = "dataset"
	ClassCheckpoint  = "checkpoint"
	ClassSource      = "source"
	ClassOutput      = "output"
	ClassCredentials = "credentials"
)

// VolumeSpec is where one data class lives on the target and where the
// container sees it.
type VolumeSpec struct {
	Class    string `json:"class"`
	NodePath string `json:"node_path,omitempty"`
	Claim    string `json:"claim,omitempty"`
	Mount    string `json:"mount"`
	ReadOnly bool   `json:"read_only"`
}

// Pin is one pinned input: a file or a tree inside a volume.
type Pin struct {
	// Requirement is the requirement the pin belongs to.
	Requirement string `json:"requirement"`
	// Name is the catalog id, or a name for an input the catalog does not
	// know (a reviewer-recorded model file).
	Name  string `json:"name"`
	Class string `json:"class"`
	// Path is relative to the volume root; "." is the whole volume.
	Path string `json:"path"`
	// Kind is "file" (SHA256 is the file's digest) or "tree" (SHA256 is
	// the repro tree digest of the folder).
	Kind   string `json:"kind"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256"`
	// MD5 is the upstream-published MD5 the file was checked against.
	MD5 string `json:"md5,omitempty"`
	// Origin says where the digest comes from: "catalog" (a reviewed pin),
	// "first-use" (recorded at first verification), "review" (recorded by
	// a reviewer in the configuration) or "recorded-here" (computed by
	// repro handoff after the published MD5 or size matched).
	Origin string `json:"origin"`
}

// Pin kinds.
const (
	KindFile = "file"
	KindTree = "tree"
)

// Decisions are the reviewed decisions a bundle rests on.
type Decisions struct {
	ProGames       *ProGamesDecision  `json:"pro_games,omitempty"`
	DatasetLicense *LicenseAcceptance `json:"dataset_license,omitempty"`
	// CheckpointFirstUse records when the checkpoint's SHA-256 was first
	// recorded (trust on first use).
	CheckpointFirstUse *FirstUse `json:"checkpoint_first_use,omitempty"`
}

// RunSpec is one training run and its seed.
type RunSpec struct {
	Index int   `json:"index"`
	Seed  int64 `json:"seed"`
}

// SlurmSpec holds the sbatch settings.
type SlurmSpec struct {
	Partition string `json:"partition,omitempty"`
	Account   string `json:"account,omitempty"`
	Time      string `json:"time,omitempty"`
}

// KubernetesSpec holds the Kubernetes settings.
type KubernetesSpec struct {
	Namespace string `json:"namespace"`
	CPUs      int64  `json:"cpus,omitempty"`
	WorkGiB   int64  `json:"work_gib"`
	ShmGiB    int64  `json:"shm_gib"`
	RunAsUser int64  `json:"run_as_user"`
}

// CheckRecord says what was checked, where and when.
type CheckRecord struct {
	Requirement string    `json:"requirement"`
	Where       Where     `json:"where"`
	What        string    `json:"what"`
	Host        string    `json:"host,omitempty"`
	At          time.Time `json:"at,omitzero"`
	Result      string    `json:"result"`
}

// Check results in a CheckRecord.
const (
	ResultOK       = "ok"
	ResultFailed   = "failed"
	ResultDeferred = "deferred" // made on the target by the preflight script
)

// Relaxation is a security control the workload cannot run under, and why.
type Relaxation struct {
	Control string `json:"control"`
	Target  string `json:"target"`
	Why     string `json:"why"`
}

// RetentionRule says where a data class lives, who may read it, how long
// it is kept and how it is deleted.
type RetentionRule struct {
	Class    string   `json:"class"`
	Location string   `json:"location"`
	Readers  string   `json:"readers"`
	Kept     string   `json:"kept"`
	Delete   []string `json:"delete"`
}

// ComputeDigest returns the SHA-256 of m's JSON encoding with Digest empty.
func (m *Manifest) ComputeDigest() (digest.SHA256, error) {
	c := *m
	c.Digest = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return digest.SHA256{}, err
	}
	return digest.Of(b), nil
}

// Seal sets m.Digest.
func (m *Manifest) Seal() error {
	d, err := m.ComputeDigest()
	if err != nil {
		return err
	}
	m.Digest = d.Hex()
	return nil
}

// ShortDigest is the first 12 hex digits of the digest, for names.
func (m *Manifest) ShortDigest() string {
	if len(m.Digest) < 12 {
		return "unsealed"
	}
	return m.Digest[:12]
}

// Marshal returns the manifest as indented JSON with a final newline.
func (m *Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseManifest reads a manifest strictly (known fields only, one object,
// bounded) and checks its format and digest. A digest that does not match
// is an exitcode.Integrity error.
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest is %d bytes, over the limit of %d", len(b), MaxManifestBytes)
	}
	var m Manifest
	if err := strictjson.Decode(b, &m); err != nil {
		return nil, fmt.Errorf("invalid manifest: %v", err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("manifest format is %q, want %q", clip(m.Format), ManifestFormat)
	}
	want, err := digest.Parse(m.Digest)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "manifest digest: %v", err)
	}
	got, err := m.ComputeDigest()
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, exitcode.Errorf(exitcode.Integrity, "manifest was changed after repro handoff wrote it: its content hashes to %s, but it records %s", got.Hex(), want.Hex())
	}
	if err := m.validate(); err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "manifest: %v", err)
	}
	return &m, nil
}

// validate checks what rendering relies on, so that a manifest read back
// renders the same scripts it was written with, or fails.
func (m *Manifest) validate() error {
	if _, ok := workloads[m.Workload]; !ok {
		return fmt.Errorf("unknown workload %q", clip(m.Workload))
	}
	if m.Target != TargetSlurm && m.Target != TargetKubernetes {
		return fmt.Errorf("unknown target %q", clip(m.Target))
	}
	if len(m.Runs) > maxRuns || len(m.Pins) > 10000 {
		return errors.New("too many runs or pins")
	}
	for _, p := range m.Pins {
		if p.Path != "." {
			if err := checkRelPath(p.Path); err != nil {
				return fmt.Errorf("pin %s: %v", clip(p.Name), err)
			}
		}
		if _, err := digest.Parse(p.SHA256); err != nil {
			return fmt.Errorf("pin %s: %v", clip(p.Name), err)
		}
	}
	return nil
}

// ReadManifest reads BUNDLE/manifest.json (bounded, no symbolic link).
func ReadManifest(bundle string) (*Manifest, error) {
	b, err := safefile.ReadFile(filepath.Join(bundle, ManifestName), MaxManifestBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, exitcode.Errorf(exitcode.Precondition, "%s has no %s: not a handoff bundle (make one with `repro handoff minigo|dlrm --out DIR`)", bundle, ManifestName)
		}
		return nil, exitcode.Errorf(exitcode.Usage, "bundle %s: %v", bundle, err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		// A manifest that does not parse was not written by repro handoff.
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %s: %v", bundle, err)
	}
	return m, nil
}
