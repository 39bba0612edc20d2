package handoff

import (
	"fmt"
)

// relaxations lists the controls of the security review that the
// workload, the target or the runtime cannot keep, and why. Every other
// control holds: non-root, no capabilities, no-new-privileges, read-only
// root, bounded resources and explicit writable mounts.
func relaxations(m *Manifest) []Relaxation {
	var out []Relaxation
	switch m.Workload {
	case "minigo":
		out = append(out, Relaxation{Control: "read-only source", Target: "all",
			Why: "MiniGo's Bazel build (cc:concurrent_selfplay, cc:eval) and its self-play write inside the source tree; the pinned tree is mounted read-only and verified, and each run works in a copy under the writable /work volume, which is not verified again after the copy"})
	case "dlrm":
		out = append(out, Relaxation{Control: "read-only source", Target: "all",
			Why: "dlrm_s_pytorch.py writes dlrm.log next to itself and bench/run_and_time.sh writes its log into the working folder; the pinned tree is mounted read-only and verified, and each run works in a copy under the writable /work volume, which is not verified again after the copy"})
	}
	switch m.Target {
	case TargetSlurm:
		if m.Container != ContainerPodman {
			out = append(out, Relaxation{Control: "no network", Target: "slurm/" + m.Container,
				Why: "unprivileged pyxis/enroot and Apptainer containers share the node's network namespace; isolating it needs privileges the job does not hold. Run on nodes without outbound access, or make the bundle with container podman"})
		}

		if m.Container == ContainerPyxis {
			out = append(out, Relaxation{Control: "clean environment", Target: "slurm/pyxis",
				Why: "srun hands the batch environment to the container; the batch script starts from --export=NONE, so only Slurm's variables and the account's login environment reach it"})
		}
		if m.ClearCaches {
			out = append(out, Relaxation{Control: "no privileges", Target: "slurm",
				Why: "clear_caches runs sudo -n /sbin/sysctl vm.drop_caches=3 on the node, outside the container, before each run (MLPerf cache_clear)"})
		} else {
			out = append(out, Relaxation{Control: "MLPerf cache_clear", Target: "slurm",
				Why: "dropping the page cache needs root; without clear_caches the runs start with whatever the cache holds"})
		}
	case TargetKubernetes:
		out = append(out, Relaxation{Control: "MLPerf cache_clear", Target: "kubernetes",
			Why: "dropping the page cache needs a privileged container, which the Job never gets; runs start with whatever the node's cache holds"})
		out = append(out, Relaxation{Control: "no network", Target: "kubernetes",
			Why: "the bundle's NetworkPolicy denies all traffic to and from the pods, but only a network plugin that enforces NetworkPolicy makes it effective"})
		if m.Kubernetes.CPUs == 0 {
			out = append(out, Relaxation{Control: "bounded resources (CPU)", Target: "kubernetes",
				Why: "no published CPU figure exists for the workload and kubernetes.cpus is not set, so CPU is not limited; GPU, memory and storage are"})
		}
	}
	return out
}

// retention states, for each data class, where it lives, who may read it,
// how long it is kept and how it is deleted.
func retention(m *Manifest, c *Config) []RetentionRule {
	days := 365
	if c.Retention != nil && c.Retention.OutputsDays > 0 {
		days = c.Retention.OutputsDays
	}
	ns := m.Kubernetes.Namespace
	var out []RetentionRule
	for _, v := range m.Volumes {
		r := RetentionRule{Class: v.Class}
		where, del := v.NodePath, fmt.Sprintf("rm -rf --one-file-system -- %s", shellQuote(v.NodePath))
		if m.Target == TargetKubernetes {
			where = fmt.Sprintf("PersistentVolumeClaim %s in namespace %s", v.Claim, ns)
			del = fmt.Sprintf("kubectl -n %s delete pvc %s   # then delete its PersistentVolume if the reclaim policy is Retain", ns, v.Claim)
		}
		if where == "" {
			where = "(not set)"
		}
		r.Location = where
		switch v.Class {
		case ClassDataset:
			r.Readers = "the job's account, through a read-only mount, and the people named in the license acceptance; nobody else"
			r.Kept = "while the license acceptance recorded in the manifest stands and the reproduction is open; deleted when it closes or the acceptance is withdrawn"
			r.Delete = []string{del}
		case ClassCheckpoint:
			r.Readers = "the job's account, through a read-only mount; the checkpoint's license (non-commercial) travels with it"
			r.Kept = "as long as the dataset; deleted with it"
			r.Delete = []string{del}
		case ClassSource:
			r.Readers = "anyone (public source code), mounted read-only"
			r.Kept = "with the bundle"
			r.Delete = []string{del}
		case ClassOutput:
			r.Readers = "written by the job's account only; read by the researchers of this reproduction"
			r.Kept = fmt.Sprintf("%d days after repro handoff ingest recorded the run, then deleted (the ingest record in REPRO_HOME keeps the digests)", days)
			if m.Target == TargetKubernetes {
				r.Delete = []string{fmt.Sprintf("kubectl -n %s delete job %s", ns, k8sName(m)), del}
			} else {
				r.Delete = []string{fmt.Sprintf("rm -rf --one-file-system -- %s/repro-%s-JOBID", shellQuote(v.NodePath), m.Workload)}
			}
		case ClassCredentials:
			r.Readers = "the job's account only (mode 0400); never copied into the image, the manifest or the outputs"
			r.Kept = "for the job's lifetime: revoke the credential and delete it when the job ends"
			if m.Target == TargetKubernetes {
				r.Location = fmt.Sprintf("Secret %s in namespace %s", v.Claim, ns)
				r.Delete = []string{fmt.Sprintf("kubectl -n %s delete secret %s", ns, v.Claim)}
			} else {
				r.Delete = []string{fmt.Sprintf("find %s -type f -exec shred -u -- {} +", shellQuote(v.NodePath)), del}
			}
		}
		out = append(out, r)
	}
	return out
}
