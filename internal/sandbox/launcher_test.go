package sandbox_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
	"golang.org/x/net/bpf"
)

// profileRule is one rule of the JSON profile, as the engine reads it.
type profileRule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint32  `json:"errnoRet"`
	Args     []struct {
		Index    int    `json:"index"`
		Value    uint64 `json:"value"`
		ValueTwo uint64 `json:"valueTwo"`
		Op       string `json:"op"`
	} `json:"args"`
}

// profileVerdict evaluates the JSON profile the way libseccomp does for a
// call of this host's architecture: the seccomp return value.
func profileVerdict(t *testing.T, name string, args [6]uint64) uint32 {
	t.Helper()
	var prof struct {
		DefaultErrnoRet uint32        `json:"defaultErrnoRet"`
		Syscalls        []profileRule `json:"syscalls"`
	}
	if err := json.Unmarshal(sandbox.SeccompProfile(), &prof); err != nil {
		t.Fatal(err)
	}
	for _, r := range prof.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		match := true
		for _, a := range r.Args {
			v := args[a.Index]
			switch a.Op {
			case "SCMP_CMP_EQ":
				match = match && v == a.Value
			case "SCMP_CMP_NE":
				match = match && v != a.Value
			case "SCMP_CMP_MASKED_EQ":
				match = match && v&a.Value == a.ValueTwo
			default:
				t.Fatalf("operator %s not known to this test", a.Op)
			}
		}
		if !match {
			continue
		}
		switch r.Action {
		case "SCMP_ACT_ALLOW":
			return 0x7fff0000
		case "SCMP_ACT_ERRNO":
			e := prof.DefaultErrnoRet
			if r.ErrnoRet != nil {
				e = *r.ErrnoRet
			}
			return 0x00050000 | e
		}
		t.Fatalf("action %s not known to this test", r.Action)
	}
	return 0x00050000 | prof.DefaultErrnoRet
}

// runFilter runs the compiled program on one struct seccomp_data. The VM
// loads words big-endian, so each 32-bit word of the native layout is
// written big-endian: the loads see the values the kernel's would.
func runFilter(t *testing.T, vm *bpf.VM, nr, auditArch uint32, args [6]uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	be := binary.BigEndian
	be.PutUint32(data[0:], nr)
	be.PutUint32(data[4:], auditArch)
	for i, a := range args {
		lo, hi := uint32(a), uint32(a>>32)
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big-endian host
			lo, hi = hi, lo
		}
		be.PutUint32(data[16+8*i:], lo)
		be.PutUint32(data[20+8*i:], hi)
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

func compiledVM(t *testing.T) *bpf.VM {
	t.Helper()
	prog, err := sandbox.CompileSeccomp(sandbox.SeccompProfile())
	if err != nil {
		t.Fatal(err)
	}
	var insts []bpf.Instruction
	for i := 0; i+8 <= len(prog); i += 8 {
		raw := bpf.RawInstruction{Op: binary.NativeEndian.Uint16(prog[i:]), Jt: prog[i+2], Jf: prog[i+3], K: binary.NativeEndian.Uint32(prog[i+4:])}
		insts = append(insts, raw.Disassemble())
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// TestCompiledSeccompAgreesWithProfile runs the launcher's BPF program on
// every call of this architecture, each with argument patterns that cross
// the profile's argument rules, and requires the verdict the JSON profile
// gives; then the answers outside the profile's table.
func TestCompiledSeccompAgreesWithProfile(t *testing.T) {
	ai, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	vm := compiledVM(t)
	patterns := [][6]uint64{
		{}, {1}, {40}, {1 << 32}, {40 | 1<<32}, {0xffffffff}, {8}, {131072}, {131080}, {0x0400000},
		{17}, {0x10000000 | 17}, {0x7E020000}, {1, 40}, {0, 1, 2, 3, 4, 5}, {^uint64(0)},
	}
	// An argument equal to the number of a call with argument rules: a
	// filter that compares a stale argument with call numbers matches
	// the wrong rule.
	for _, c := range []string{"personality", "clone", "clone3", "socket", "prlimit64", "sched_setaffinity", "setpriority", "ioprio_set"} {
		if nr, ok := ai.SyscallNames[c]; ok {
			patterns = append(patterns, [6]uint64{uint64(nr)}, [6]uint64{uint64(nr), uint64(nr)})
		}
	}
	n := 0
	for name, nr := range ai.SyscallNames {
		for _, args := range patterns {
			want := profileVerdict(t, name, args)
			if got := runFilter(t, vm, uint32(nr), uint32(ai.ID), args); got != want {
				t.Errorf("%s%v: compiled filter returns %#x, the profile %#x", name, args, got, want)
			}
			n++
		}
	}
	if n < 300*len(patterns) {
		t.Fatalf("only %d calls checked", n)
	}
	const ret = 0x00050000
	nrOf := func(s string) uint32 { return uint32(ai.SyscallNames[s]) }
	for _, c := range []struct {
		what      string
		nr, arch  uint32
		args      [6]uint64
		want      uint32
		onlyArchs []string
	}{
		{"clone3 answers ENOSYS so that libc falls back to clone", nrOf("clone3"), uint32(ai.ID), [6]uint64{}, ret | uint32(syscall.ENOSYS), nil},
		{"unlisted call", nrOf("unshare"), uint32(ai.ID), [6]uint64{}, ret | uint32(syscall.EPERM), nil},
		{"prlimit64 on another process", nrOf("prlimit64"), uint32(ai.ID), [6]uint64{42}, ret | uint32(syscall.EPERM), nil},
		{"prlimit64 on the caller", nrOf("prlimit64"), uint32(ai.ID), [6]uint64{0}, 0x7fff0000, nil},
		{"personality with clone's number", nrOf("personality"), uint32(ai.ID), [6]uint64{uint64(nrOf("clone"))}, ret | uint32(syscall.EPERM), nil},
		{"AF_VSOCK socket", nrOf("socket"), uint32(ai.ID), [6]uint64{40}, ret | uint32(syscall.EPERM), nil},
		{"a call of another architecture (i386 read)", 3, 0x40000003, [6]uint64{}, ret | uint32(syscall.EPERM), nil},
		{"an x32 call", 0x40000000 | nrOf("getpid"), uint32(ai.ID), [6]uint64{}, ret | uint32(syscall.ENOSYS), []string{"x86_64"}},
	} {
		if c.onlyArchs != nil && !slices.Contains(c.onlyArchs, ai.Name) {
			continue
		}
		if got := runFilter(t, vm, c.nr, c.arch, c.args); got != c.want {
			t.Errorf("%s: compiled filter returns %#x, want %#x", c.what, got, c.want)
		}
	}
}

// TestCompileSeccompRefuses: a profile the compiler cannot translate
// faithfully is refused, never approximated.
func TestCompileSeccompRefuses(t *testing.T) {
	base := string(sandbox.SeccompProfile())
	for name, prof := range map[string]string{
		"unknown field":       strings.Replace(base, `"defaultAction"`, `"listenerPath": "/x", "defaultAction"`, 1),
		"unknown action":      strings.Replace(base, `"SCMP_ACT_ALLOW"`, `"SCMP_ACT_NOTIFY"`, 1),
		"unknown comparison":  strings.Replace(base, `"SCMP_CMP_EQ"`, `"SCMP_CMP_GT"`, 1),
		"default allow":       strings.Replace(base, `"defaultAction": "SCMP_ACT_ERRNO"`, `"defaultAction": "SCMP_ACT_ALLOW"`, 1),
		"no architecture":     strings.Replace(strings.Replace(base, `"SCMP_ARCH_X86_64"`, `"SCMP_ARCH_X86"`, 1), `"SCMP_ARCH_AARCH64"`, `"SCMP_ARCH_ARM"`, 1),
		"two actions":         strings.Replace(base, `"names": [`+"\n    \"clone3\"", `"names": [`+"\n    \"clone3\", \"read\"", 1),
		"masked with a value": strings.Replace(base, `"value": 2114093056,`+"\n     \"valueTwo\": 0", `"value": 2114093056,`+"\n     \"valueTwo\": 1", 1),
		"not JSON":            base[:100],
	} {
		if prof == base {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if _, err := sandbox.CompileSeccomp([]byte(prof)); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// TestLauncherFilterMatchesEngineProfile runs one probe of system calls
// under runc twice: with the engine's profile (applied by runc through
// libseccomp) and with no engine profile but the launcher's compiled
// filter. The kernel must answer every call the same way.
func TestLauncherFilterMatchesEngineProfile(t *testing.T) {
	e := sandboxtest.EngineRuntime(t, sandbox.Runc)
	img := sandboxtest.Image(t, e)
	ai, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	const self = -1 // the probe's own pid
	type row struct {
		Name string  `json:"name"`
		NR   int     `json:"nr"`
		Args []int64 `json:"args"`
	}
	var rows []row
	add := func(name string, args ...int64) {
		nr, ok := ai.SyscallNames[name]
		if !ok {
			t.Fatalf("no call %s on %s", name, ai.Name)
		}
		rows = append(rows, row{name, nr, args})
	}
	add("getpid")
	add("shmget", 0, 0, 0)
	add("semget", 0, 0, 0)
	add("clone3", 0, 0)
	add("prlimit64", 0, 7, 0, 0)
	add("prlimit64", self, 7, 0, 0)
	add("sched_setaffinity", self, 0, 0)
	add("sched_setaffinity", 0, 0, 0)
	add("setpriority", 0, self, 0)
	add("socket", 40, 1, 0)
	add("socket", 2, 1, 0)
	add("socket", 1, 1, 0)
	add("personality", 0xffffffff)
	add("unshare", 0)
	add("io_uring_setup", 0, 0)
	add("ptrace", 16, 1, 0, 0)
	add("mount", 0, 0, 0, 0, 0)
	add("keyctl", 0, 0, 0)
	add("bpf", 0, 0, 0)
	add("userfaultfd", 0)
	add("perf_event_open", 0, 0, 0, 0, 0)
	add("setns", 0, 0)
	add("process_vm_readv", self, 0, 0, 0, 0, 0)
	add("kcmp", self, self, 0, 0, 0)
	add("add_key", 0, 0, 0, 0, 0)
	table, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf(`
rows = json.loads(%q)
out = []
for r in rows:
    args = [os.getpid() if a == -1 else a for a in r["args"] or []]
    res = libc.syscall(r["nr"], *[ctypes.c_long(a) for a in args])
    out.append([r["name"], r["args"], ctypes.get_errno() if res == -1 else 0])
report(rows=out)
`, table)
	probe := func(e *sandbox.Engine) string {
		r, host := runCase(t, e, img, hostileCase{name: "syscall table", code: code})
		if host != nil {
			t.Errorf("host side: %v", host)
		}
		b, err := json.Marshal(r.report["rows"])
		if err != nil || r.report["rows"] == nil {
			t.Fatalf("no report: %v (stderr %q)", r.report, r.o.Stderr)
		}
		return string(b)
	}
	engine := probe(e)
	launcherOnly := sandboxtest.EngineRuntime(t, sandbox.Runc)
	sandbox.RemoveControl(launcherOnly, "launcher only")
	launched := probe(launcherOnly)
	unconfined := sandboxtest.EngineRuntime(t, sandbox.Runc)
	sandbox.RemoveControl(unconfined, "seccomp entirely")
	open := probe(unconfined)
	t.Logf("engine profile: %s", engine)
	if launched != engine {
		t.Errorf("the launcher's filter answers differently from the engine's profile:\nlauncher %s\nengine   %s", launched, engine)
	}
	// The table must tell a filter from none: some calls are answered
	// differently without any filter.
	if open == engine {
		t.Errorf("the probe answers the same with no filter at all: it does not test the filter\n%s", open)
	}
	for _, want := range []string{`["clone3",[0,0],38]`, `["shmget",[0,0,0],1]`, `["prlimit64",[-1,7,0,0],1]`, `["prlimit64",[0,7,0,0],0]`, `["socket",[40,1,0],1]`, `["socket",[2,1,0],1]`} {
		if !bytes.Contains([]byte(launched), []byte(want)) {
			t.Errorf("launcher probe lacks %s: %s", want, launched)
		}
	}
}
