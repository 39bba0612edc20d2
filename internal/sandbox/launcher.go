package sandbox

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"syscall"

	seccompbpf "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"

	"github.com/reprolab/repro/internal/strictjson"
)

// Under runsc the engine's seccomp profile reaches the container's init
// process only, not the programs an engine exec starts. Every program then
// starts through launcherCmd: the image's python3 sets no_new_privs,
// installs the profile compiled here to a classic BPF program, and execs the
// real command. The filter holds for the program and everything it forks or
// execs, and no process can remove it.

// launcherEnv carries the BPF program (hex) to the launcher; the launcher
// removes it from the environment before it execs the command.
const launcherEnv = "REPRO_SECCOMP_BPF"

// launcherSource is run by "python3 -I -S -c". It fails closed: when a
// step fails, it prints one line and exits 126 without running the command.
const launcherSource = `import ctypes, os, sys
def fail(what):
    os.write(2, ("repro launcher: %s failed (errno %d): the program did not run\n" % (what, ctypes.get_errno())).encode())
    os._exit(126)
try:
    prog = bytes.fromhex(os.environ.pop("` + launcherEnv + `"))
except (KeyError, ValueError):
    os.write(2, b"repro launcher: no seccomp program: the program did not run\n")
    os._exit(126)
if len(prog) == 0 or len(prog) % 8 or len(prog) // 8 > 4096:
    os.write(2, b"repro launcher: bad seccomp program length: the program did not run\n")
    os._exit(126)
libc = ctypes.CDLL(None, use_errno=True)
class fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
buf = ctypes.create_string_buffer(prog, len(prog))
fp = fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
if libc.prctl(38, 1, 0, 0, 0) != 0:
    fail("prctl(PR_SET_NO_NEW_PRIVS)")
if libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    fail("prctl(PR_SET_SECCOMP)")
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as e:
    os.write(2, ("repro launcher: %s: %s\n" % (sys.argv[1], e.strerror)).encode())
    os._exit(127)
`

// launcherCmd is prepended to a program's command under the launcher.
var launcherCmd = []string{"/usr/bin/python3", "-I", "-S", "-c", launcherSource}

// jsonProfile is the part of the engine's seccomp profile format that
// CompileSeccomp reads; any other field, action or operator is refused.
type jsonProfile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *uint32  `json:"defaultErrnoRet"`
	Architectures   []string `json:"architectures"`
	Syscalls        []struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet *uint32  `json:"errnoRet"`
		Args     []struct {
			Index    uint32 `json:"index"`
			Value    uint64 `json:"value"`
			ValueTwo uint64 `json:"valueTwo"`
			Op       string `json:"op"`
		} `json:"args"`
	} `json:"syscalls"`
}

// nativeArch maps the host's architecture to its name in the profile.
var nativeArch = map[string]string{"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}

// CompileSeccomp compiles a seccomp profile in the engine's JSON format
// into a classic BPF program for this host's architecture, as the kernel's
// struct sock_filter array in native byte order. Its semantics are the
// profile's: a listed call is answered by its rule's action (argument rules
// of one call are alternatives, the comparisons of one rule all hold), and
// anything else, a call of another architecture included, gets the default
// errno. On x86_64 the x32 ABI is answered ENOSYS. A profile that names an
// action or comparison this compiler does not know, that gives one call two
// different actions, or that does not list the host's architecture is
// refused.
func CompileSeccomp(profile []byte) ([]byte, error) {
	var jp jsonProfile
	if err := strictjson.Decode(profile, &jp); err != nil {
		return nil, fmt.Errorf("seccomp profile: %v", err)
	}
	ai, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %v", err)
	}
	if !slices.Contains(jp.Architectures, nativeArch[ai.Name]) {
		return nil, fmt.Errorf("seccomp profile does not list this host's architecture %s", ai.Name)
	}
	action := func(name string, errno *uint32) (seccompbpf.Action, error) {
		switch name {
		case "SCMP_ACT_ALLOW":
			return seccompbpf.ActionAllow, nil
		case "SCMP_ACT_ERRNO":
			e := uint32(1)
			if errno != nil {
				e = *errno
			} else if jp.DefaultErrnoRet != nil {
				e = *jp.DefaultErrnoRet
			}
			if e == 0 || e > 4095 {
				return 0, fmt.Errorf("seccomp profile: errno %d out of range", e)
			}
			return seccompbpf.ActionErrno | seccompbpf.Action(e), nil
		}
		return 0, fmt.Errorf("seccomp profile: action %q is not supported", name)
	}
	def, err := action(jp.DefaultAction, jp.DefaultErrnoRet)
	if err != nil {
		return nil, err
	}
	if def&^0xffff != seccompbpf.ActionErrno {
		return nil, fmt.Errorf("seccomp profile: a default action other than an errno is not supported")
	}
	var groups []seccompbpf.SyscallGroup
	seen := map[string]seccompbpf.Action{}
	for _, r := range jp.Syscalls {
		act, err := action(r.Action, r.ErrnoRet)
		if err != nil {
			return nil, err
		}
		var conds seccompbpf.ArgumentConditions
		for _, a := range r.Args {
			if a.Index > 5 {
				return nil, fmt.Errorf("seccomp profile: argument index %d out of range", a.Index)
			}
			c := seccompbpf.Condition{Argument: a.Index, Value: a.Value}
			switch a.Op {
			case "SCMP_CMP_EQ":
				c.Operation = seccompbpf.Equal
			case "SCMP_CMP_NE":
				c.Operation = seccompbpf.NotEqual
			case "SCMP_CMP_MASKED_EQ":
				// (arg & mask) == 0 is "no bit of mask set"; other
				// masked comparisons have no equivalent here.
				if a.ValueTwo != 0 {
					return nil, fmt.Errorf("seccomp profile: masked comparison with a non-zero value is not supported")
				}
				c.Operation = seccompbpf.BitsNotSet
			default:
				return nil, fmt.Errorf("seccomp profile: comparison %q is not supported", a.Op)
			}
			if a.Op != "SCMP_CMP_MASKED_EQ" && a.ValueTwo != 0 {
				return nil, fmt.Errorf("seccomp profile: valueTwo is set for %s", a.Op)
			}
			conds = append(conds, c)
		}
		g := seccompbpf.SyscallGroup{Action: act}
		for _, n := range r.Names {
			if prev, ok := seen[n]; ok && prev != act {
				return nil, fmt.Errorf("seccomp profile: %s has two different actions", n)
			}
			seen[n] = act
			if _, ok := ai.SyscallNames[n]; !ok {
				continue // not a call of this architecture
			}
			if len(conds) == 0 {
				g.Names = append(g.Names, n)
			} else {
				g.NamesWithCondtions = append(g.NamesWithCondtions, seccompbpf.NameWithConditions{Name: n, Conditions: conds})
			}
		}
		if len(g.Names)+len(g.NamesWithCondtions) > 0 {
			groups = append(groups, g)
		}
	}
	insts, err := assemble(ai, groups, def)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %v", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// continueAction marks, in a group's program, the end of the group: the
// call did not match it. The profile never uses the trace action.
const continueAction = seccompbpf.ActionTrace

// assemble builds the whole program: the architecture check, the x32
// check on x86_64, then one block per group, each assembled by the
// library, then the default action. The library assembles a policy of
// several groups with the argument of a failed condition still in the
// accumulator where the next group compares the call number, so a call
// whose argument equals another call's number could match that call's
// rule. Here every block starts by loading the call number again, and a
// block's "no match" continues with the next block.
func assemble(ai *arch.Info, groups []seccompbpf.SyscallGroup, def seccompbpf.Action) ([]bpf.Instruction, error) {
	var body []bpf.Instruction
	for _, g := range groups {
		pol := seccompbpf.Policy{DefaultAction: continueAction, Syscalls: []seccompbpf.SyscallGroup{g}}
		insts, err := pol.Assemble()
		if err != nil {
			return nil, fmt.Errorf("seccomp profile: %v", err)
		}
		// Drop the library's prelude: the architecture check, the load
		// of the call number and, on x86_64, the x32 check.
		i := slices.Index(insts, bpf.Instruction(bpf.LoadAbsolute{Off: 0, Size: 4}))
		if i < 0 {
			return nil, fmt.Errorf("seccomp profile: unexpected program from the assembler")
		}
		i++
		if j, ok := insts[i].(bpf.JumpIf); ok && j.Val == uint32(arch.X32.SeccompMask) {
			i += 2
		}
		block := insts[i:]
		for k, in := range block {
			if r, ok := in.(bpf.RetConstant); ok && r.Val == uint32(continueAction) {
				block[k] = bpf.Jump{Skip: uint32(len(block) - 1 - k)}
			}
		}
		body = append(body, bpf.LoadAbsolute{Off: 0, Size: 4})
		body = append(body, block...)
	}
	deny := bpf.RetConstant{Val: uint32(def)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		// Another architecture's call: the default action.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(ai.ID), SkipTrue: 1},
		deny,
	}
	if ai.ID == arch.X86_64.ID {
		// The x32 ABI shares the architecture value; answer ENOSYS.
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(arch.X32.SeccompMask), SkipFalse: 1},
			bpf.RetConstant{Val: uint32(seccompbpf.ActionErrno) | uint32(syscall.ENOSYS)},
		)
	}
	prog = append(append(prog, body...), deny)
	if len(prog) > 4096 {
		return nil, fmt.Errorf("seccomp profile: %d instructions, over the kernel's 4096", len(prog))
	}
	return prog, nil
}

var compiled sync.Map // profile string -> compiledProfile

type compiledProfile struct {
	prog []byte
	err  error
}

// compileCached is CompileSeccomp, once per distinct profile.
func compileCached(profile string) ([]byte, error) {
	if v, ok := compiled.Load(profile); ok {
		c := v.(compiledProfile)
		return c.prog, c.err
	}
	prog, err := CompileSeccomp([]byte(profile))
	compiled.Store(profile, compiledProfile{prog, err})
	return prog, err
}

// launch returns cmd and env as the engine must exec them: under the
// launcher, with the policy's seccomp profile compiled, when p uses it;
// unchanged otherwise.
func (p *policy) launch(cmd, env []string) ([]string, []string, error) {
	if !p.launcher {
		return cmd, env, nil
	}
	prog, err := compileCached(p.launchProfile)
	if err != nil {
		return nil, nil, err
	}
	return append(slices.Clone(launcherCmd), cmd...), append(slices.Clone(env), launcherEnv+"="+hex.EncodeToString(prog)), nil
}
