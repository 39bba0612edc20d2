package sandbox

import (
	"context"
	"encoding/json"
	"strings"
)

// RemoveControl makes every container e creates lack one control of the
// policy. It exists only for the conformance meta-test, which proves that
// the hostile suite notices each missing control; it is compiled into the
// package's tests and nowhere else.
func RemoveControl(e *Engine, control string) {
	var f func(*policy)
	switch control {
	case "network":
		f = func(p *policy) { p.host.NetworkMode = "bridge"; p.config.NetworkDisabled = false }
	case "read-only root":
		f = func(p *policy) { p.host.ReadonlyRootfs = false }
	case "cap-drop":
		f = func(p *policy) { p.host.CapDrop = nil }
	case "pids": // the cgroup, and under runsc the RLIMIT_NPROC that stands for it
		f = func(p *policy) { p.host.PidsLimit = nil; p.host.Ulimits = dropUlimit(p, "nproc") }
	case "memory":
		f = func(p *policy) { p.host.Memory, p.host.MemorySwap = 0, 0 }
	case "ipc":
		f = func(p *policy) { p.host.IpcMode = "private" }
	case "seccomp": // the engine's default profile instead of ours
		f = func(p *policy) { p.host.SecurityOpt = dropOpt(p.host.SecurityOpt, "seccomp=") }
	case "seccomp entirely":
		f = func(p *policy) {
			p.host.SecurityOpt = append(dropOpt(p.host.SecurityOpt, "seccomp="), "seccomp=unconfined")
		}
	case "seccomp caller-only arguments": // limits and scheduling of any process of the user
		f = func(p *policy) {
			p.host.SecurityOpt, p.launchProfile = swapProfile(p.host.SecurityOpt, allowCallerOnly)
		}
	case "seccomp SysV IPC":
		f = func(p *policy) { p.host.SecurityOpt, p.launchProfile = swapProfile(p.host.SecurityOpt, allowSysV) }
	case "seccomp INET": // every socket family but AF_VSOCK, as before
		f = func(p *policy) { p.host.SecurityOpt, p.launchProfile = swapProfile(p.host.SecurityOpt, allowINET) }
	case "seccomp CLONE_PARENT": // clone refuses only the namespace flags
		f = func(p *policy) {
			p.host.SecurityOpt, p.launchProfile = swapProfile(p.host.SecurityOpt, allowCloneParent)
		}
	case "mqueue": // the engine's own /dev/mqueue, writable by all
		f = func(p *policy) { delete(p.host.Tmpfs, MqueueDir) }
	case "seccomp launcher": // under runsc, programs start without the launcher's filter
		f = func(p *policy) { p.launcher = false }
	case "seccomp launcher and profile": // no filter at all: neither the launcher's nor the engine's
		f = func(p *policy) {
			p.launcher = false
			p.host.SecurityOpt = append(dropOpt(p.host.SecurityOpt, "seccomp="), "seccomp=unconfined")
		}
	case "launcher only": // the launcher's filter in place of the engine's profile, under either runtime
		f = func(p *policy) {
			p.launcher = true
			p.host.SecurityOpt = append(dropOpt(p.host.SecurityOpt, "seccomp="), "seccomp=unconfined")
		}
	case "no-new-privileges":
		f = func(p *policy) { p.host.SecurityOpt = dropOpt(p.host.SecurityOpt, "no-new-privileges") }
	case "nofile":
		f = func(p *policy) { p.host.Ulimits = dropUlimit(p, "nofile") }
	case "tmpfs":
		// Docker adds noexec, nosuid and nodev to a tmpfs unless told otherwise.
		f = func(p *policy) { p.host.Tmpfs[TmpDir] = "rw,exec,suid,dev,mode=1777" }
	case "init":
		f = func(p *policy) { p.host.Init = nil }
	case "cpu":
		f = func(p *policy) { p.host.NanoCPUs = 0 }
	case "user":
		f = func(p *policy) { p.execUser = "0:0" }
	default:
		panic("unknown control " + control)
	}
	e.alter = f
}

func dropOpt(opts []string, prefix string) []string {
	var out []string
	for _, o := range opts {
		if !strings.HasPrefix(o, prefix) {
			out = append(out, o)
		}
	}
	return out
}

func dropUlimit(p *policy, name string) []*ulimit {
	var out []*ulimit
	for _, u := range p.host.Ulimits {
		if u.Name != name {
			out = append(out, u)
		}
	}
	return out
}

// ExecAnother runs one more program in a running container (benchmarks).
func ExecAnother(ctx context.Context, c *Container, cmd []string) (int, error) {
	return c.execAnother(ctx, cmd)
}

// ParseDpkgPackages and PinnedDpkgStatus let the SBOM tests build an SBOM
// from a modified copy of the real image's dpkg status.
var ParseDpkgPackages = parseDpkgPackages

// PinnedDpkgStatus returns the dpkg status of the image pinned under home.
func PinnedDpkgStatus(ctx context.Context, e *Engine, home string) ([]byte, error) {
	pin, err := ReadPin(home)
	if err != nil {
		return nil, err
	}
	return pinnedDpkgStatus(ctx, e, home, pin)
}

// callerOnly are the calls our profile allows only on the caller itself.
var callerOnly = []string{"prlimit64", "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "setpriority", "ioprio_set"}

// allowCallerOnly lets the calls of callerOnly act on any process.
func allowCallerOnly(rules []map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range rules {
		names, _ := r["names"].([]any)
		if len(names) == 1 && slicesContainsAny(callerOnly, names[0]) {
			continue
		}
		out = append(out, r)
	}
	return append(out, map[string]any{"names": callerOnly, "action": "SCMP_ACT_ALLOW"})
}

// allowSysV allows the SysV IPC and POSIX message queue calls.
func allowSysV(rules []map[string]any) []map[string]any {
	return append(rules, map[string]any{"names": []string{"shmget", "shmat", "shmctl", "shmdt", "semget", "semop",
		"semtimedop", "semctl", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
		"mq_timedreceive", "mq_notify", "mq_getsetattr"}, "action": "SCMP_ACT_ALLOW"})
}

// allowINET lets socket make any family but AF_VSOCK.
func allowINET(rules []map[string]any) []map[string]any {
	return editArgs(rules, "socket", []any{map[string]any{"index": 0, "value": 40, "valueTwo": 0, "op": "SCMP_CMP_NE"}})
}

// allowCloneParent lets clone take CLONE_PARENT.
func allowCloneParent(rules []map[string]any) []map[string]any {
	return editArgs(rules, "clone", []any{map[string]any{"index": 0, "value": 0x7E020000, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}})
}

// editArgs replaces the argument rules of the rule that names only call.
func editArgs(rules []map[string]any, call string, args []any) []map[string]any {
	found := false
	for _, r := range rules {
		names, _ := r["names"].([]any)
		if len(names) == 1 && names[0] == call {
			r["args"] = args
			found = true
		}
	}
	if !found {
		panic("no rule for " + call)
	}
	return rules
}

func slicesContainsAny(list []string, v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// swapProfile replaces our seccomp profile with edit's change of it, and
// returns the changed profile too.
func swapProfile(opts []string, edit func([]map[string]any) []map[string]any) ([]string, string) {
	var prof map[string]any
	if err := json.Unmarshal(seccompProfile, &prof); err != nil {
		panic(err)
	}
	raw, _ := prof["syscalls"].([]any)
	rules := make([]map[string]any, len(raw))
	for i, r := range raw {
		rules[i] = r.(map[string]any)
	}
	prof["syscalls"] = edit(rules)
	b, err := json.Marshal(prof)
	if err != nil {
		panic(err)
	}
	return append(dropOpt(opts, "seccomp="), "seccomp="+string(b)), string(b)
}

// WriteImageArchive is writeImageArchive, for tests that make image
// archives of images the engine does not hold.
var WriteImageArchive = writeImageArchive
