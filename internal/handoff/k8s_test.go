package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func decodeStrict(t *testing.T, name string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(must(os.ReadFile(name)), v); err != nil {
		t.Fatalf("%s does not decode into %T: %v", name, v, err)
	}
}

// TestKubernetesManifests decodes the bundle's Kubernetes objects with the
// k8s.io/api types and asserts every security field. No cluster is
// available here; the objects are never written as text.
func TestKubernetesManifests(t *testing.T) {
	for _, nw := range []func(testing.TB) *world{newMiniGoWorld, newDLRMWorld} {
		w := nw(t)
		w.cfg.Volumes.Credentials = &Volume{Path: w.path("volumes", "credentials"), Claim: "registry-token"}
		w.cfg.Kubernetes = &KubernetesConfig{Namespace: "mlperf", CPUs: 32}
		os.MkdirAll(w.path("volumes", "credentials"), 0o700)
		m := w.bundle(t, TargetKubernetes)
		t.Run(m.Workload, func(t *testing.T) {
			var job batchv1.Job
			decodeStrict(t, filepath.Join(w.out, K8sJobFile), &job)
			checkJob(t, m, &job)

			var cm corev1.ConfigMap
			decodeStrict(t, filepath.Join(w.out, K8sConfigMapFile), &cm)
			bundleVol := ""
			for _, v := range job.Spec.Template.Spec.Volumes {
				if v.Name == "bundle" && v.ConfigMap != nil {
					bundleVol = v.ConfigMap.Name
				}
			}
			if cm.Kind != "ConfigMap" || cm.Name != bundleVol || cm.Immutable == nil || !*cm.Immutable {
				t.Errorf("configmap %s kind %s immutable %v", cm.Name, cm.Kind, cm.Immutable)
			}
			for _, f := range []string{PreflightFile, RunFile} {
				if cm.Data[f] != string(must(os.ReadFile(filepath.Join(w.out, f)))) {
					t.Errorf("configmap %s differs from the bundle's", f)
				}
			}

			var np networkingv1.NetworkPolicy
			decodeStrict(t, filepath.Join(w.out, K8sNetworkPolicyFile), &np)
			sel := labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels)
			if !sel.Matches(labels.Set(job.Spec.Template.Labels)) {
				t.Error("the network policy does not select the job's pods")
			}
			if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
				t.Errorf("network policy is not deny-all: %+v", np.Spec)
			}
		})
	}
}

func checkJob(t *testing.T, m *Manifest, job *batchv1.Job) {
	t.Helper()
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "mlperf" {
		t.Errorf("job %s/%s in %q", job.APIVersion, job.Kind, job.Namespace)
	}
	if job.Annotations["repro.dev/manifest-digest"] != m.Digest {
		t.Error("job does not carry the manifest digest")
	}
	s := job.Spec
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 || s.Parallelism == nil || *s.Parallelism != 1 ||
		s.Completions == nil || int(*s.Completions) != len(m.Runs) || s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job spec: backoff %v parallelism %v completions %v mode %v", s.BackoffLimit, s.Parallelism, s.Completions, s.CompletionMode)
	}
	pod := s.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("pod shares host namespaces or restarts")
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}

	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit == nil {
			t.Errorf("emptyDir %s is unbounded", v.Name)
		}
	}
	for _, class := range []string{ClassCheckpoint, ClassSource} {
		if v := vols[class]; v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly {
			t.Errorf("volume %s is not a read-only claim", class)
		}
	}
	if m.Workload == "dlrm" {
		if v := vols[ClassDataset]; v.PersistentVolumeClaim == nil || !v.PersistentVolumeClaim.ReadOnly || v.PersistentVolumeClaim.ClaimName != "repro-dlrm-dataset" {
			t.Errorf("dataset volume %+v", v)
		}
	}
	if v := vols[ClassOutput]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ReadOnly {
		t.Error("the output volume is not a writable claim")
	}
	if v := vols[ClassCredentials]; v.Secret == nil || v.Secret.SecretName != "registry-token" || v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o400 {
		t.Errorf("credentials volume %+v", v)
	}
	claims := map[string]string{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			if other, dup := claims[v.PersistentVolumeClaim.ClaimName]; dup {
				t.Errorf("volumes %s and %s share claim %s", other, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
			claims[v.PersistentVolumeClaim.ClaimName] = v.Name
		}
	}

	containers := append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...)
	if len(pod.InitContainers) != 1 || !strings.Contains(strings.Join(pod.InitContainers[0].Args, " "), "preflight.sh") {
		t.Error("no preflight init container")
	}
	for _, c := range containers {
		if c.Image != m.Image || !strings.Contains(c.Image, "@sha256:") {
			t.Errorf("%s: image %q, want %q", c.Name, c.Image, m.Image)
		}
		sc := c.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged == nil || *sc.Privileged ||
			sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: security context %+v", c.Name, sc)
		}
		gpu := c.Resources.Limits[GPUResource]
		if gpu.Value() != int64(m.GPUs) {
			t.Errorf("%s: GPU limit %s, want %d", c.Name, gpu.String(), m.GPUs)
		}
		if _, ok := c.Resources.Requests[GPUResource]; ok {
			t.Errorf("%s: GPU in requests", c.Name)
		}
		mem, cpu := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceCPU]
		if mem.Value() != m.Node.MinMemoryGiB<<30 || cpu.Value() != 32 {
			t.Errorf("%s: memory %s cpu %s", c.Name, mem.String(), cpu.String())
		}
		writable := map[string]bool{}
		for _, vm := range c.VolumeMounts {
			if !vm.ReadOnly {
				writable[vm.Name] = true
			}
		}
		want := map[string]bool{ClassOutput: true, "work": true, "tmp": true, "shm": true}
		if len(writable) != len(want) {
			t.Errorf("%s: writable mounts %v, want %v", c.Name, writable, want)
		}
		for n := range want {
			if !writable[n] {
				t.Errorf("%s: %s is not writable", c.Name, n)
			}
		}
		for _, e := range c.Env {
			if secretName.MatchString(e.Name) || e.ValueFrom != nil {
				t.Errorf("%s: env %s", c.Name, e.Name)
			}
		}
	}
}
