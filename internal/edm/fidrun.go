package edm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/store"
	"golang.org/x/sys/unix"
)

// SourceID is the catalog id of the pinned EDM source tree.
const SourceID = "edm-source"

// DefaultBatch is EDM's default batch size (generate.py and fid.py).
const DefaultBatch = 64

// FIDOptions configure RunFID.
type FIDOptions struct {
	// Model is the model id (see Models).
	Model string
	// Seeds are the seeds of the generated images; nil means 0-49999, the
	// paper's first run.
	Seeds []int64
	// Batch is the largest batch; 0 means DefaultBatch.
	Batch int
	// Safe loads the network from safetensors converted in this process
	// from the verified checkpoint, into the class rebuilt from the pinned
	// EDM source, and the detector likewise: nothing is unpickled.
	Safe bool
	// SourceDir is the user's checkout of the EDM source tree; it is
	// checked against the pin of the catalog entry edm-source.
	SourceDir string
	// Python is the interpreter with PyTorch and CUDA; "" means
	// DefaultPython.
	Python string
	// RunDir receives features.npy and result.json; it is created and
	// must not exist or be empty.
	RunDir string
	// Log receives the runtime's progress and messages; nil discards them.
	Log io.Writer

	// test is set only by this package's tests.
	test *testHooks
}

// testHooks adapt a run to tiny fixture networks on a machine without a
// GPU. They are reachable only from this package's tests: `repro edm fid`
// always runs the GPU preflight and hands over sealed descriptors.
type testHooks struct {
	cpu        bool     // run on the CPU, without nvidia-smi or the CUDA check
	featureDim int      // detector feature dimension instead of the model's
	sampler    *Sampler // sampler settings instead of the model's
	// replace hands the runtime this descriptor instead of the sealed copy
	// of the named asset; allowUnsealed tells the runtime not to require
	// seals on replaced descriptors.
	replace       map[string]*os.File
	allowUnsealed bool
}

// AssetRecord names the bytes a run used.
type AssetRecord struct {
	ID     string        `json:"id"`
	Kind   catalog.Kind  `json:"kind"`
	SHA256 digest.SHA256 `json:"sha256"`
	Size   int64         `json:"size"`
}

// FIDResult is what a run measured and what it ran on; RunFID writes it to
// RunDir/result.json.
type FIDResult struct {
	Model      string        `json:"model"`
	Dataset    string        `json:"dataset"`
	FID        float64       `json:"fid"`
	PaperFID   float64       `json:"paper_fid"`
	Images     int           `json:"images"`
	Seeds      string        `json:"seeds"`
	Comparable bool          `json:"comparable"`
	Note       string        `json:"note,omitempty"`
	Sampler    Sampler       `json:"sampler"`
	Batch      int           `json:"batch"`
	Safe       bool          `json:"safe"`
	Assets     []AssetRecord `json:"assets"`
	Source     struct {
		ID         string        `json:"id"`
		TreeDigest digest.SHA256 `json:"tree_digest"`
		Commit     string        `json:"commit,omitempty"`
	} `json:"source"`
	RuntimeDigest digest.SHA256   `json:"runtime_tree_digest"`
	Converted     []ConvertRecord `json:"converted,omitempty"`
	GPUs          []GPU           `json:"gpus,omitempty"`
	Torch         *TorchInfo      `json:"torch,omitempty"`
	Runtime       json.RawMessage `json:"runtime"`
	Features      struct {
		Path   string        `json:"path"`
		SHA256 digest.SHA256 `json:"sha256"`
		Size   int64         `json:"size"`
	} `json:"features"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// fidAssets are the catalog entries a model needs.
type fidAssets struct {
	checkpoint, detector, reference, source catalog.Entry
}

// requirePinned looks up the entries of m and fails with an
// exitcode.Precondition error unless every one is pinned; the message names
// the first unpinned entry with the reviewer's instructions, then the rest.
func requirePinned(cat *catalog.Catalog, m Model) (fidAssets, error) {
	var a fidAssets
	var unpinned []string
	var first error
	for _, x := range []struct {
		id string
		e  *catalog.Entry
	}{{m.Checkpoint, &a.checkpoint}, {m.Detector, &a.detector}, {m.Reference, &a.reference}, {SourceID, &a.source}} {
		e, err := cat.Lookup(x.id)
		if err != nil {
			return a, exitcode.Errorf(exitcode.Precondition, "model %s needs catalog entry %s, which this catalog lacks", m.ID, x.id)
		}
		*x.e = e
		if err := e.RequirePinned(); err != nil {
			unpinned = append(unpinned, x.id)
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		if len(unpinned) > 1 {
			first = exitcode.New(exitcode.Precondition, fmt.Errorf("%w (unpinned as well: %s)", first, strings.Join(unpinned[1:], ", ")))
		}
		return a, first
	}
	if a.source.Kind != catalog.SourceTree || a.source.TreeDigest == nil {
		return a, exitcode.Errorf(exitcode.Precondition, "catalog entry %s is not a pinned source tree", SourceID)
	}
	return a, nil
}

// RunFID reproduces one FID figure: preflight, generation and features in
// the trusted runtime, statistics and distance in Go.
//
// Before the runtime starts, in this order: the model's checkpoint,
// detector, reference and the EDM source must be pinned in st's catalog
// (else exitcode.Precondition), the source folder must exist, nvidia-smi
// must list a GPU, the three assets must be in the store and match their
// pins (exitcode.Precondition when missing, exitcode.Integrity on a
// mismatch; they are copied into sealed memory files while hashed), the
// reference statistics must parse, and the runtime and the copied source
// tree must match their digests (exitcode.Integrity). Python then starts
// twice: a PyTorch check (CUDA available, enough free memory) and the run.
func RunFID(ctx context.Context, st *store.Store, opts FIDOptions) (*FIDResult, error) {
	r, err := prepareFID(ctx, st, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	raw, err := r.rt.run(ctx, "fid", r.plan, r.files)
	if err != nil {
		return nil, err
	}
	res := r.res
	res.Runtime = raw
	stats, fsum, fsize, err := readFeaturesFile(r.featuresPath, res.Images, r.model.FeatureDim)
	if err != nil {
		return nil, err
	}
	res.Features.Path, res.Features.SHA256, res.Features.Size = r.featuresPath, fsum, fsize
	if res.FID, err = FrechetDistance(stats, r.ref); err != nil {
		return nil, err
	}
	th := r.hooks
	res.Comparable = res.Images == PaperImages && !th.cpu && th.sampler == nil && th.featureDim == 0
	if res.Images != PaperImages {
		res.Note = fmt.Sprintf("%d images; the paper's protocol uses %d (FID depends strongly on the number of images), the minimum of three runs with seeds 0-49999, 50000-99999 and 100000-149999", res.Images, PaperImages)
	}
	res.Finished = time.Now().UTC()
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(r.runDir, "result.json"), append(b, '\n'), 0o600); err != nil {
		return nil, err
	}
	return res, nil
}

// fidRun is a prepared run: every check passed, the runtime is in place,
// the descriptors are open and the plan names them.
type fidRun struct {
	model        Model
	hooks        *testHooks
	res          *FIDResult
	ref          Stats
	rt           *runtimeEnv
	plan         map[string]any
	files        []*os.File
	runDir       string
	featuresPath string
	closers      []func()
}

func (r *fidRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// prepareFID does every check of RunFID, in its order, up to and
// including the PyTorch preflight.
func prepareFID(ctx context.Context, st *store.Store, opts FIDOptions) (_ *fidRun, err error) {
	started := time.Now().UTC()
	m, err := LookupModel(opts.Model)
	if err != nil {
		return nil, err
	}
	th := opts.test
	if th == nil {
		th = &testHooks{}
	}
	if th.featureDim > 0 {
		m.FeatureDim = th.featureDim
	}
	if th.sampler != nil {
		m.Sampler = *th.sampler
	}
	seeds := opts.Seeds
	if seeds == nil {
		seeds = make([]int64, PaperImages)
		for i := range seeds {
			seeds[i] = int64(i)
		}
	}
	if len(seeds) < 2 {
		return nil, exitcode.Errorf(exitcode.Usage, "FID needs at least 2 images; give more seeds")
	}
	batch := opts.Batch
	if batch == 0 {
		batch = DefaultBatch
	}
	if batch < 1 || batch > 4096 {
		return nil, exitcode.Errorf(exitcode.Usage, "batch %d out of range 1-4096", batch)
	}
	if opts.RunDir == "" {
		return nil, errors.New("edm: RunFID needs a RunDir")
	}

	assets, err := requirePinned(st.Catalog(), m)
	if err != nil {
		return nil, err
	}
	if err := checkSourceDir(opts.SourceDir); err != nil {
		return nil, err
	}
	if _, err := checkPython(opts.Python); err != nil {
		return nil, err
	}
	r := &fidRun{model: m, hooks: th, runDir: opts.RunDir}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	r.res = &FIDResult{Model: m.ID, Dataset: m.Dataset, PaperFID: m.PaperFID, Images: len(seeds),
		Seeds: formatSeeds(seeds), Sampler: m.Sampler, Batch: batch, Safe: opts.Safe, Started: started}
	if !th.cpu {
		if r.res.GPUs, err = QueryGPUs(ctx); err != nil {
			return nil, err
		}
	}

	// Verified bytes: sealed copies, hashed while copied.
	open := func(e catalog.Entry) (*store.Sealed, error) {
		s, err := st.OpenSealed(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, func() { s.Close() })
		r.res.Assets = append(r.res.Assets, AssetRecord{ID: e.ID, Kind: e.Kind, SHA256: s.SHA256, Size: s.Size})
		return s, nil
	}
	ckpt, err := open(assets.checkpoint)
	if err != nil {
		return nil, err
	}
	det, err := open(assets.detector)
	if err != nil {
		return nil, err
	}
	refFile, err := open(assets.reference)
	if err != nil {
		return nil, err
	}
	if r.ref, err = ReadReference(refFile.ReaderAt(), refFile.Size, m.FeatureDim); err != nil {
		return nil, exitcode.New(exitcode.Integrity, fmt.Errorf("asset %s: %w", assets.reference.ID, err))
	}

	// The plan and the descriptors it names (3, 4, ... in order).
	hand := func(f *os.File) int {
		r.files = append(r.files, f)
		return 2 + len(r.files)
	}
	pickled := func(what string, s *store.Sealed) map[string]any {
		spec := map[string]any{"what": what, "format": "pickle", "size": s.Size, "sha256": s.SHA256.Hex(), "require_sealed": true}
		f := s.File
		if rf, ok := th.replace[s.ID]; ok {
			f = rf
			spec["require_sealed"] = !th.allowUnsealed
		}
		spec["fd"] = hand(f)
		return spec
	}
	var netSpec, detSpec map[string]any
	if opts.Safe {
		conv, err := convertForRuntime(ckpt, det, assets, st.Catalog())
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, conv.close)
		r.res.Converted = conv.records
		netSpec, detSpec = conv.specs(hand)
	} else {
		netSpec = pickled("checkpoint "+ckpt.ID, ckpt)
		netSpec["key"] = "ema"
		detSpec = pickled("detector "+det.ID, det)
	}
	netSpec["expect"] = map[string]int{"img_resolution": m.Network.Resolution, "img_channels": m.Network.Channels, "label_dim": m.Network.LabelDim}

	if r.rt, err = prepareRuntime(opts.Python, opts.SourceDir, *assets.source.TreeDigest, opts.Log); err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func() { r.rt.close() })
	r.res.Source.ID, r.res.Source.TreeDigest, r.res.Source.Commit = SourceID, r.rt.treeDigest, assets.source.Facts["commit"]
	r.res.RuntimeDigest = RuntimeTreeDigest

	if err := prepareRunDir(opts.RunDir); err != nil {
		return nil, err
	}
	r.featuresPath = filepath.Join(opts.RunDir, "features.npy")

	device := "cuda"
	if th.cpu {
		device = "cpu"
	} else {
		ti, err := r.rt.torchPreflight(ctx, m.MinFreeGPUBytes)
		if err != nil {
			return nil, err
		}
		r.res.Torch = &ti
	}
	r.plan = map[string]any{
		"version": 1, "device": device, "allow_cpu": th.cpu,
		"network": netSpec, "detector": detSpec, "feature_dim": m.FeatureDim,
		"sampler": m.Sampler.kwargs(), "seeds": append([]int64(nil), seeds...), "batch": batch,
		"features_path": r.featuresPath,
	}
	return r, nil
}

// prepareRunDir creates dir, or accepts it when it exists and is empty.
func prepareRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return exitcode.Errorf(exitcode.Precondition, "cannot create run folder %s: %v", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return exitcode.Errorf(exitcode.Precondition, "run folder %s: %v", dir, err)
	}
	if len(ents) > 0 {
		return exitcode.Errorf(exitcode.Usage, "run folder %s is not empty: give a new one", dir)
	}
	return nil
}

// readFeaturesFile reads the runtime's features (untrusted) and hashes the
// bytes it read. Anything malformed is an exitcode.Integrity error.
func readFeaturesFile(path string, n, dim int) (Stats, digest.SHA256, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return Stats{}, digest.SHA256{}, 0, exitcode.Errorf(exitcode.Integrity, "the EDM runtime wrote no features: %v", err)
	}
	defer f.Close()
	hr := digest.NewReader(f)
	st, err := ReadFeatures(hr, n, dim)
	if err != nil {
		return Stats{}, digest.SHA256{}, 0, exitcode.New(exitcode.Integrity, err)
	}
	sum, size := hr.Sum()
	return st, sum, size, nil
}

// formatSeeds writes seeds in EDM's notation, folding runs into ranges.
func formatSeeds(seeds []int64) string {
	var b strings.Builder
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", seeds[i], seeds[j])
		} else {
			fmt.Fprintf(&b, "%d", seeds[i])
		}
		i = j + 1
	}
	return b.String()
}

// Summary is the one-line human report of a result.
func (r *FIDResult) Summary() string {
	s := fmt.Sprintf("%s: FID %.4f over %d images (paper: %.2f, %+.2f)", r.Model, r.FID, r.Images, r.PaperFID, r.FID-r.PaperFID)
	if !r.Comparable {
		s += "; not comparable with the paper's figure"
	}
	return s
}
