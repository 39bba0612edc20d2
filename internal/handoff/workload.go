package handoff

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Targets a bundle is written for.
const (
	TargetSlurm      = "slurm"
	TargetKubernetes = "kubernetes"
)

// Slurm container runtimes.
const (
	ContainerPyxis     = "pyxis"
	ContainerApptainer = "apptainer"
	// ContainerPodman runs the container with Podman (Debian packages it,
	// unlike pyxis, enroot and Apptainer), which holds every control of
	// the review on a Slurm node: no network, read-only root, no
	// capabilities, no-new-privileges, a non-root user, bounded
	// processes and named writable mounts.
	ContainerPodman = "podman"
)

// Where says on which machine a check is made.
type Where string

// Places a check is made.
const (
	// Here: by repro handoff, on the machine that writes the bundle.
	Here Where = "here"
	// OnNode: by the bundle's preflight script on the target node, before
	// anything runs.
	OnNode Where = "node"
	// InContainer: by the preflight script inside the workload's image on
	// the target node.
	InContainer Where = "container"
)

// Check is one thing verified for a requirement, and where.
type Check struct {
	Where Where  `json:"where"`
	What  string `json:"what"`
}

// Requirement is one precondition of a workload, stated as data: what is
// checked where, and how an operator satisfies it. The checks made here
// are implemented in checks_*.go, the ones on the node in the preflight
// script; both refer to the requirement by ID.
type Requirement struct {
	ID     string  `json:"id"`
	Title  string  `json:"title"`
	Checks []Check `json:"checks"`
	Remedy string  `json:"remedy"`

	check func(*planner, context.Context) // runs the checks made here
}

// Workload is one handoff workload.
type Workload struct {
	Name string `json:"name"`
	// Benchmark and Ruleset are the MLPerf benchmark and compliance
	// ruleset the returned logs are verified against.
	Benchmark string `json:"benchmark"`
	Ruleset   string `json:"ruleset"`
	// DefaultRuns is the number of result files MLPerf asks for.
	DefaultRuns  int           `json:"default_runs"`
	SourceID     string        `json:"source_id"`
	Requirements []Requirement `json:"requirements"`
	// DefaultCommand is run inside the container from a writable copy of
	// the pinned source; empty when the reference code logs no MLLOG.
	DefaultCommand []string `json:"default_command,omitempty"`
	DefaultLogFile string   `json:"default_log_file,omitempty"`
	// NeedsDataset says whether the dataset volume is always mounted.
	NeedsDataset bool `json:"needs_dataset"`
}

// Catalog ids the workloads pin.
const (
	idMiniGoSource     = "minigo-source-6d89c202"
	idMiniGoBootstrap  = "minigo-bootstrap-checkpoint-0.7"
	idMiniGoTarget     = "minigo-target-model-0.7"
	idDLRMSource       = "dlrm-source-6d75c84d"
	idDLRMCheckpoint   = "dlrm-terabyte-tb00-40m"
	idCriteoDayPrefix  = "criteo-terabyte-day-"
	idDLRMTrainBin     = "dlrm-terabyte-processed-train"
	idDLRMTestBin      = "dlrm-terabyte-processed-test"
	idDLRMFeatureCount = "dlrm-terabyte-day-fea-count"
	criteoDays         = 24
)

var dataClassesRequirement = func(w string) Requirement {
	return Requirement{
		ID:    w + ".data-classes",
		Title: "data classes kept apart",
		Checks: []Check{
			{Here, "the output volume is given and lies outside the dataset, checkpoint, source and credentials volumes (and they outside it)"},
			{Here, "no credential in the image reference, the environment or the command line; credentials only through the credentials volume"},
			{OnNode, "the output volume exists and is writable; the input volumes are readable"},
		},
		Remedy: `set volumes.output to a folder of its own (path, node_path for Slurm, claim for Kubernetes); put any credential in volumes.credentials`,
		check:  (*planner).checkDataClasses,
	}
}

var workloads = map[string]*Workload{
	"minigo": {
		Name:        "minigo",
		Benchmark:   "minigo",
		Ruleset:     "2.1.0",
		DefaultRuns: 10,
		SourceID:    idMiniGoSource,
		Requirements: []Requirement{
			{
				ID:    "minigo.image",
				Title: "container image pinned by digest",
				Checks: []Check{
					{Here, "the image is name@sha256:<digest>; a tag alone is refused"},
					{OnNode, "the container runtime pulls the image by that digest"},
				},
				Remedy: `set "image" to name@sha256:<digest> of an NGC TensorFlow 1 image (22.09-tf1-py3 or later on Hopper)`,
				check:  (*planner).checkImage,
			},
			{
				ID:    "minigo.pro-games",
				Title: "professional-game decision recorded",
				Checks: []Check{
					{Here, `pro_games.decision is "none" (the v0.7+ protocol, the default) or names a source URL, file digests and a license ruling`},
					{OnNode, "included game files match their recorded digests"},
				},
				Remedy: `leave pro_games out (decision "none"), or record the review: source_url, files with sha256, license_ruling, reviewer and date`,
				check:  (*planner).checkProGames,
			},
			{
				ID:    "minigo.source",
				Title: "pinned source tree and flag files",
				Checks: []Check{
					{Here, "tree digest of the tensorflow/minigo checkout equals the catalog pin (commit 6d89c202)"},
					{Here, "each ml_perf/flags/19/*.flags file equals its catalog digest"},
					{OnNode, "tree digest and flag file digests of the source volume"},
				},
				Remedy: "check out tensorflow/minigo at 6d89c202cdceaf449aefc3149ab2110d44f1a6a4 and set volumes.source.path to it",
				check:  (*planner).checkSource,
			},
			{
				ID:    "minigo.gpu-runtime",
				Title: "working GPU runtime",
				Checks: []Check{
					{Here, "gpus and image_cuda are given and a driver floor is on record for that CUDA version"},
					{OnNode, "nvidia-smi answers; driver at or above the floor; at least gpus GPUs; compute capability supported by the image's CUDA"},
					{InContainer, "TensorFlow in the image sees a GPU"},
				},
				Remedy: `set "gpus" (8 for the reference layout: training on GPU 0, self-play on 1-7) and "image_cuda" (e.g. "11.8" for NGC 22.09)`,
				check:  (*planner).checkGPURuntime,
			},
			{
				ID:    "minigo.environment",
				Title: "environment preflight",
				Checks: []Check{
					{Here, "node.min_disk_gib and node.min_memory_gib are given (no published figure exists)"},
					{Here, "the bootstrap checkpoint and the target model are in the checkpoint volume and match the digests a reviewer recorded"},
					{OnNode, "free disk and memory at or above the floors; bootstrap and target digests"},
				},
				Remedy: "download gs://minigo-pub/ml_perf/0.7/checkpoint.tar.gz and target.*, freeze the target, record their SHA-256 under models, and set node.min_disk_gib and node.min_memory_gib",
				check:  (*planner).checkMiniGoEnvironment,
			},
			{
				ID:    "minigo.entrypoint",
				Title: "entry point that writes MLLOG",
				Checks: []Check{
					{Here, "command names the entry point inside the image; the reference ml_perf scripts log no MLLOG lines"},
				},
				Remedy: `set "command" to an implementation that logs MLLOG (e.g. NVIDIA's v2.1 run_and_time.sh) and "log_file" if it does not log to standard output`,
				check:  (*planner).checkEntrypoint,
			},
			dataClassesRequirement("minigo"),
		},
		NeedsDataset: false,
	},
	"dlrm": {
		Name:        "dlrm",
		Benchmark:   "dlrm",
		Ruleset:     "2.1.0",
		DefaultRuns: 5,
		SourceID:    idDLRMSource,
		// bench/run_and_time.sh with its two traps fixed: it does not pass
		// --use-gpu, and it leaves the seed at 123 in every run.
		DefaultCommand: []string{"bash", "bench/run_and_time.sh",
			"--use-gpu --numpy-rand-seed={seed} --raw-data-file=/data/day --processed-data-file=/data/terabyte_processed.npz"},
		DefaultLogFile: "dlrm.log",
		Requirements: []Requirement{
			{
				ID:    "dlrm.image",
				Title: "container image pinned by digest",
				Checks: []Check{
					{Here, "the image is name@sha256:<digest>; a tag alone is refused"},
					{OnNode, "the container runtime pulls the image by that digest"},
				},
				Remedy: `set "image" to name@sha256:<digest> of the prepared PyTorch image`,
				check:  (*planner).checkImage,
			},
			{
				ID:    "dlrm.checkpoint",
				Title: "official checkpoint",
				Checks: []Check{
					{Here, "tb00_40M.pt has the published MD5; its SHA-256 is recorded at first verification and any later file that differs is refused"},
					{OnNode, "SHA-256 of the checkpoint in the checkpoint volume"},
				},
				Remedy: "download https://dlrm.s3-us-west-1.amazonaws.com/models/tb00_40M.pt into the checkpoint volume and set volumes.checkpoint.path",
				check:  (*planner).checkDLRMCheckpoint,
			},
			{
				ID:    "dlrm.dataset",
				Title: "Criteo Terabyte day files",
				Checks: []Check{
					{Here, "day_0 … day_23 are present with their published sizes (du KiB) and MD5s"},
					{OnNode, "SHA-256 of each day file, recorded here after the MD5 matched"},
				},
				Remedy: "put the unzipped day_0 … day_23 in the dataset volume and set volumes.dataset.path",
				check:  (*planner).checkCriteo,
			},
			{
				ID:    "dlrm.license",
				Title: "Criteo license acceptance recorded",
				Checks: []Check{
					{Here, "criteo_license names the license (CC BY-NC-SA 4.0), who accepted it and when"},
				},
				Remedy: `record criteo_license: {"license": "CC BY-NC-SA 4.0", "accepted_by": NAME, "date": YYYY-MM-DD, "terms": URL}`,
				check:  (*planner).checkCriteoLicense,
			},
			{
				ID:    "dlrm.preprocessed",
				Title: "preprocessed binaries present",
				Checks: []Check{
					{Here, "terabyte_processed_train.bin and terabyte_processed_test.bin have the sizes that follow from the published row counts, and day_fea_count.npz is present; otherwise the job would preprocess silently inside the timed run"},
					{OnNode, "SHA-256 of each binary, recorded here"},
				},
				Remedy: "run dlrm's preprocessing once, outside the timed run (dlrm_s_pytorch.py --data-set=terabyte --memory-map --mlperf-bin-loader), and put its outputs next to the day files",
				check:  (*planner).checkPreprocessed,
			},
			{
				ID:    "dlrm.runtime",
				Title: "Python runtime prepared",
				Checks: []Check{
					{Here, "runtime.python, runtime.torch and runtime.mlperf_logging are given; mlperf_logging is a release or a commit, not a branch"},
					{InContainer, "the interpreter, torch and mlperf_logging versions in the image equal them; torch sees a GPU and has kernels for its architecture"},
				},
				Remedy: `set runtime: {"python": X, "torch": Y, "mlperf_logging": RELEASE-OR-COMMIT} as installed in the image`,
				check:  (*planner).checkRuntime,
			},
			{
				ID:    "dlrm.gpu-runtime",
				Title: "working GPU runtime",
				Checks: []Check{
					{Here, "gpus and image_cuda are given and a driver floor is on record for that CUDA version"},
					{OnNode, "nvidia-smi answers; driver at or above the floor; at least gpus GPUs; compute capability supported by the image's CUDA"},
				},
				Remedy: `set "gpus" and "image_cuda" (the CUDA version of the image)`,
				check:  (*planner).checkGPURuntime,
			},
			{
				ID:    "dlrm.environment",
				Title: "environment preflight",
				Checks: []Check{
					{Here, "node.min_disk_gib and node.min_memory_gib are given (no published figure exists)"},
					{OnNode, "free disk and memory at or above the floors"},
				},
				Remedy: "set node.min_disk_gib and node.min_memory_gib from the reviewed sizing of the target node",
				check:  (*planner).checkDLRMEnvironment,
			},
			{
				ID:    "dlrm.source",
				Title: "pinned source tree",
				Checks: []Check{
					{Here, "tree digest of the facebookresearch/dlrm checkout equals the catalog pin (commit 6d75c84d, branch mlperf)"},
					{OnNode, "tree digest of the source volume"},
				},
				Remedy: "check out facebookresearch/dlrm at 6d75c84d834380a365e2f03d4838bee464157516 and set volumes.source.path to it",
				check:  (*planner).checkSource,
			},
			dataClassesRequirement("dlrm"),
		},
		NeedsDataset: true,
	},
}

// Lookup returns the workload with the given name.
func Lookup(name string) (*Workload, error) {
	w, ok := workloads[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (want one of %v)", name, WorkloadNames())
	}
	return w, nil
}

// WorkloadNames lists the workloads.
func WorkloadNames() []string { return slices.Sorted(maps.Keys(workloads)) }
