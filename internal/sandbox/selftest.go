package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

//go:embed selftest.py
var selftestProbe string

// Control is one policy control as the self-test found it.
type Control struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Echo marks a row that only reads back the configuration the engine
	// recorded for the container: nothing inside it can observe the
	// control (the log driver lives on the host side).
	Echo bool `json:"echo,omitempty"`
}

// SelfTestLimits are the limits the self-test runs under.
func SelfTestLimits() Limits {
	l := DefaultLimits()
	l.Memory = 128 << 20
	l.Pids = 32
	l.NoFile = 64
	l.FSize = 1 << 20
	l.Deadline = 30 * time.Second
	l.OutputCap = 64 << 10
	return l
}

// SelfTest runs a probe under the policy and reports every control: what
// the engine recorded for the container and what the probe saw from
// inside. Any control not OK means the policy is not in force on this host.
func (e *Engine) SelfTest(ctx context.Context, img Image) ([]Control, error) {
	info, err := e.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to read the engine information: %w", err)
	}
	hostKernel := info.Info.KernelVersion
	l := SelfTestLimits()
	c, err := e.Start(ctx, Spec{Image: img, Cmd: []string{"python3", "-c", selftestProbe}, Limits: l, Results: true})
	if err != nil {
		return nil, err
	}
	ins, ierr := e.cli.ContainerInspect(ctx, c.ID(), client.ContainerInspectOptions{})
	var hostCg hostCgroup
	if ierr == nil && e.runtime.Name == Runsc {
		hostCg = readHostCgroup(ins.Container.State.Pid)
	}
	var stdout []byte
	done := make(chan struct{})
	go func() {
		stdout, _ = io.ReadAll(c.Stdout())
		close(done)
	}()
	o, err := c.Wait(ctx)
	if err != nil {
		return nil, err
	}
	<-done
	if ierr != nil {
		return nil, fmt.Errorf("failed to inspect the self-test container: %w", ierr)
	}
	var p probe
	if err := strictjson.DecodeOpen(stdout, &p); err != nil {
		return nil, fmt.Errorf("the self-test probe gave no report (exit %d): %v", o.ExitCode, err)
	}
	hc := ins.Container.HostConfig
	var cs []Control
	add := func(name string, ok bool, format string, args ...any) {
		cs = append(cs, Control{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	runsc := e.runtime.Name == Runsc
	// gVisor has no route rather than no network.
	// seccomp refuses INET sockets first (EPERM).
	unreachable := p.ConnectErrno == int(syscall.EPERM) || p.ConnectErrno == int(syscall.ENETUNREACH) || runsc && p.ConnectErrno == int(syscall.EHOSTUNREACH)
	add("network none", string(hc.NetworkMode) == "none" && slices.Equal(p.Interfaces, []string{"lo"}) && unreachable,
		"mode %s, interfaces %v, connect errno %d", hc.NetworkMode, p.Interfaces, p.ConnectErrno)
	add("read-only root", hc.ReadonlyRootfs && p.RootfsWriteErrno == int(syscall.EROFS),
		"ReadonlyRootfs %v, write errno %d", hc.ReadonlyRootfs, p.RootfsWriteErrno)
	add("no capabilities", slices.Equal(hc.CapDrop, []string{"ALL"}) && zeroCaps(p.CapEff, p.CapPrm, p.CapBnd),
		"CapDrop %v, CapEff %s CapPrm %s CapBnd %s", hc.CapDrop, p.CapEff, p.CapPrm, p.CapBnd)
	// gVisor's /proc/self/status has no NoNewPrivs line; the prctl answers
	// under both runtimes.
	add("no-new-privileges", p.NoNewPrivsPrctl == 1 && (runsc || p.NoNewPrivs == "1"),
		"PR_GET_NO_NEW_PRIVS %d, NoNewPrivs %q", p.NoNewPrivsPrctl, p.NoNewPrivs)
	add("seccomp profile", p.Seccomp == "2" && p.PtraceErrno == int(syscall.EPERM) && p.IOUringErrno == int(syscall.EPERM) && p.VsockErrno == int(syscall.EPERM),
		"mode %s, ptrace errno %d, io_uring errno %d, AF_VSOCK errno %d", p.Seccomp, p.PtraceErrno, p.IOUringErrno, p.VsockErrno)
	progUser, _ := users()
	add("non-root user", p.UID != 0 && fmt.Sprintf("%d:%d", p.UID, p.GID) == progUser, "uid %d gid %d", p.UID, p.GID)
	add("init", hc.Init != nil && *hc.Init && p.PID != 1 && path.Base(p.PID1) == "docker-init",
		"Init %v, probe pid %d, pid 1 %q", hc.Init != nil && *hc.Init, p.PID, p.PID1)
	pe := EnforcePids(e.runtime.Name, l.Pids)
	if runsc {
		// gVisor shows the program no cgroup files: the container's
		// cgroup is read on the host, where it holds the sandbox.
		add("memory limit", hc.Memory == l.Memory && hc.MemorySwap == l.Memory && cgroupNumber(hostCg.memory) == l.Memory,
			"Memory %d MemorySwap %d, host cgroup %s%s", hc.Memory, hc.MemorySwap, hostCg.memory, errText(hostCg.err))
		add("pids limit", hc.PidsLimit != nil && *hc.PidsLimit == pe.Cgroup && cgroupNumber(hostCg.pids) == pe.Cgroup && rlimitIs(p.RlimitNproc, pe.NProc),
			"PidsLimit %v, host cgroup %s, RLIMIT_NPROC %v%s", derefInt(hc.PidsLimit), hostCg.pids, p.RlimitNproc, errText(hostCg.err))
		add("cpu limit", hc.NanoCPUs == l.NanoCPUs && cgroupNanoCPUs(hostCg.cpu) == l.NanoCPUs,
			"NanoCPUs %d, host cgroup quota/period %q%s", hc.NanoCPUs, hostCg.cpu, errText(hostCg.err))
	} else {
		add("memory limit", hc.Memory == l.Memory && hc.MemorySwap == l.Memory && cgroupNumber(p.MemoryMax) == l.Memory,
			"Memory %d MemorySwap %d, cgroup %s", hc.Memory, hc.MemorySwap, p.MemoryMax)
		add("pids limit", hc.PidsLimit != nil && *hc.PidsLimit == pe.Cgroup && cgroupNumber(p.PidsMax) == pe.Cgroup,
			"PidsLimit %v, cgroup %s", derefInt(hc.PidsLimit), p.PidsMax)
		add("cpu limit", hc.NanoCPUs == l.NanoCPUs && cgroupNanoCPUs(p.CPUMax) == l.NanoCPUs,
			"NanoCPUs %d, cgroup quota/period %q", hc.NanoCPUs, p.CPUMax)
	}
	add("ulimits", rlimitIs(p.RlimitCore, 0) && rlimitIs(p.RlimitNofile, l.NoFile) && rlimitIs(p.RlimitFsize, l.FSize),
		"core %v nofile %v fsize %v", p.RlimitCore, p.RlimitNofile, p.RlimitFsize)
	refused := 100 + int(syscall.EACCES)
	if runsc {
		// gVisor shows noexec only; setuid and device files are of no use
		// without capabilities and with no_new_privs. gVisor does not apply
		// noexec to the results volume: a file written there runs under
		// the same seccomp filter (its shmget gets EPERM).
		add("noexec /tmp", p.TmpExecErrno == int(syscall.EACCES) && mountHas(p.Mounts["/tmp"], "noexec"),
			"exec errno %d, mount %s", p.TmpExecErrno, p.Mounts["/tmp"])
		add("noexec /results", p.ResultsExec == refused || p.ResultsExec == 200+int(syscall.EPERM),
			"written script exit %d (%d: exec refused, %d: ran and shmget got EPERM from the filter), mount %s",
			p.ResultsExec, refused, 200+int(syscall.EPERM), p.Mounts[ResultsDir])
	} else {
		add("noexec /tmp", p.TmpExecErrno == int(syscall.EACCES) && mountHas(p.Mounts["/tmp"], "noexec", "nosuid", "nodev"),
			"exec errno %d, mount %s", p.TmpExecErrno, p.Mounts["/tmp"])
		add("noexec /results", p.ResultsExec == refused && mountHas(p.Mounts[ResultsDir], "noexec", "nosuid", "nodev"),
			"written script exit %d (%d: exec refused), mount %s", p.ResultsExec, refused, p.Mounts[ResultsDir])
	}
	add("no /dev/shm", string(hc.IpcMode) == "none" && p.ShmWriteErrno != 0, "IpcMode %s, write errno %d", hc.IpcMode, p.ShmWriteErrno)
	add("log driver none", hc.LogConfig.Type == "none" && ins.Container.LogPath == "",
		"configuration echo (not observable inside): driver %s, log path %q", hc.LogConfig.Type, ins.Container.LogPath)
	cs[len(cs)-1].Echo = true
	envOK := true
	for _, k := range p.EnvironKeys {
		if _, base := baseEnv[k]; !base && k != "HOSTNAME" {
			envOK = false
		}
	}
	add("empty environment", envOK, "keys %v", p.EnvironKeys)
	kerr := KernelSeen(e.runtime.Name, hostKernel, p.KernelRelease, p.ProcVersion)
	add("runtime "+string(e.runtime.Name), string(hc.Runtime) == string(e.runtime.Name) && kerr == nil,
		"Runtime %s, kernel seen %q, host kernel %q%s", hc.Runtime, p.KernelRelease, hostKernel, errText(kerr))
	add("deadline", !o.TimedOut && o.ExitCode == 0, "exit %d in %v", o.ExitCode, o.Wall.Round(time.Millisecond))
	return cs, nil
}

type probe struct {
	UID              int               `json:"uid"`
	GID              int               `json:"gid"`
	CapEff           string            `json:"cap_eff"`
	CapPrm           string            `json:"cap_prm"`
	CapBnd           string            `json:"cap_bnd"`
	NoNewPrivs       string            `json:"no_new_privs"`
	NoNewPrivsPrctl  int               `json:"no_new_privs_prctl"`
	ResultsExec      int               `json:"results_exec"`
	Seccomp          string            `json:"seccomp"`
	Interfaces       []string          `json:"interfaces"`
	ConnectErrno     int               `json:"connect_errno"`
	RootfsWriteErrno int               `json:"rootfs_write_errno"`
	TmpExecErrno     int               `json:"tmp_exec_errno"`
	ShmWriteErrno    int               `json:"shm_write_errno"`
	VsockErrno       int               `json:"vsock_errno"`
	PtraceErrno      int               `json:"ptrace_errno"`
	IOUringErrno     int               `json:"io_uring_errno"`
	RlimitCore       []int64           `json:"rlimit_core"`
	RlimitNofile     []int64           `json:"rlimit_nofile"`
	RlimitFsize      []int64           `json:"rlimit_fsize"`
	RlimitNproc      []int64           `json:"rlimit_nproc"`
	PidsMax          string            `json:"pids_max"`
	MemoryMax        string            `json:"memory_max"`
	CPUMax           string            `json:"cpu_max"`
	PID              int               `json:"pid"`
	PID1             string            `json:"pid1"`
	EnvironKeys      []string          `json:"environ_keys"`
	Mounts           map[string]string `json:"mounts"`
	KernelRelease    string            `json:"kernel_release"`
	ProcVersion      string            `json:"proc_version"`
}

// gVisorProcVersion matches how gVisor's kernel describes itself in
// /proc/version: a Linux release it emulates ("4.4.0" in Debian's runsc
// 0.0~20221219, "4.19.0-gvisor" in the build scripts/deps.sh makes) and a
// build line fixed in gVisor's source, which no host kernel prints.
var gVisorProcVersion = regexp.MustCompile(`^Linux version [0-9][0-9A-Za-z.+-]* #1 SMP Sun Jan 10 15:06:54 PST 2016$`)

// KernelSeen checks, from what a program inside the container reported,
// that the kernel it sees is the one rt implies: the host's (hostKernel)
// under runc, gVisor's under runsc.
func KernelSeen(rt Runtime, hostKernel, release, procVersion string) error {
	procVersion = strings.TrimSpace(procVersion)
	gvisor := gVisorProcVersion.MatchString(procVersion) && strings.HasPrefix(procVersion, "Linux version "+release+" ") && release != hostKernel
	switch {
	case rt == Runsc && !gvisor:
		return fmt.Errorf("the program sees kernel %q (%q), not gVisor's", release, procVersion)
	case rt == Runc && (release != hostKernel || gvisor):
		return fmt.Errorf("the program sees kernel %q (%q), not the host's %q", release, procVersion, hostKernel)
	}
	return nil
}

// cgroupNanoCPUs turns "quota period" (microseconds) into the NanoCPUs it
// allows; -1 when there is no quota ("max" or -1) or the text is not two
// numbers.
func cgroupNanoCPUs(s string) int64 {
	q, p, ok := strings.Cut(strings.TrimSpace(s), " ")
	quota, err1 := strconv.ParseInt(q, 10, 64)
	period, err2 := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
	if !ok || err1 != nil || err2 != nil || quota <= 0 || period <= 0 || quota > 1<<40 {
		return -1
	}
	return quota * 1e9 / period
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func zeroCaps(sets ...string) bool {
	for _, s := range sets {
		v, err := strconv.ParseUint(s, 16, 64)
		if err != nil || v != 0 {
			return false
		}
	}
	return true
}

func cgroupNumber(s string) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func rlimitIs(r []int64, v int64) bool { return len(r) == 2 && r[0] == v && r[1] == v }

func mountHas(opts string, want ...string) bool {
	have := strings.Split(opts, ",")
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func derefInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// hostCgroup is the container's cgroup as the host sees it.
type hostCgroup struct {
	memory, pids, cpu string
	err               error
}

// readHostCgroup reads the memory, pids and CPU limits of the cgroup of
// host process pid (the container's first process), cgroup v1 or v2. It
// needs the engine on this host; otherwise err says why.
func readHostCgroup(pid int) hostCgroup {
	var h hostCgroup
	if pid <= 0 {
		h.err = fmt.Errorf("the engine gave no host pid for the container")
		return h
	}
	b, err := safefile.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid), 64<<10)
	if err != nil {
		h.err = fmt.Errorf("cannot read the container's cgroup on this host (is the engine local?): %v", err)
		return h
	}
	read := func(p string) string {
		v, err := safefile.ReadFile(p, 4096)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(v))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || strings.Contains(parts[2], "..") {
			continue
		}
		dir := parts[2]
		switch {
		case parts[1] == "": // cgroup v2, or the empty unified tree of a hybrid host
			base := path.Join("/sys/fs/cgroup", dir)
			for _, f := range []struct {
				dst  *string
				file string
			}{{&h.memory, "memory.max"}, {&h.pids, "pids.max"}, {&h.cpu, "cpu.max"}} {
				if v := read(path.Join(base, f.file)); v != "" && *f.dst == "" {
					*f.dst = v
				}
			}
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			h.memory = read(path.Join("/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes"))
		case parts[1] == "pids":
			h.pids = read(path.Join("/sys/fs/cgroup/pids", dir, "pids.max"))
		case slices.Contains(strings.Split(parts[1], ","), "cpu"):
			base := path.Join("/sys/fs/cgroup", parts[1], dir)
			if q := read(base + "/cpu.cfs_quota_us"); q != "" {
				h.cpu = q + " " + read(base+"/cpu.cfs_period_us")
			}
		}
	}
	return h
}
