package sandbox

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

type profileRule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet"`
	Args     []struct {
		Index    uint   `json:"index"`
		Value    uint64 `json:"value"`
		ValueTwo uint64 `json:"valueTwo"`
		Op       string `json:"op"`
	} `json:"args"`
}

func TestSeccompProfile(t *testing.T) {
	var p struct {
		DefaultAction   string        `json:"defaultAction"`
		DefaultErrnoRet *uint         `json:"defaultErrnoRet"`
		Architectures   []string      `json:"architectures"`
		Syscalls        []profileRule `json:"syscalls"`
	}
	if err := json.Unmarshal(seccompProfile, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s", p.DefaultAction)
	}
	if slices.Contains(p.Architectures, "SCMP_ARCH_X86") || slices.Contains(p.Architectures, "SCMP_ARCH_X32") {
		t.Errorf("32-bit ABIs allowed: %v", p.Architectures)
	}
	allowed := map[string][]profileRule{}
	for _, r := range p.Syscalls {
		for _, n := range r.Names {
			if r.Action == "SCMP_ACT_ALLOW" {
				allowed[n] = append(allowed[n], r)
			}
		}
	}
	for _, denied := range []string{"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
		"io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "mount", "umount2",
		"unshare", "setns", "kexec_load", "init_module", "finit_module", "open_by_handle_at", "pidfd_getfd", "kcmp", "clone3",
		"reboot", "swapon", "settimeofday", "clock_settime", "chroot", "pivot_root", "modify_ldt",
		"shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl",
		"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"} {
		if _, ok := allowed[denied]; ok {
			t.Errorf("%s is allowed", denied)
		}
	}
	for _, needed := range []string{"read", "write", "openat", "execve", "mmap", "futex", "wait4", "exit_group", "rt_sigaction", "getrandom", "arch_prctl"} {
		if _, ok := allowed[needed]; !ok {
			t.Errorf("%s is not allowed: Python cannot run", needed)
		}
	}
	sock := allowed["socket"]
	if len(sock) != 1 || len(sock[0].Args) != 1 || sock[0].Args[0].Op != "SCMP_CMP_EQ" || sock[0].Args[0].Value != 1 || sock[0].Args[0].Index != 0 {
		t.Errorf("socket is not limited to AF_UNIX: %+v", sock)
	}
	clone := allowed["clone"]
	if len(clone) != 1 || len(clone[0].Args) != 1 || clone[0].Args[0].Op != "SCMP_CMP_MASKED_EQ" || clone[0].Args[0].Value != 0x7E028000 {
		t.Errorf("clone may create namespaces or siblings (CLONE_PARENT): %+v", clone)
	}
	var clone3 *profileRule
	for i, r := range p.Syscalls {
		if slices.Contains(r.Names, "clone3") {
			clone3 = &p.Syscalls[i]
		}
	}
	if clone3 == nil || clone3.ErrnoRet == nil || *clone3.ErrnoRet != 38 {
		t.Errorf("clone3 must answer ENOSYS so that libc falls back to clone: %+v", clone3)
	}
	// Calls that change limits or scheduling act on the caller only: the
	// argument that names another process must be 0 (the caller).
	for n, want := range map[string][][2]uint64{
		"prlimit64":          {{0, 0}},
		"sched_setaffinity":  {{0, 0}},
		"sched_setattr":      {{0, 0}},
		"sched_setparam":     {{0, 0}},
		"sched_setscheduler": {{0, 0}},
		"setpriority":        {{0, 0}, {1, 0}}, // PRIO_PROCESS, who 0
		"ioprio_set":         {{0, 1}, {1, 0}}, // IOPRIO_WHO_PROCESS, who 0
	} {
		rs := allowed[n]
		if len(rs) != 1 || len(rs[0].Args) != len(want) {
			t.Errorf("%s may act on other processes: %+v", n, rs)
			continue
		}
		for i, a := range rs[0].Args {
			if a.Op != "SCMP_CMP_EQ" || uint64(a.Index) != want[i][0] || a.Value != want[i][1] {
				t.Errorf("%s: argument rule %+v, want argument %d == %d", n, a, want[i][0], want[i][1])
			}
		}
	}
	for n, rs := range allowed {
		if n != "personality" && len(rs) > 1 {
			t.Errorf("%s is listed %d times", n, len(rs))
		}
	}
	b, err := os.ReadFile("seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	if SeccompDigest() != digest.Of(b) {
		t.Error("the digest does not match the committed profile")
	}
}
