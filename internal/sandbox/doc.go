// Package sandbox runs untrusted programs (model-generated Python) inside a
// hardened Docker container and reports what happened, so that no generated
// code ever executes directly on the host.
//
// # Engine
//
// [Connect] talks to the local Docker engine through the Engine API
// (github.com/moby/moby/client), negotiating the API version down to the
// engine's (Debian's docker.io 20.10 speaks 1.41). A missing engine is an
// [exitcode.Precondition] error that says how to install and start one.
//
// # Policy
//
// Every container is created with the same policy, and no option of this
// package weakens it: no network; read-only root; all capabilities dropped;
// no-new-privileges; the seccomp profile embedded in this package (Docker's
// default allowlist without ptrace, process_vm_readv/writev, io_uring, SysV
// IPC and AF_VSOCK sockets, with the calls that change limits or scheduling
// acting on the caller only); a non-root user; an init process; CPU, memory (swap equal
// to memory), pids, core=0, nofile and fsize limits; a noexec, size- and
// inode-capped tmpfs at /tmp; no /dev/shm (IPC namespace "none"); read-only
// bind mounts only; an optional size- and inode-capped noexec results folder;
// no log driver; an empty environment apart from a fixed base. [Limits] tunes
// the numbers, never the controls: every limit must be set and within its
// ceiling.
//
// # Execution model
//
// A container's main process is docker-init with an idle holder, both running
// as a holder user. The program runs as a second user through an exec into
// that container, so it can neither signal nor read the init process, and
// the container (its cgroup, its results folder) stays alive after the
// program ends: the runner then reads the CPU time and peak memory from the
// cgroup, reads the results folder back through the engine's archive API,
// kills the container and removes it by ID. The wall-clock deadline is
// enforced from Go by killing the container.
//
// Containers carry the label [LabelKey], their deadline and the process
// instance that made them ([LabelOwnerProcess]), so that [Engine.Sweep]
// removes those left behind by a runner that was killed: at once where
// that runner is known to be gone, else after the deadline; [Engine.Close]
// removes every container this process still owns.
//
// # Integrity
//
// [WriteWorkspace] writes the samples' bytes, or [NewWorkspace] copies
// sample files, into a fresh folder and hashes them;
// [Workspace.Check] re-hashes and reports any change as an
// [exitcode.Integrity] error. Each sample is bound read-only on its own.
package sandbox
