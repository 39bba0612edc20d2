package edm

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
)

// Sampler holds the settings of EDM's sampler (Algorithm 2 of the paper,
// `edm_sampler` in EDM's generate.py). SMax is +Inf when stochasticity is
// not bounded above.
type Sampler struct {
	NumSteps int     `json:"num_steps"`
	SigmaMin float64 `json:"sigma_min"`
	SigmaMax float64 `json:"sigma_max"`
	Rho      float64 `json:"rho"`
	SChurn   float64 `json:"S_churn"`
	SMin     float64 `json:"S_min"`
	SMax     float64 `json:"-"`
	SNoise   float64 `json:"S_noise"`
}

// MarshalJSON writes the settings under EDM's names, S_max as "inf" when
// unbounded, and the NFE.
func (s Sampler) MarshalJSON() ([]byte, error) {
	m := s.kwargs()
	m["nfe"] = s.NFE()
	return json.Marshal(m)
}

// NFE returns the number of network evaluations per image: Heun's method
// evaluates twice per step except on the last one.
func (s Sampler) NFE() int { return 2*s.NumSteps - 1 }

// Stochastic reports whether the sampler adds noise during sampling.
func (s Sampler) Stochastic() bool { return s.SChurn > 0 }

// kwargs returns the settings as the keyword arguments of edm_sampler, with
// an unbounded S_max spelled "inf" (JSON has no infinity).
func (s Sampler) kwargs() map[string]any {
	smax := any(s.SMax)
	if math.IsInf(s.SMax, 1) {
		smax = "inf"
	}
	return map[string]any{
		"num_steps": s.NumSteps, "sigma_min": s.SigmaMin, "sigma_max": s.SigmaMax, "rho": s.Rho,
		"S_churn": s.SChurn, "S_min": s.SMin, "S_max": smax, "S_noise": s.SNoise,
	}
}

// deterministic returns EDM's default sampler (generate.py defaults) with
// the given number of steps.
func deterministic(steps int) Sampler {
	return Sampler{NumSteps: steps, SigmaMin: 0.002, SigmaMax: 80, Rho: 7, SChurn: 0, SMin: 0, SMax: math.Inf(1), SNoise: 1}
}

// Network is what the checkpoint's `ema` network must look like.
type Network struct {
	Resolution int `json:"img_resolution"`
	Channels   int `json:"img_channels"`
	LabelDim   int `json:"label_dim"`
}

// Model is one EDM model whose FID repro reproduces.
type Model struct {
	// ID is the model id, equal to the catalog id of its checkpoint.
	ID         string `json:"id"`
	Dataset    string `json:"dataset"`
	Checkpoint string `json:"checkpoint"`
	// Reference is the catalog id of the FID reference statistics.
	Reference string `json:"fid_reference"`
	// Detector is the catalog id of the feature detector.
	Detector   string  `json:"detector"`
	FeatureDim int     `json:"feature_dim"`
	Network    Network `json:"network"`
	Sampler    Sampler `json:"sampler"`
	// PaperFID is the figure EDM reports (minimum of three runs of 50,000
	// images each, seeds 0-49999, 50000-99999, 100000-149999).
	PaperFID float64 `json:"paper_fid"`
	// MinFreeGPUBytes is the free GPU memory the preflight requires: a
	// conservative figure for sampling at batch 64 plus the detector.
	MinFreeGPUBytes int64 `json:"min_free_gpu_bytes"`
	// Source says where the settings and the figure come from.
	Source string `json:"source"`
}

// EDM's release the model table was taken from.
const (
	EDMRepository = "https://github.com/NVlabs/edm"
	EDMCommit     = "008a4e5316c8e3bfe61a62f874bddba254295afb"
)

// PaperImages is the number of generated images of the paper's FID protocol.
const PaperImages = 50000

const gib = int64(1) << 30

var models = []Model{
	{
		ID: "edm-cifar10-32x32-cond-vp", Dataset: "CIFAR-10 32x32, class-conditional",
		Checkpoint: "edm-cifar10-32x32-cond-vp", Reference: "fid-ref-cifar10-32x32",
		Detector: "inception-2015-12-05", FeatureDim: 2048,
		Network:  Network{Resolution: 32, Channels: 3, LabelDim: 10},
		Sampler:  deterministic(18),
		PaperFID: 1.79, MinFreeGPUBytes: 4 * gib,
		Source: "NVlabs/edm@008a4e5 README.md (18 steps, NFE 35) and example.py (FID 1.79)",
	},
	{
		ID: "edm-cifar10-32x32-uncond-vp", Dataset: "CIFAR-10 32x32, unconditional",
		Checkpoint: "edm-cifar10-32x32-uncond-vp", Reference: "fid-ref-cifar10-32x32",
		Detector: "inception-2015-12-05", FeatureDim: 2048,
		Network:  Network{Resolution: 32, Channels: 3, LabelDim: 0},
		Sampler:  deterministic(18),
		PaperFID: 1.97, MinFreeGPUBytes: 4 * gib,
		Source: "NVlabs/edm@008a4e5 README.md (abstract: FID 1.97 unconditional, 35 NFE)",
	},
	{
		ID: "edm-ffhq-64x64-uncond-vp", Dataset: "FFHQ 64x64, unconditional",
		Checkpoint: "edm-ffhq-64x64-uncond-vp", Reference: "fid-ref-ffhq-64x64",
		Detector: "inception-2015-12-05", FeatureDim: 2048,
		Network:  Network{Resolution: 64, Channels: 3, LabelDim: 0},
		Sampler:  deterministic(40),
		PaperFID: 2.39, MinFreeGPUBytes: 6 * gib,
		Source: "NVlabs/edm@008a4e5 README.md (40 steps, NFE 79) and example.py (FID 2.39)",
	},
	{
		ID: "edm-afhqv2-64x64-uncond-vp", Dataset: "AFHQv2 64x64, unconditional",
		Checkpoint: "edm-afhqv2-64x64-uncond-vp", Reference: "fid-ref-afhqv2-64x64",
		Detector: "inception-2015-12-05", FeatureDim: 2048,
		Network:  Network{Resolution: 64, Channels: 3, LabelDim: 0},
		Sampler:  deterministic(40),
		PaperFID: 1.96, MinFreeGPUBytes: 6 * gib,
		Source: "NVlabs/edm@008a4e5 README.md (40 steps, NFE 79) and example.py (FID 1.96)",
	},
	{
		ID: "edm-imagenet-64x64-cond-adm", Dataset: "ImageNet 64x64, class-conditional",
		Checkpoint: "edm-imagenet-64x64-cond-adm", Reference: "fid-ref-imagenet-64x64",
		Detector: "inception-2015-12-05", FeatureDim: 2048,
		Network: Network{Resolution: 64, Channels: 3, LabelDim: 1000},
		Sampler: Sampler{NumSteps: 256, SigmaMin: 0.002, SigmaMax: 80, Rho: 7,
			SChurn: 40, SMin: 0.05, SMax: 50, SNoise: 1.003},
		PaperFID: 1.36, MinFreeGPUBytes: 12 * gib,
		Source: "NVlabs/edm@008a4e5 README.md (256 steps, S_churn 40, S_min 0.05, S_max 50, S_noise 1.003, NFE 511) and example.py (FID 1.36)",
	},
}

// Models returns the model table sorted by id.
func Models() []Model {
	out := append([]Model(nil), models...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LookupModel returns the model with the given id; an unknown id is an
// exitcode.Usage error listing the known ones.
func LookupModel(id string) (Model, error) {
	for _, m := range models {
		if m.ID == id {
			return m, nil
		}
	}
	var ids []string
	for _, m := range Models() {
		ids = append(ids, m.ID)
	}
	return Model{}, exitcode.Errorf(exitcode.Usage, "unknown EDM model %q: known models are %s", id, strings.Join(ids, ", "))
}

// String describes the sampler in one line.
func (s Sampler) String() string {
	if !s.Stochastic() {
		return fmt.Sprintf("deterministic Heun, %d steps (NFE %d), sigma %g..%g, rho %g", s.NumSteps, s.NFE(), s.SigmaMin, s.SigmaMax, s.Rho)
	}
	return fmt.Sprintf("stochastic Heun, %d steps (NFE %d), sigma %g..%g, rho %g, S_churn %g, S_min %g, S_max %g, S_noise %g",
		s.NumSteps, s.NFE(), s.SigmaMin, s.SigmaMax, s.Rho, s.SChurn, s.SMin, s.SMax, s.SNoise)
}
