package handoff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/digest"
)

// Bundle file names.
const (
	PreflightFile = "preflight.sh"
	RunFile       = "run.sh"
	ReadmeFile    = "README.md"
	SbatchFile    = "slurm/job.sbatch"
)

// bundleFiles lists the files of a bundle for a target, manifest first.
func bundleFiles(target string) []string {
	files := []string{ManifestName, PreflightFile, RunFile, ReadmeFile}
	if target == TargetSlurm {
		return append(files, SbatchFile)
	}
	return append(files, K8sJobFile, K8sConfigMapFile, K8sNetworkPolicyFile)
}

// fileMode is the permission a bundle file is written with.
func fileMode(name string) uint32 {
	if strings.HasSuffix(name, ".sh") || strings.HasSuffix(name, ".sbatch") {
		return 0o755
	}
	return 0o644
}

type envVar struct{ Name, Value string }

type renderData struct {
	M    *Manifest
	Pins []Pin
	// Inputs are the classes of the mounted input volumes.
	Inputs  []string
	NodeDir map[string]string
	Env     []envVar

	CUDA, DriverMin, DriverFC, CCMin, CCBelow, FloorText string

	Python, FrameworkReq                                  string
	RuntimePython, RuntimeTF, RuntimeTorch, RuntimeMLPerf string

	ImageEnroot, ImageApptainer string
	Mounts                      string
	PreflightSHA256, RunSHA256  string
}

func newRenderData(m *Manifest) *renderData {
	d := &renderData{M: m, NodeDir: map[string]string{}}
	for _, c := range []string{ClassDataset, ClassCheckpoint, ClassSource, ClassOutput, ClassCredentials} {
		d.NodeDir[c] = ""
	}
	var mounts []string
	for _, v := range m.Volumes {
		d.NodeDir[v.Class] = v.NodePath
		if v.Class != ClassOutput && v.Class != ClassCredentials {
			d.Inputs = append(d.Inputs, v.Class)
		}
		if v.Class == ClassOutput {
			continue // the job mounts its own run folder at /results
		}
		mt := v.NodePath + ":" + v.Mount
		if v.ReadOnly {
			mt += ":ro"
		}
		mounts = append(mounts, mt)
	}
	d.Mounts = strings.Join(mounts, ",")
	d.Pins = m.Pins
	var keys []string
	for k := range m.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Env = append(d.Env, envVar{k, m.Env[k]})
	}
	if f := m.DriverFloor; f != nil {
		d.CUDA, d.DriverMin, d.DriverFC, d.CCMin, d.CCBelow = f.CUDA, f.Min, strings.Join(f.ForwardCompat, " "), f.MinCC, f.BelowCC
		d.FloorText = f.describe()
	}
	if r := m.Runtime; r != nil {
		d.RuntimePython, d.RuntimeTF, d.RuntimeTorch, d.RuntimeMLPerf = r.Python, r.TensorFlow, r.Torch, r.MLPerfLogging
	}
	switch m.Workload {
	case "minigo":
		d.Python, d.FrameworkReq = "python3", "minigo.gpu-runtime"
	case "dlrm":
		// bench/run_and_time.sh calls "python", so that is what is probed.
		d.Python, d.FrameworkReq = "python", "dlrm.runtime"
	}
	if ref, err := ParseImageRef(m.Image); err == nil {
		d.ImageEnroot, d.ImageApptainer = ref.Enroot(), ref.Apptainer()
	} else {
		d.ImageEnroot, d.ImageApptainer = "<no image>", "<no image>"
	}
	return d
}

// Render returns every bundle file but the manifest, rendered from m
// alone. m must be sealed. The same manifest always renders the same
// bytes: that is how a bundle is verified.
func Render(m *Manifest) (map[string][]byte, error) {
	if m.Digest == "" {
		return nil, fmt.Errorf("render: manifest is not sealed")
	}
	if _, ok := workloads[m.Workload]; !ok {
		return nil, fmt.Errorf("render: unknown workload %q", m.Workload)
	}
	d := newRenderData(m)
	out := map[string][]byte{}
	var err error
	if out[PreflightFile], err = execScript("preflight.sh.tmpl", m.Workload, d); err != nil {
		return nil, err
	}
	if out[RunFile], err = execScript("run.sh.tmpl", "", d); err != nil {
		return nil, err
	}
	d.PreflightSHA256 = digest.Of(out[PreflightFile]).Hex()
	d.RunSHA256 = digest.Of(out[RunFile]).Hex()
	switch m.Target {
	case TargetSlurm:
		if out[SbatchFile], err = execScript("job.sbatch.tmpl", "", d); err != nil {
			return nil, err
		}
	case TargetKubernetes:
		if out[K8sJobFile], err = toYAML(KubernetesJob(m)); err != nil {
			return nil, err
		}
		if out[K8sConfigMapFile], err = toYAML(KubernetesConfigMap(m, out[PreflightFile], out[RunFile])); err != nil {
			return nil, err
		}
		if out[K8sNetworkPolicyFile], err = toYAML(KubernetesNetworkPolicy(m)); err != nil {
			return nil, err
		}
	}
	if out[ReadmeFile], err = renderReadme(m, d); err != nil {
		return nil, err
	}
	return out, nil
}
