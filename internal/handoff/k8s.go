package handoff

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Kubernetes objects of a bundle are built from the k8s.io/api types
// and serialised with sigs.k8s.io/yaml, never written as text, so that
// they are well-formed and their security fields can be asserted by
// decoding them back into the same types.

// GPUResource is the extended resource the NVIDIA device plugin serves.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Bundle file names of the Kubernetes objects.
const (
	K8sJobFile           = "kubernetes/job.yaml"
	K8sConfigMapFile     = "kubernetes/configmap.yaml"
	K8sNetworkPolicyFile = "kubernetes/networkpolicy.yaml"
)

func k8sName(m *Manifest) string { return "repro-" + m.Workload + "-" + m.ShortDigest() }

func k8sLabels(m *Manifest) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "repro-handoff",
		"app.kubernetes.io/managed-by": "repro",
		"repro.dev/workload":           m.Workload,
		"repro.dev/manifest":           m.ShortDigest(),
	}
}

func ptr[T any](v T) *T { return &v }

// k8sResultsDir is where one bundle's results go inside the output volume.
func k8sResultsDir(m *Manifest) string { return mounts[ClassOutput] + "/" + k8sName(m) }

// KubernetesJob builds the Job: one Indexed completion per run, one at a
// time, never retried (a retried run would repeat its seed). Each pod runs
// the preflight as an init container in the workload image, then the run.
func KubernetesJob(m *Manifest) *batchv1.Job {
	name := k8sName(m)
	labels := k8sLabels(m)
	uid := m.Kubernetes.RunAsUser

	containerSC := &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(uid),
		RunAsGroup:               ptr(uid),
		ReadOnlyRootFilesystem:   ptr(true),
		AllowPrivilegeEscalation: ptr(false),
		Privileged:               ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}

	var volumes []corev1.Volume
	var mountsList []corev1.VolumeMount
	for _, v := range m.Volumes {
		vol := corev1.Volume{Name: v.Class}
		if v.Class == ClassCredentials {
			vol.VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: v.Claim, DefaultMode: ptr(int32(0o400))}}
		} else {
			vol.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim, ReadOnly: v.ReadOnly}}
		}
		volumes = append(volumes, vol)
		mountsList = append(mountsList, corev1.VolumeMount{Name: v.Class, MountPath: v.Mount, ReadOnly: v.ReadOnly})
	}
	gib := func(n int64) *resource.Quantity { return ptr(resource.MustParse(fmt.Sprintf("%dGi", n))) }
	volumes = append(volumes,
		corev1.Volume{Name: "bundle", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, DefaultMode: ptr(int32(0o555))}}},
		corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gib(m.Kubernetes.WorkGiB)}}},
		corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gib(1)}}},
		corev1.Volume{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: gib(m.Kubernetes.ShmGiB)}}},
	)
	mountsList = append(mountsList,
		corev1.VolumeMount{Name: "bundle", MountPath: "/bundle", ReadOnly: true},
		corev1.VolumeMount{Name: "work", MountPath: "/work"},
		corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
		corev1.VolumeMount{Name: "shm", MountPath: "/dev/shm"},
	)

	limits := corev1.ResourceList{
		GPUResource:                     *resource.NewQuantity(int64(m.GPUs), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *gib(m.Kubernetes.WorkGiB + 1),
	}
	if m.Node.MinMemoryGiB > 0 {
		limits[corev1.ResourceMemory] = *gib(m.Node.MinMemoryGiB)
	}
	if m.Kubernetes.CPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewQuantity(m.Kubernetes.CPUs, resource.DecimalSI)
	}
	resources := corev1.ResourceRequirements{Limits: limits}

	env := []corev1.EnvVar{
		{Name: "REPRO_RESULTS", Value: k8sResultsDir(m)},
		{Name: "REPRO_TARGET", Value: TargetKubernetes},
		{Name: "HOME", Value: "/work/home"},
		{Name: "TMPDIR", Value: "/tmp"},
	}
	container := func(name string, args []string) corev1.Container {
		return corev1.Container{
			Name:                     name,
			Image:                    m.Image,
			ImagePullPolicy:          corev1.PullIfNotPresent,
			Command:                  []string{"bash"},
			Args:                     args,
			WorkingDir:               "/work",
			Env:                      env,
			Resources:                resources,
			VolumeMounts:             mountsList,
			SecurityContext:          containerSC,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}
	}
	completions := int32(len(m.Runs))
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   m.Kubernetes.Namespace,
			Labels:      labels,
			Annotations: map[string]string{"repro.dev/manifest-digest": m.Digest},
		},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr(batchv1.IndexedCompletion),
			Completions:    ptr(completions),
			Parallelism:    ptr(int32(1)),
			BackoffLimit:   ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					EnableServiceLinks:           ptr(false),
					HostNetwork:                  false,
					HostPID:                      false,
					HostIPC:                      false,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(uid),
						RunAsGroup:     ptr(uid),
						FSGroup:        ptr(uid),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{container("preflight", []string{"/bundle/preflight.sh", "--mode", "all"})},
					Containers:     []corev1.Container{container("run", []string{"/bundle/run.sh"})},
					Volumes:        volumes,
				},
			},
		},
	}
}

// KubernetesConfigMap carries the bundle's two scripts into the pod.
func KubernetesConfigMap(m *Manifest, preflight, run []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: k8sName(m), Namespace: m.Kubernetes.Namespace, Labels: k8sLabels(m)},
		Immutable:  ptr(true),
		Data:       map[string]string{"preflight.sh": string(preflight), "run.sh": string(run)},
	}
}

// KubernetesNetworkPolicy denies all ingress and egress to the job's pods.
// It takes effect only where the cluster's network plugin enforces
// NetworkPolicy; the README says so.
func KubernetesNetworkPolicy(m *Manifest) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: k8sName(m), Namespace: m.Kubernetes.Namespace, Labels: k8sLabels(m)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"repro.dev/manifest": m.ShortDigest()}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

func toYAML(v any) ([]byte, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated by repro handoff from manifest.json; do not edit (repro handoff verify regenerates it).\n"), b...), nil
}
