package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits().Validate(); err != nil {
		t.Fatalf("default limits: %v", err)
	}
	for name, change := range map[string]func(*Limits){
		"zero memory":       func(l *Limits) { l.Memory = 0 },
		"negative pids":     func(l *Limits) { l.Pids = -1 },
		"unset deadline":    func(l *Limits) { l.Deadline = 0 },
		"huge output cap":   func(l *Limits) { l.OutputCap = 1 << 40 },
		"tiny memory":       func(l *Limits) { l.Memory = 1 << 20 },
		"zero tmpfs inodes": func(l *Limits) { l.TmpfsInodes = 0 },
		"long deadline":     func(l *Limits) { l.Deadline = 48 * time.Hour },
	} {
		l := DefaultLimits()
		change(&l)
		if err := l.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestBuildPolicyHasEveryControl: every control is in the policy under
// each runtime; only the pids enforcement differs (EnforcePids).
func TestBuildPolicyHasEveryControl(t *testing.T) {
	for _, rt := range Runtimes {
		t.Run(string(rt), func(t *testing.T) { testPolicyControls(t, rt) })
	}
	if _, err := buildPolicy(Spec{Cmd: []string{"true"}, Limits: DefaultLimits()}, "kata", "sha256:"+strings.Repeat("a", 64), "", nil); err == nil {
		t.Error("an unknown runtime was accepted")
	}
}

func testPolicyControls(t *testing.T, rt Runtime) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "s.py")
	os.WriteFile(sample, []byte("x"), 0o444)
	l := DefaultLimits()
	p, err := buildPolicy(Spec{Cmd: []string{"true"}, Limits: l, ReadOnly: []Mount{{Source: sample, Target: "/workspace/s.py"}}},
		rt, "sha256:"+strings.Repeat("a", 64), "vol", map[string]string{LabelKey: "1"})
	if err != nil {
		t.Fatal(err)
	}
	h, c := p.host, p.config
	checks := map[string]bool{
		"network none":        h.NetworkMode == "none" && c.NetworkDisabled,
		"read-only root":      h.ReadonlyRootfs,
		"cap-drop ALL":        slices.Equal(h.CapDrop, []string{"ALL"}) && len(h.CapAdd) == 0,
		"no-new-privileges":   slices.Contains(h.SecurityOpt, "no-new-privileges:true"),
		"seccomp profile":     slices.Contains(h.SecurityOpt, "seccomp="+string(seccompProfile)),
		"init":                h.Init != nil && *h.Init,
		"ipc none":            h.IpcMode == "none",
		"log driver none":     h.LogConfig.Type == "none",
		"not privileged":      !h.Privileged,
		"cpu":                 h.NanoCPUs == l.NanoCPUs,
		"memory, no swap":     h.Memory == l.Memory && h.MemorySwap == l.Memory,
		"runtime":             h.Runtime == string(rt),
		"pids":                h.PidsLimit != nil && *h.PidsLimit == EnforcePids(rt, l.Pids).Cgroup && *h.PidsLimit >= l.Pids,
		"nproc under runsc":   rt != Runsc || hasUlimit(h.Ulimits, "nproc", l.Pids),
		"no nproc under runc": rt != Runc || !hasUlimitNamed(h.Ulimits, "nproc"),
		"ulimit core 0":       hasUlimit(h.Ulimits, "core", 0),
		"ulimit nofile":       hasUlimit(h.Ulimits, "nofile", l.NoFile),
		"ulimit fsize":        hasUlimit(h.Ulimits, "fsize", l.FSize),
		"noexec capped /tmp":  strings.Contains(h.Tmpfs[TmpDir], "noexec,nosuid,nodev") && strings.Contains(h.Tmpfs[TmpDir], "nr_inodes="),
		"non-root program":    p.execUser != "0:0" && !strings.HasPrefix(p.execUser, "0:"),
		"non-root holder":     c.User != "" && !strings.HasPrefix(c.User, "0:") && c.User != p.execUser,
		"read-only binds":     len(h.Mounts) == 2 && h.Mounts[0].ReadOnly && h.Mounts[0].Type == "bind",
		"results volume":      h.Mounts[1].Type == "volume" && h.Mounts[1].Target == ResultsDir,
		"no restart":          h.RestartPolicy.Name == "no" && !h.AutoRemove,
		"fixed environment":   slices.Contains(p.env, "PYTHONHASHSEED=0") && len(p.env) == len(baseEnv),
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("policy lacks %s", name)
		}
	}
	if o := resultsVolumeOptions(l)["o"]; !strings.Contains(o, "noexec,nosuid,nodev") || !strings.Contains(o, "nr_inodes=") || !strings.Contains(o, "size=") {
		t.Errorf("results volume options %q", o)
	}
}

func hasUlimitNamed(us []*ulimit, name string) bool {
	return slices.ContainsFunc(us, func(u *ulimit) bool { return u.Name == name })
}

func hasUlimit(us []*ulimit, name string, v int64) bool {
	for _, u := range us {
		if u.Name == name {
			return u.Soft == v && u.Hard == v
		}
	}
	return false
}

func TestEnvList(t *testing.T) {
	env, err := envList(map[string]string{"REPRO_TASK": "HumanEval/0"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(env) || !slices.Contains(env, "REPRO_TASK=HumanEval/0") || !slices.Contains(env, "PYTHONHASHSEED=0") {
		t.Errorf("env %v", env)
	}
	for _, bad := range []map[string]string{
		{"PYTHONHASHSEED": "1"}, {"PATH": "/tmp"}, {"LD_PRELOAD": "/tmp/x.so"}, {"A=B": "c"}, {"": "x"}, {"X": "a\x00b"}, {"HOSTNAME": "x"},
	} {
		if _, err := envList(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func TestBindMounts(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, nil, 0o444)
	link := filepath.Join(dir, "link")
	os.Symlink(f, link)
	for _, m := range []Mount{
		{Source: f, Target: "relative"},
		{Source: f, Target: "/"},
		{Source: f, Target: "/tmp/x"},
		{Source: f, Target: "/results"},
		{Source: f, Target: "/proc/x"},
		{Source: f, Target: "/etc/passwd"},
		{Source: f, Target: "/data/../etc"},
		{Source: "relative", Target: "/data"},
		{Source: link, Target: "/data"},
		{Source: filepath.Join(dir, "missing"), Target: "/data"},
	} {
		if _, err := bindMounts([]Mount{m}); err == nil {
			t.Errorf("accepted %+v", m)
		}
	}
	if _, err := bindMounts([]Mount{{Source: f, Target: "/data"}, {Source: dir, Target: "/data"}}); err == nil {
		t.Error("accepted a target used twice")
	}
	ms, err := bindMounts([]Mount{{Source: f, Target: "/data/f"}, {Source: dir, Target: "/workspace"}})
	if err != nil || len(ms) != 2 || !ms[0].ReadOnly || !ms[1].ReadOnly {
		t.Errorf("mounts %+v, %v", ms, err)
	}
}

func TestLabels(t *testing.T) {
	dl := time.Now().Add(time.Minute)
	l, err := baseLabels(dl, map[string]string{"org.example": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if l[LabelKey] != "1" || l["org.example"] != "x" || expired(l, time.Now().Unix()) || !expired(l, dl.Add(sweepGrace+2*time.Second).Unix()) {
		t.Errorf("labels %v", l)
	}
	if _, err := baseLabels(dl, map[string]string{LabelDeadline: "0"}); err == nil {
		t.Error("a caller could set the deadline label")
	}
	if !expired(map[string]string{}, 0) || !expired(map[string]string{LabelDeadline: "soon"}, 0) {
		t.Error("a missing or malformed deadline must count as expired")
	}
}
