package handoff

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// restrictedVersion is the Pod Security Standards version the Job is held
// to: that of the k8s.io/api release the bundle's objects are built with
// (go.mod), so a newer standard is taken on with the types.
const restrictedVersion = "v1.37"

// evaluateRestricted runs the API server's own Pod Security evaluator
// (k8s.io/pod-security-admission, the library behind the admission
// plugin) at level "restricted" on the pod template of job, and returns
// one line per check that forbids it.
func evaluateRestricted(t *testing.T, job *batchv1.Job) []string {
	t.Helper()
	v, err := psaapi.ParseVersion(restrictedVersion)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := job.Spec.Template
	var out []string
	for _, r := range ev.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: v}, &tmpl.ObjectMeta, &tmpl.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

// TestKubernetesJobPassesRestricted holds the bundle's Job, as written and
// decoded back, to the Pod Security Standard "restricted", for both
// workloads, with and without a credentials Secret. Each removal row takes
// one control out of the Job and requires the evaluator to refuse it,
// so the test can fail and the evaluator is the one judging.
func TestKubernetesJobPassesRestricted(t *testing.T) {
	for _, nw := range []func(testing.TB) *world{newMiniGoWorld, newDLRMWorld} {
		for _, creds := range []bool{false, true} {
			w := nw(t)
			if creds {
				w.cfg.Volumes.Credentials = &Volume{Path: w.path("volumes", "credentials"), Claim: "registry-token"}
				writeFile(t, w.path("volumes", "credentials", "token"), []byte("x"), 0o600)
			}
			m := w.bundle(t, TargetKubernetes)
			t.Run(fmt.Sprintf("%s/credentials=%v", m.Workload, creds), func(t *testing.T) {
				var job batchv1.Job
				decodeStrict(t, filepath.Join(w.out, K8sJobFile), &job)
				if bad := evaluateRestricted(t, &job); len(bad) > 0 {
					t.Fatalf("the Job is refused at restricted %s:\n%s", restrictedVersion, strings.Join(bad, "\n"))
				}
				for _, rm := range []struct {
					control, want string
					remove        func(*corev1.PodSpec)
				}{
					{"runAsNonRoot", "runAsNonRoot", func(s *corev1.PodSpec) {
						s.SecurityContext.RunAsNonRoot = nil
						for i := range s.InitContainers {
							s.InitContainers[i].SecurityContext.RunAsNonRoot = nil
						}
						s.Containers[0].SecurityContext.RunAsNonRoot = nil
					}},
					{"allowPrivilegeEscalation", "allowPrivilegeEscalation", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }},
					{"capabilities drop ALL", "unrestricted capabilities", func(s *corev1.PodSpec) { s.InitContainers[0].SecurityContext.Capabilities = nil }},
					{"seccomp", "seccompProfile", func(s *corev1.PodSpec) {
						s.SecurityContext.SeccompProfile = nil
						s.Containers[0].SecurityContext.SeccompProfile = nil
					}},
					{"no host path", "restricted volume types", func(s *corev1.PodSpec) {
						s.Volumes = append(s.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
					}},
					{"no host network", "host namespaces", func(s *corev1.PodSpec) { s.HostNetwork = true }},
					{"not privileged", "privileged", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Privileged = ptr(true) }},
				} {
					var j batchv1.Job
					decodeStrict(t, filepath.Join(w.out, K8sJobFile), &j)
					rm.remove(&j.Spec.Template.Spec)
					bad := evaluateRestricted(t, &j)
					if !strings.Contains(strings.Join(bad, "\n"), rm.want) {
						t.Errorf("with %s removed the evaluator does not refuse the Job for %q; it says %q", rm.control, rm.want, bad)
					}
				}
			})
		}
	}
}
