// Package handoff prepares MLPerf Training workloads that need a GPU
// cluster (MiniGo on TensorFlow 1, DLRM on PyTorch with Criteo Terabyte)
// for a run elsewhere, and checks what comes back.
//
// Each workload's requirements are data ([Workload.Requirements]): what is
// checked, where (here, by repro handoff; on the node, by the bundle's
// preflight script; inside the image) and how an operator satisfies it.
// [Prepare] checks every requirement it can check on this machine against
// an operator's [Config] (untrusted: [ParseConfig] is strict and bounded)
// and the compiled-in catalog, and builds a [Manifest]. [WriteBundle]
// writes a bundle only from a manifest; the command writes one only when
// every requirement holds, unless asked for a plan, which is marked not
// ready and whose preflight refuses to run.
//
// A bundle is manifest.json plus files rendered from it alone: a
// preflight script that fails closed, an in-container run script, a Slurm
// batch script (pyxis/enroot or Apptainer) or Kubernetes objects built from
// the k8s.io/api types, and an operator README. [VerifyBundle] renders them
// again and compares, so any edit is found. [Ingest] checks returned logs
// against the manifest and records the run. [VerifyLogs] verifies MLLOG
// files given by hand (repro mllog verify) and records that as a run too.
package handoff
