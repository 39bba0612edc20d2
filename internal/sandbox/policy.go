package sandbox

import (
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// Limits are the numbers of the policy. Every field must be set: a zero or
// negative value is refused, never read as "unlimited", and each value must
// stay under its ceiling (see [Limits.Validate]).
type Limits struct {
	NanoCPUs      int64 // CPU quota in units of 1e-9 CPUs
	Memory        int64 // memory in bytes; swap is set equal, so no swap is used
	Pids          int64 // processes and threads in the container
	NoFile        int64 // RLIMIT_NOFILE, soft and hard
	FSize         int64 // RLIMIT_FSIZE in bytes, soft and hard
	TmpfsSize     int64 // size of /tmp in bytes
	TmpfsInodes   int64 // inodes of /tmp
	ResultsSize   int64 // size of /results in bytes (when Spec.Results is set)
	ResultsInodes int64 // inodes of /results
	OutputCap     int64 // bytes kept of stdout and of stderr each; the rest is drained and dropped
	Deadline      time.Duration
}

// DefaultLimits returns the limits used when a caller has no reason to
// choose others: one CPU, 512 MiB, 128 processes, 60 s.
func DefaultLimits() Limits {
	return Limits{
		NanoCPUs:      1e9,
		Memory:        512 << 20,
		Pids:          128,
		NoFile:        128,
		FSize:         8 << 20,
		TmpfsSize:     16 << 20,
		TmpfsInodes:   1024,
		ResultsSize:   1 << 20,
		ResultsInodes: 64,
		OutputCap:     1 << 20,
		Deadline:      60 * time.Second,
	}
}

// ceilings bound every limit; a Spec asking for more is refused.
var ceilings = Limits{
	NanoCPUs:      64e9,
	Memory:        64 << 30,
	Pids:          4096,
	NoFile:        4096,
	FSize:         1 << 30,
	TmpfsSize:     1 << 30,
	TmpfsInodes:   1 << 20,
	ResultsSize:   256 << 20,
	ResultsInodes: 1 << 16,
	OutputCap:     256 << 20,
	Deadline:      24 * time.Hour,
}

// minimum values that keep the container itself able to start.
const (
	minMemory = 16 << 20
	minPids   = 8
	minNoFile = 16
)

// Validate reports the first limit that is unset or out of range.
func (l Limits) Validate() error {
	check := func(name string, v, ceiling, floor int64) error {
		if v <= 0 {
			return fmt.Errorf("sandbox limit %s is %d: every limit must be set to a positive value", name, v)
		}
		if v < floor {
			return fmt.Errorf("sandbox limit %s is %d: below the minimum %d", name, v, floor)
		}
		if v > ceiling {
			return fmt.Errorf("sandbox limit %s is %d: above the ceiling %d", name, v, ceiling)
		}
		return nil
	}
	for _, c := range []struct {
		name         string
		v, ceil, min int64
	}{
		{"NanoCPUs", l.NanoCPUs, ceilings.NanoCPUs, 1e7},
		{"Memory", l.Memory, ceilings.Memory, minMemory},
		{"Pids", l.Pids, ceilings.Pids, minPids},
		{"NoFile", l.NoFile, ceilings.NoFile, minNoFile},
		{"FSize", l.FSize, ceilings.FSize, 1},
		{"TmpfsSize", l.TmpfsSize, ceilings.TmpfsSize, 4096},
		{"TmpfsInodes", l.TmpfsInodes, ceilings.TmpfsInodes, 4},
		{"ResultsSize", l.ResultsSize, ceilings.ResultsSize, 4096},
		{"ResultsInodes", l.ResultsInodes, ceilings.ResultsInodes, 2},
		{"OutputCap", l.OutputCap, ceilings.OutputCap, 1},
		{"Deadline", int64(l.Deadline), int64(ceilings.Deadline), int64(100 * time.Millisecond)},
	} {
		if err := check(c.name, c.v, c.ceil, c.min); err != nil {
			return err
		}
	}
	return nil
}

// Paths inside the container.
const (
	TmpDir = "/tmp"
	// MqueueDir is where the engine would mount the container's message
	// queue file system; the policy mounts an empty read-only tmpfs there.
	MqueueDir  = "/dev/mqueue"
	ResultsDir = "/results"
)

// reservedTargets may not be used as mount targets, nor anything below them.
var reservedTargets = []string{"/proc", "/sys", "/dev", TmpDir, ResultsDir, "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/run", "/var"}

// baseEnv is the whole environment of every program, before Spec.Env. The
// engine adds HOSTNAME; nothing of the host environment reaches a container.
var baseEnv = map[string]string{
	"PATH":                    "/usr/local/bin:/usr/bin:/bin",
	"LANG":                    "C.UTF-8",
	"LC_ALL":                  "C.UTF-8",
	"HOME":                    TmpDir,
	"TMPDIR":                  TmpDir,
	"PYTHONHASHSEED":          "0",
	"PYTHONDONTWRITEBYTECODE": "1",
}

// Hostname is the fixed host name of every container.
const Hostname = "sandbox"

// Fixed unprivileged ids. The program runs as the host user (ProgramUser
// when repro runs as root); init and the holder run as HolderUser, so the
// program can neither signal nor inspect them.
const (
	ProgramUser = 65532
	HolderUser  = 65533
	altHolder   = 65531
)

// users returns the uid:gid of the program and of the holder.
func users() (program, holder string) {
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = ProgramUser, ProgramUser
	}
	h := HolderUser
	if uid == h || gid == h {
		h = altHolder
	}
	return fmt.Sprintf("%d:%d", uid, gid), fmt.Sprintf("%d:%d", h, h)
}

type ulimit = container.Ulimit

// policy is the container configuration derived from a Spec. It is built in
// one place, buildPolicy, and never altered by options.
type policy struct {
	config   *container.Config
	host     *container.HostConfig
	execUser string
	env      []string
	workdir  string
	// launcher: every program starts through the seccomp launcher (under
	// runsc, which applies the container's profile to its init only).
	launcher bool
	// launchProfile is the profile the launcher installs: the engine's.
	launchProfile string
}

// holderCmd keeps the container alive while programs run in it. It needs
// nothing but coreutils.
var holderCmd = []string{"/bin/sleep", "infinity"}

// PidsEnforcement is how a runtime holds a program to Limits.Pids.
type PidsEnforcement struct {
	Runtime Runtime `json:"runtime"`
	// Cgroup is the host pids cgroup limit of the container.
	Cgroup int64 `json:"pids_cgroup"`
	// NProc, when set, is the RLIMIT_NPROC (soft = hard) of the program
	// user, counted by gVisor's kernel inside the sandbox.
	NProc int64 `json:"nproc,omitempty"`
}

// gVisor's own processes count against the host pids cgroup: an idle
// sandbox held about 55 host threads, and each process of the program
// about 5 more, on the ptrace platform of runsc 0.0~20221219 (100 forks:
// 568); on systrap (RunscTested) 27 and 2 more (100 forks: 227).
// Reaching the cgroup limit kills the whole sandbox rather than failing
// the program's fork, so under runsc the program's budget is
// RLIMIT_NPROC, which gVisor's kernel counts per user inside the sandbox
// (its own uid namespace: no other container shares the count), and the
// cgroup stays as a backstop above what that budget can use.
const (
	runscPidsBase    = 96
	runscPidsPerTask = 8
)

// EnforcePids returns how rt holds a program to pids processes and
// threads: under runc the container's pids cgroup is pids; under runsc the
// program user's RLIMIT_NPROC is pids and the cgroup leaves room for
// gVisor's own threads.
func EnforcePids(rt Runtime, pids int64) PidsEnforcement {
	if rt == Runsc {
		return PidsEnforcement{Runtime: rt, Cgroup: runscPidsBase + runscPidsPerTask*pids, NProc: pids}
	}
	return PidsEnforcement{Runtime: rt, Cgroup: pids}
}

func buildPolicy(s Spec, rt Runtime, imageID, resultsVolume string, labels map[string]string) (*policy, error) {
	if _, err := ParseRuntime(string(rt)); err != nil {
		return nil, err
	}
	l := s.Limits
	if err := l.Validate(); err != nil {
		return nil, err
	}
	env, err := envList(s.Env)
	if err != nil {
		return nil, err
	}
	progUser, holdUser := users()
	mounts, err := bindMounts(s.ReadOnly)
	if err != nil {
		return nil, err
	}
	if resultsVolume != "" {
		mounts = append(mounts, mount.Mount{
			Type:          mount.TypeVolume,
			Source:        resultsVolume,
			Target:        ResultsDir,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		})
	}
	workdir := "/"
	if s.Dir != "" {
		if !path.IsAbs(s.Dir) || path.Clean(s.Dir) != s.Dir {
			return nil, fmt.Errorf("sandbox working folder %q must be an absolute, clean path", s.Dir)
		}
		workdir = s.Dir
	}
	init := true
	pe := EnforcePids(rt, l.Pids)
	pids := pe.Cgroup
	ulimits := []*container.Ulimit{
		{Name: "core", Soft: 0, Hard: 0},
		{Name: "nofile", Soft: l.NoFile, Hard: l.NoFile},
		{Name: "fsize", Soft: l.FSize, Hard: l.FSize},
	}
	if pe.NProc > 0 {
		ulimits = append(ulimits, &container.Ulimit{Name: "nproc", Soft: pe.NProc, Hard: pe.NProc})
	}
	cfg := &container.Config{
		Hostname:        Hostname,
		User:            holdUser,
		Env:             env,
		Cmd:             slices.Clone(holderCmd),
		Image:           imageID,
		WorkingDir:      "/",
		NetworkDisabled: true,
		Labels:          labels,
		AttachStdout:    false,
		AttachStderr:    false,
		AttachStdin:     false,
		OpenStdin:       false,
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + string(seccompProfile)},
		Init:           &init,
		IpcMode:        "none",
		CgroupnsMode:   "private",
		LogConfig:      container.LogConfig{Type: "none"},
		RestartPolicy:  container.RestartPolicy{Name: "no"},
		Runtime:        string(rt),
		Tmpfs: map[string]string{
			TmpDir: tmpfsOptions(l.TmpfsSize, l.TmpfsInodes, "1777", ""),
			// In place of the engine's mqueue mount, writable by all, where
			// open(O_CREAT) would leave a name for the next program: an
			// empty read-only tmpfs (the mq_* calls are refused by seccomp).
			MqueueDir: mqueueOptions,
		},
		Mounts: mounts,
		Resources: container.Resources{
			NanoCPUs:   l.NanoCPUs,
			Memory:     l.Memory,
			MemorySwap: l.Memory,
			PidsLimit:  &pids,
			Ulimits:    ulimits,
		},
	}
	return &policy{config: cfg, host: host, execUser: progUser, env: env, workdir: workdir, launcher: rt == Runsc, launchProfile: string(seccompProfile)}, nil
}

// mqueueOptions are the mount options of MqueueDir.
const mqueueOptions = "ro,noexec,nosuid,nodev,size=4096,nr_inodes=16,mode=0555"

// tmpfsOptions formats mount options for a tmpfs that never allows
// executables, setuid files or devices.
func tmpfsOptions(size, inodes int64, mode, owner string) string {
	opts := []string{"rw", "noexec", "nosuid", "nodev",
		"size=" + strconv.FormatInt(size, 10),
		"nr_inodes=" + strconv.FormatInt(inodes, 10),
		"mode=" + mode}
	if owner != "" {
		uid, gid, _ := strings.Cut(owner, ":")
		opts = append(opts, "uid="+uid, "gid="+gid)
	}
	return strings.Join(opts, ",")
}

// resultsVolumeOptions are the local-driver options of a results volume: a
// tmpfs owned by the program user, mounted by the engine, visible to the
// archive API while the container lives.
func resultsVolumeOptions(l Limits) map[string]string {
	prog, _ := users()
	return map[string]string{
		"type":   "tmpfs",
		"device": "tmpfs",
		"o":      tmpfsOptions(l.ResultsSize, l.ResultsInodes, "0700", prog),
	}
}

func envList(extra map[string]string) ([]string, error) {
	env := make(map[string]string, len(baseEnv)+len(extra))
	for k, v := range baseEnv {
		env[k] = v
	}
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("sandbox environment variable %q: invalid name or value", k)
		}
		if _, ok := baseEnv[k]; ok {
			return nil, fmt.Errorf("sandbox environment variable %s is fixed by the policy and cannot be set", k)
		}
		if k == "HOSTNAME" || k == launcherEnv || strings.HasPrefix(k, "LD_") || strings.HasPrefix(k, "PYTHONHOME") {
			return nil, fmt.Errorf("sandbox environment variable %s is not allowed", k)
		}
		env[k] = v
	}
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list, nil
}

func bindMounts(ms []Mount) ([]mount.Mount, error) {
	out := make([]mount.Mount, 0, len(ms))
	seen := make(map[string]bool)
	for _, m := range ms {
		if !path.IsAbs(m.Target) || path.Clean(m.Target) != m.Target || m.Target == "/" {
			return nil, fmt.Errorf("sandbox mount target %q must be an absolute, clean path below /", m.Target)
		}
		for _, r := range reservedTargets {
			if m.Target == r || strings.HasPrefix(m.Target, r+"/") {
				return nil, fmt.Errorf("sandbox mount target %q is reserved by the policy", m.Target)
			}
		}
		if seen[m.Target] {
			return nil, fmt.Errorf("sandbox mount target %q is used twice", m.Target)
		}
		seen[m.Target] = true
		if !isAbsHost(m.Source) {
			return nil, fmt.Errorf("sandbox mount source %q must be an absolute path", m.Source)
		}
		fi, err := os.Lstat(m.Source)
		if err != nil {
			return nil, fmt.Errorf("sandbox mount source: %w", err)
		}
		if fi.Mode()&os.ModeSymlink != 0 || !(fi.Mode().IsRegular() || fi.IsDir()) {
			return nil, fmt.Errorf("sandbox mount source %s must be a regular file or a folder, not a link or special file", m.Source)
		}
		out = append(out, mount.Mount{
			Type:        mount.TypeBind,
			Source:      m.Source,
			Target:      m.Target,
			ReadOnly:    true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	return out, nil
}

func isAbsHost(p string) bool { return len(p) > 1 && p[0] == '/' && path.Clean(p) == p }
