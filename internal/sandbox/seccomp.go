package sandbox

import (
	_ "embed"

	"github.com/reprolab/repro/internal/digest"
)

// seccompProfile is the seccomp profile of every container, in the engine's
// JSON format. It follows the structure of Docker's default profile (an
// allowlist with EPERM for everything else, clone without namespace flags,
// clone3 answering ENOSYS so that libc falls back to clone, personality
// limited to the usual values) and goes further:
//
//   - ptrace, process_vm_readv and process_vm_writev are not allowed, so a
//     program can neither stop nor read another process of its user;
//   - io_uring_setup, io_uring_enter and io_uring_register are not allowed;
//   - socket(AF_VSOCK, ...) is refused (the only socket rule compares the
//     family with 40);
//   - no syscall that Docker's default profile allows only with a capability
//     is listed, since every capability is dropped;
//   - only the native 64-bit ABIs are listed, so 32-bit syscalls are refused.
//
//go:embed seccomp.json
var seccompProfile []byte

// SeccompProfile returns the profile bytes handed to the engine.
func SeccompProfile() []byte { return append([]byte(nil), seccompProfile...) }

// SeccompDigest returns the SHA-256 of the profile; it is a host fact of every run.
func SeccompDigest() digest.SHA256 { return digest.Of(seccompProfile) }
