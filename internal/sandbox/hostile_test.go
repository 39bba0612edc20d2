package sandbox_test

// The hostile conformance suite: one test per technique of the threat
// catalogue, each run in a real container under the real policy, each
// asserting the verdict the runner reaches and the host side (no container
// or volume left, no process left, samples and dataset unchanged, no
// log file). TestControlsAreNeeded proves that the suite fails when a
// control is taken out of the policy.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// testLimits are small so that every bomb hits its wall quickly.
func testLimits() sandbox.Limits {
	return sandbox.Limits{
		NanoCPUs:      1e9,
		Memory:        64 << 20,
		Pids:          32,
		NoFile:        64,
		FSize:         1 << 20,
		TmpfsSize:     4 << 20,
		TmpfsInodes:   256,
		ResultsSize:   256 << 10,
		ResultsInodes: 32,
		OutputCap:     64 << 10,
		Deadline:      15 * time.Second,
	}
}

// prelude is prepended to every probe. The marker (argv[1]) is in every
// process's command line, so the host can look for survivors.
const prelude = `
import ctypes, errno, json, os, platform, resource, signal, socket, stat, sys, time
MARK = sys.argv[1]
def attempt(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno or -1
def report(**kw):
    print(json.dumps(kw), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": {"ptrace": 101, "io_uring_setup": 425, "clone": 56, "clone3": 435},
      "aarch64": {"ptrace": 117, "io_uring_setup": 425, "clone": 220, "clone3": 435}}[platform.machine()]
def sys_errno(*args):
    r = libc.syscall(*args)
    return ctypes.get_errno() if r == -1 else 0
`

type hostileCase struct {
	// runscDiffers names the entry of sandbox.RunscDifferences (its
	// control) that makes this case fail under runsc.
	runscDiffers string
	name         string
	limits       func(*sandbox.Limits)
	results      bool
	code         string
	verdict      func(r *result) error
}

type result struct {
	o      *sandbox.Outcome
	report map[string]any
	lim    sandbox.Limits
	rt     sandbox.Runtime
}

// wantUnder is want, except that under runsc any errno of alt is accepted
// too: gVisor's kernel answers some refused calls with another errno (it
// does not implement io_uring, process_vm_readv or AF_VSOCK at all, and
// has no route rather than no network).
func (r *result) wantUnder(k string, e syscall.Errno, alt ...syscall.Errno) error {
	if r.rt == sandbox.Runsc && slices.Contains(alt, r.errno(k)) {
		return nil
	}
	return r.want(k, e)
}

func (r *result) num(k string) float64 {
	v, _ := r.report[k].(float64)
	return v
}

func (r *result) errno(k string) syscall.Errno { return syscall.Errno(int(r.num(k))) }

func (r *result) want(k string, e syscall.Errno) error {
	if _, ok := r.report[k]; !ok {
		return fmt.Errorf("no %s in the probe's report %v (stderr %q)", k, r.report, r.o.Stderr)
	}
	if got := r.errno(k); got != e {
		return fmt.Errorf("%s: got errno %d (%v), want %d (%v)", k, int(got), got, int(e), e)
	}
	return nil
}

func (r *result) failed(k string) error {
	if _, ok := r.report[k]; !ok {
		return fmt.Errorf("no %s in the probe's report %v (stderr %q)", k, r.report, r.o.Stderr)
	}
	if r.num(k) == 0 {
		return fmt.Errorf("%s: the attempt succeeded inside the sandbox", k)
	}
	return nil
}

func all(errs ...error) error { return errors.Join(errs...) }

var hostileCases = []hostileCase{
	// 2.1 Resource exhaustion.
	{name: "fork bomb", code: `
n, err = 0, 0
try:
    for i in range(100):
        pid = os.fork()
        if pid == 0:
            os.close(1); os.close(2)
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    err = e.errno
report(forks=n, errno=err)
`, verdict: func(r *result) error {
		// Under runsc the bomb may bring the whole sandbox down (its
		// memory limit covers gVisor's kernel too) before the program
		// hits its process budget: the program gets nothing either way.
		// The engine then reports the container ended, or OOM-killed
		// while the exec's wait failed with it.
		if r.rt == sandbox.Runsc && len(r.report) == 0 && (r.o.ContainerEnded || r.o.OOMKilled) {
			return nil
		}
		return all(r.want("errno", syscall.EAGAIN), below(r.num("forks"), r.lim.Pids, "forks"))
	}},
	{name: "thread bomb", code: `
import threading
n, refused = 0, 0
try:
    for i in range(100):
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        n += 1
except RuntimeError:
    refused = 1
report(threads=n, refused=refused)
os._exit(0)
`, verdict: func(r *result) error {
		if r.num("refused") != 1 {
			return fmt.Errorf("all %v threads started", r.report["threads"])
		}
		return below(r.num("threads"), r.lim.Pids, "threads")
	}},
	{name: "memory bomb", code: `
chunks = []
for i in range(16):
    chunks.append(b"\x01" * (16 << 20))
report(allocated_mib=16 * len(chunks))
`, verdict: func(r *result) error {
		if !r.o.OOMKilled {
			return fmt.Errorf("not reported as OOM (exit %d, report %v)", r.o.ExitCode, r.report)
		}
		// Under runsc the OOM killer takes gVisor's kernel with the
		// program: the engine drops the exec (no exit status is left), or
		// the exec's wait fails with the sandbox (exit 128); either way
		// the program never reported its allocation.
		if r.rt == sandbox.Runsc && len(r.report) == 0 && (r.o.ExitCode == -1 && r.o.ContainerEnded || r.o.ExitCode == 128) {
			return nil
		}
		if r.o.Signal != "SIGKILL" {
			return fmt.Errorf("OOM kill without SIGKILL: %+v", r.o)
		}
		return nil
	}},
	{name: "cpu spin past the deadline", limits: func(l *sandbox.Limits) { l.Deadline = 2 * time.Second }, code: `
while True:
    pass
`, verdict: func(r *result) error {
		if !r.o.TimedOut || r.o.Wall < 2*time.Second {
			return fmt.Errorf("not timed out at the deadline: %+v", r.o)
		}
		if r.o.CPU < 100*time.Millisecond {
			return fmt.Errorf("CPU time %v for a 2 s spin", r.o.CPU)
		}
		return nil
	}},
	{name: "sleep forever", limits: func(l *sandbox.Limits) { l.Deadline = 2 * time.Second }, code: `
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGALRM, signal.SIG_IGN)
time.sleep(10 ** 6)
`, verdict: func(r *result) error {
		if !r.o.TimedOut {
			return fmt.Errorf("not timed out: %+v", r.o)
		}
		return nil
	}},
	{name: "fill tmp", code: `
total, err = 0, 0
try:
    for i in range(64):
        with open("/tmp/fill%d" % i, "wb") as f:
            for j in range(8):
                f.write(b"x" * (64 << 10))
                total += 64 << 10
except OSError as e:
    err = e.errno
report(bytes=total, errno=err)
`, verdict: func(r *result) error {
		return all(r.want("errno", syscall.ENOSPC), below(r.num("bytes"), r.lim.TmpfsSize+1, "bytes"))
	}},
	{name: "file size limit", code: `
total, err = 0, 0
try:
    with open("/tmp/big", "wb") as f:
        for j in range(64):
            f.write(b"x" * (64 << 10))
            f.flush()
            total += 64 << 10
except OSError as e:
    err = e.errno
report(bytes=total, errno=err)
`, verdict: func(r *result) error {
		return all(r.want("errno", syscall.EFBIG), below(r.num("bytes"), r.lim.FSize+1, "bytes"))
	}},
	{name: "fill dev shm", code: `
report(exists=int(os.path.isdir("/dev/shm")), errno=attempt(lambda: open("/dev/shm/fill", "wb").write(b"x" * (1 << 20))))
`, verdict: func(r *result) error {
		if _, ok := r.report["errno"]; !ok || r.num("errno") == 0 {
			return fmt.Errorf("writing 1 MiB to /dev/shm succeeded (report %v)", r.report)
		}
		return nil
	}},
	{name: "fill results folder", results: true, code: `
total, err = 0, 0
try:
    for i in range(16):
        with open("/results/fill%d" % i, "wb") as f:
            for j in range(4):
                f.write(b"x" * (64 << 10))
                total += 64 << 10
except OSError as e:
    err = e.errno
report(bytes=total, errno=err)
`, verdict: func(r *result) error {
		read := 0
		if r.o.Results != nil {
			for _, b := range r.o.Results.Files {
				read += len(b)
			}
		}
		return all(r.want("errno", syscall.ENOSPC), below(r.num("bytes"), r.lim.ResultsSize+1, "bytes"),
			below(float64(read), r.lim.ResultsSize+1, "bytes read back"))
	}},
	{name: "too many open files", code: `
fds, err = [], 0
try:
    for i in range(4096):
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    err = e.errno
raised = 0
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (100000, 100000))
    raised = 1
except (ValueError, OSError):
    pass
report(fds=len(fds), errno=err, raised=raised)
`, verdict: func(r *result) error {
		return all(r.want("errno", syscall.EMFILE), below(r.num("fds"), r.lim.NoFile, "fds"), r.want("raised", 0))
	}},
	{name: "inode exhaustion", code: `
# Empty files until the file system refuses one. Under runsc /tmp is
# gVisor's tmpfs, held in the sandbox's memory: the memory limit is its
# inode bound.
n, err = 0, 0
try:
    while n < 2000000:
        open("/tmp/i%d" % n, "w").close()
        n += 1
except OSError as e:
    err = e.errno
report(files=n, errno=err)
`, verdict: func(r *result) error {
		if r.rt == sandbox.Runsc {
			return inodesUnderGVisor(r)
		}
		return all(r.want("errno", syscall.ENOSPC), below(r.num("files"), r.lim.TmpfsInodes, "files"))
	}},

	// 2.2 Escape, privilege and kernel surface.
	{name: "network connect and DNS", code: `
def connect(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
    finally:
        s.close()
dns = 0
try:
    socket.getaddrinfo("example.com", 80)
    dns = 1
except OSError:
    pass
# /proc/net/dev under both runtimes; gVisor's sysfs has no class/net.
names = {l.partition(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:] if ":" in l}
if os.path.isdir("/sys/class/net"):
    names.update(os.listdir("/sys/class/net"))
report(interfaces=sorted(names), public=attempt(lambda: connect("1.1.1.1", 53)),
       gateway=attempt(lambda: connect("172.17.0.1", 2375)), dns=dns)
`, verdict: func(r *result) error {
		ifs := fmt.Sprint(r.report["interfaces"])
		var errs []error
		if ifs != "[lo]" {
			errs = append(errs, fmt.Errorf("network interfaces %s, want only lo", ifs))
		}
		// seccomp refuses INET sockets (EPERM); without that rule the
		// network's absence answers (ENETUNREACH, EHOSTUNREACH).
		return all(append(errs, r.wantUnder("public", syscall.EPERM, syscall.ENETUNREACH, syscall.EHOSTUNREACH),
			r.wantUnder("gateway", syscall.EPERM, syscall.ENETUNREACH, syscall.EHOSTUNREACH), r.want("dns", 0))...)
	}},
	{name: "read proc 1 environ", code: `
def read():
    return open("/proc/1/environ", "rb").read()
leak, pid1 = 0, []
try:
    env = read()
    leak = int(b"REPRO_HOST_CANARY" in env)
    pid1 = sorted(v.split(b"=")[0].decode() for v in env.split(b"\0") if v)
except OSError:
    pass
report(errno=attempt(read), leak=leak, own=sorted(os.environ), pid1=pid1)
`, verdict: func(r *result) error {
		var errs []error
		for _, k := range r.report["own"].([]any) {
			if !slices.Contains(allowedEnv, k.(string)) {
				errs = append(errs, fmt.Errorf("unexpected environment variable %v", k))
			}
		}
		// gVisor lets any user read /proc/1/environ; what it shows must
		// still be the fixed base environment alone.
		if r.rt == sandbox.Runsc && r.errno("errno") == 0 {
			for _, k := range r.report["pid1"].([]any) {
				if !slices.Contains(allowedEnv, k.(string)) {
					errs = append(errs, fmt.Errorf("PID 1 has environment variable %v", k))
				}
			}
			return all(append(errs, r.want("leak", 0))...)
		}
		return all(append(errs, r.want("errno", syscall.EACCES), r.want("leak", 0))...)
	}},
	{name: "read etc shadow", code: `
report(errno=attempt(lambda: open("/etc/shadow").read()))
`, verdict: func(r *result) error { return r.want("errno", syscall.EACCES) }},
	{name: "docker socket", code: `
paths = ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"]
report(found=[p for p in paths if os.path.exists(p)])
`, verdict: func(r *result) error {
		if f, _ := r.report["found"].([]any); len(f) != 0 || r.report["found"] == nil {
			return fmt.Errorf("engine sockets visible: %v", r.report["found"])
		}
		return nil
	}},
	{name: "write outside the mounts", code: `
def write(p):
    with open(p, "a") as f:
        f.write("x")
report(var_tmp=attempt(lambda: write("/var/tmp/x")), etc=attempt(lambda: write("/etc/passwd")),
       root=attempt(lambda: write("/x")), stdlib=attempt(lambda: write(os.__file__)),
       dataset=attempt(lambda: write("/data/canary.txt")), dataset_new=attempt(lambda: write("/data/new")),
       workspace=attempt(lambda: write("/workspace/new")))
`, verdict: func(r *result) error {
		return all(r.want("var_tmp", syscall.EROFS), r.failed("etc"), r.failed("root"), r.failed("stdlib"),
			r.failed("dataset"), r.failed("dataset_new"), r.failed("workspace"))
	}},
	{name: "tamper with the samples", code: `
d = "/workspace/samples"
names = sorted(os.listdir(d))
p = os.path.join(d, names[0])
def append():
    with open(p, "a") as f:
        f.write("pass\n")
def replace():
    with open("/tmp/evil.py", "w") as f:
        f.write("evil")
    os.rename("/tmp/evil.py", p)
report(names=names, append=attempt(append), chmod=attempt(lambda: os.chmod(p, 0o777)),
       rename=attempt(lambda: os.rename(p, p + ".moved")), unlink=attempt(lambda: os.unlink(p)),
       replace=attempt(replace), link=attempt(lambda: os.symlink("/etc/passwd", os.path.join(d, "link.py"))),
       extra=attempt(lambda: open(os.path.join(d, "extra.py"), "w").close()),
       truncate=attempt(lambda: os.truncate(p, 0)))
`, verdict: func(r *result) error {
		return all(r.failed("append"), r.failed("chmod"), r.failed("rename"), r.failed("unlink"),
			r.failed("replace"), r.failed("link"), r.failed("extra"), r.failed("truncate"))
	}},
	{name: "plant symlink and FIFO in results", results: true, code: `
with open("/results/ok.json", "w") as f:
    f.write('{"fine": true}')
os.symlink("/etc/shadow", "/results/eval_results.json")
os.mkfifo("/results/results.fifo")
os.link("/results/ok.json", "/results/hard.json")
report(planted=1)
`, verdict: func(r *result) error {
		res := r.o.Results
		if res == nil {
			return fmt.Errorf("no results read back: %s", r.o.ResultsError)
		}
		var errs []error
		if string(res.Files["ok.json"]) != `{"fine": true}` {
			errs = append(errs, fmt.Errorf("regular result not read back: %q", res.Files["ok.json"]))
		}
		for _, bad := range []string{"eval_results.json", "results.fifo"} {
			if _, ok := res.Files[bad]; ok {
				errs = append(errs, fmt.Errorf("%s was read back", bad))
			}
			// gVisor keeps a FIFO in its own kernel: the host folder
			// never holds it, so there is nothing to reject.
			if bad == "results.fifo" && r.rt == sandbox.Runsc {
				continue
			}
			if !slices.ContainsFunc(res.Rejected, func(s string) bool { return strings.HasPrefix(s, bad+":") }) {
				errs = append(errs, fmt.Errorf("%s not reported as rejected: %v", bad, res.Rejected))
			}
		}
		if len(res.Files) > 2 {
			errs = append(errs, fmt.Errorf("unexpected results %v", res.Files))
		}
		return errors.Join(errs...)
	}},
	{name: "exec from tmp and the workspace", results: true, code: `
# A written script that asks for a SysV segment, a call the policy refuses:
# it exits 200 + the errno of shmget when it runs, 100 + the errno of
# execve when it cannot.
import shutil
SCRIPT = """#!/usr/bin/python3
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os._exit(200 + (ctypes.get_errno() if libc.shmget(0, 4096, 0o1600) < 0 else 0))
"""
def run(p):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(p, [p])
        except OSError as e:
            os._exit(100 + e.errno)
        os._exit(99)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)
for d in ("/tmp", "/results"):
    with open(d + "/probe", "w") as f:
        f.write(SCRIPT)
    os.chmod(d + "/probe", 0o755)
sample = os.path.join("/workspace/samples", sorted(os.listdir("/workspace/samples"))[0])
report(tmp=run("/tmp/probe"), results=run("/results/probe"), sample=run(sample))
`, verdict: func(r *result) error {
		refused := float64(100 + syscall.EACCES)
		var errs []error
		for _, k := range []string{"tmp", "results", "sample"} {
			got, ok := r.report[k].(float64)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("no %s in the probe's report %v (stderr %q)", k, r.report, r.o.Stderr))
			case got == refused:
			case k == "results" && r.rt == sandbox.Runsc && got == float64(200+syscall.EPERM):
				// gVisor does not apply noexec to the results volume; a
				// file the program wrote runs under the same seccomp
				// filter, so it gains no call the program lacked.
			case got >= 200:
				errs = append(errs, fmt.Errorf("%s: the written file ran, and shmget answered errno %v", k, got-200))
			default:
				errs = append(errs, fmt.Errorf("%s: exit %v, want %v (execve refused with EACCES)", k, got, refused))
			}
		}
		return errors.Join(errs...)
	}},
	{name: "setuid", code: `
found = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for f in files:
        try:
            m = os.lstat(os.path.join(root, f)).st_mode
        except OSError:
            continue
        if stat.S_ISREG(m) and m & (stat.S_ISUID | stat.S_ISGID):
            found.append(os.path.join(root, f))
# PR_GET_NO_NEW_PRIVS: gVisor has no NoNewPrivs line in /proc/self/status.
report(found=found, setuid=attempt(lambda: os.setuid(0)), nnp=libc.prctl(39, 0, 0, 0, 0))
`, verdict: func(r *result) error {
		var errs []error
		if f, _ := r.report["found"].([]any); len(f) != 0 {
			errs = append(errs, fmt.Errorf("setuid or setgid files in the image: %v", f))
		}
		if r.num("nnp") != 1 {
			errs = append(errs, fmt.Errorf("no-new-privileges is not set"))
		}
		return all(append(errs, r.want("setuid", syscall.EPERM))...)
	}},
	{name: "capabilities", code: `
caps = {l.split(":")[0]: int(l.split()[1], 16) for l in open("/proc/self/status") if l.startswith("Cap")}
report(**caps)
`, verdict: func(r *result) error {
		var errs []error
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if _, ok := r.report[k]; !ok && k == "CapAmb" && r.rt == sandbox.Runsc {
				continue // gVisor has no ambient capabilities and no CapAmb line
			}
			if v, ok := r.report[k]; !ok || v.(float64) != 0 {
				errs = append(errs, fmt.Errorf("%s = %v, want 0", k, v))
			}
		}
		return errors.Join(errs...)
	}},
	{name: "ptrace pid 1", code: `
report(errno=sys_errno(NR["ptrace"], 16, 1, 0, 0))
`, verdict: func(r *result) error { return r.want("errno", syscall.EPERM) }},
	{name: "ptrace the parent", code: `
parent = os.getpid()
pid = os.fork()
if pid == 0:
    err = sys_errno(NR["ptrace"], 16, parent, 0, 0)
    if err == 0:  # attached: let the parent go on, so that it can report
        os.waitpid(parent, 0x40000000)
        sys_errno(NR["ptrace"], 17, parent, 0, 0)
    os._exit(err)
_, st = os.waitpid(pid, 0)
report(errno=os.waitstatus_to_exitcode(st))
`, verdict: func(r *result) error { return r.want("errno", syscall.EPERM) }},
	{name: "descriptors of a non-dumpable process", code: `
# The parent makes itself non-dumpable, as the HumanEval supervisor does; a
# child of the same user must not open its descriptors, maps or environment.
r, w = os.pipe()
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
parent = os.getpid()
pid = os.fork()
if pid == 0:
    out = {}
    for what in ("fd/%d" % r, "fd/%d" % w, "maps", "environ"):
        out[what.split("/")[0]] = attempt(lambda: os.close(os.open("/proc/%d/%s" % (parent, what), os.O_RDONLY)))
    def forge():
        fd = os.open("/proc/%d/fd/%d" % (parent, w), os.O_WRONLY)
        os.write(fd, b"forged")
        os.close(fd)
    out["write"] = attempt(forge)
    print(json.dumps(out), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
os.set_blocking(r, False)
report(forged=attempt(lambda: os.read(r, 100)) == 0)
`, verdict: func(r *result) error {
		if r.report["forged"] != false {
			return fmt.Errorf("a child wrote into its non-dumpable parent's pipe through /proc (report %v, stdout %q)", r.report, r.o.Stdout)
		}
		var child map[string]any
		first, _, _ := bytes.Cut(r.o.Stdout, []byte("\n"))
		if err := json.Unmarshal(first, &child); err != nil {
			return fmt.Errorf("no child report in %q", r.o.Stdout)
		}
		var errs []error
		for _, k := range []string{"fd", "maps", "environ", "write"} {
			if v, _ := child[k].(float64); syscall.Errno(int(v)) != syscall.EACCES {
				errs = append(errs, fmt.Errorf("%s of the non-dumpable parent: errno %v, want EACCES", k, child[k]))
			}
		}
		return errors.Join(errs...)
	}},
	{name: "process_vm_readv", code: `
secret = ctypes.create_string_buffer(b"expected-answer", 64)
parent = os.getpid()
pid = os.fork()
if pid == 0:
    class iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    buf = ctypes.create_string_buffer(64)
    local = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = iovec(ctypes.addressof(secret), 64)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    n = libc.process_vm_readv(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    os._exit(ctypes.get_errno() if n < 0 else 0)
_, st = os.waitpid(pid, 0)
report(errno=os.waitstatus_to_exitcode(st))
`, verdict: func(r *result) error { return r.wantUnder("errno", syscall.EPERM, syscall.ENOSYS) }},
	{name: "limits and scheduling of the parent", code: `
# A child tries to change its parent's limits, priority, scheduling policy,
# CPU affinity and I/O priority; the same calls on itself must still work.
EXTRA = {"x86_64": {"ioprio_set": 251, "sched_setattr": 314}, "aarch64": {"ioprio_set": 30, "sched_setattr": 274}}[platform.machine()]
def probe(pid, out):
    attr = ctypes.create_string_buffer(56)
    ctypes.c_uint32.from_buffer(attr, 0).value = 56
    ctypes.c_uint32.from_buffer(attr, 4).value = 5  # SCHED_IDLE
    out["prlimit"] = attempt(lambda: resource.prlimit(pid, resource.RLIMIT_DATA, (1 << 20, 1 << 20)))
    out["setpriority"] = attempt(lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    out["sched_setscheduler"] = attempt(lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
    out["sched_setparam"] = attempt(lambda: os.sched_setparam(pid, os.sched_param(0)))
    out["sched_setaffinity"] = attempt(lambda: os.sched_setaffinity(pid, os.sched_getaffinity(0)))
    out["sched_setattr"] = sys_errno(EXTRA["sched_setattr"], pid, attr, 0)
    out["ioprio_set"] = sys_errno(EXTRA["ioprio_set"], 1, pid, (3 << 13))
parent = os.getpid()
before = (resource.getrlimit(resource.RLIMIT_DATA), os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    out = {}
    probe(parent, out)
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
other = json.loads(os.read(r, 4096))
os.waitpid(pid, 0)
after = (resource.getrlimit(resource.RLIMIT_DATA), os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
own = {}
own["prlimit"] = attempt(lambda: resource.setrlimit(resource.RLIMIT_DATA, resource.getrlimit(resource.RLIMIT_DATA)))
own["nice"] = attempt(lambda: os.nice(1))
own["sched_setaffinity"] = attempt(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
report(other=other, own=own, unchanged=int(before == after))
`, verdict: func(r *result) error {
		var errs []error
		other, _ := r.report["other"].(map[string]any)
		own, _ := r.report["own"].(map[string]any)
		if other == nil || own == nil {
			return fmt.Errorf("no report: %v (stderr %q)", r.report, r.o.Stderr)
		}
		for _, k := range []string{"prlimit", "setpriority", "sched_setscheduler", "sched_setparam", "sched_setaffinity", "sched_setattr", "ioprio_set"} {
			if got, _ := other[k].(float64); syscall.Errno(int(got)) != syscall.EPERM {
				errs = append(errs, fmt.Errorf("%s on the parent: errno %v, want EPERM", k, got))
			}
		}
		for k, v := range own {
			if v.(float64) != 0 {
				errs = append(errs, fmt.Errorf("%s on itself failed: errno %v", k, v))
			}
		}
		if r.num("unchanged") != 1 {
			errs = append(errs, errors.New("the parent's limits or scheduling changed"))
		}
		return errors.Join(errs...)
	}},
	{name: "SysV IPC", code: `
# SysV segments, semaphores and queues, and POSIX message queues, would
# outlive every process of the job in the container's IPC namespace.
libc.shmget.restype = libc.semget.restype = libc.msgget.restype = libc.mq_open.restype = ctypes.c_int
def call(fn, *a):
    return 0 if fn(*a) >= 0 else ctypes.get_errno()
report(shm=call(libc.shmget, 0, 1 << 20, 0o1600), sem=call(libc.semget, 0, 1, 0o1600), msg=call(libc.msgget, 0, 0o1600),
       mq=call(libc.mq_open, b"/left-behind", os.O_CREAT | os.O_RDWR, 0o600, None))
`, verdict: func(r *result) error {
		return all(r.want("shm", syscall.EPERM), r.want("sem", syscall.EPERM), r.want("msg", syscall.EPERM), r.want("mq", syscall.EPERM))
	}},
	{name: "io_uring", code: `
params = ctypes.create_string_buffer(120)
report(errno=sys_errno(NR["io_uring_setup"], 4, params))
`, verdict: func(r *result) error { return r.wantUnder("errno", syscall.EPERM, syscall.ENOSYS) }},
	// Nothing of a job may outlive it: an INET socket on the loopback
	// leaves a TIME_WAIT entry in /proc/net/tcp that the next program
	// reads, so seccomp allows AF_UNIX sockets only.
	{name: "INET sockets", code: `
report(inet=attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
       inet6=attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()),
       unix=attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()))
`, verdict: func(r *result) error {
		return all(r.want("inet", syscall.EPERM), r.want("inet6", syscall.EPERM), r.want("unix", 0))
	}},
	// A sibling made with CLONE_PARENT has the caller's parent as its
	// own: the zygote's children could then outlive their job.
	{name: "CLONE_PARENT", code: `
libc.syscall.restype = ctypes.c_long
CLONE_PARENT = 0x8000
r = libc.syscall(NR["clone"], CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
report(errno=0 if r > 0 else ctypes.get_errno(), clone3=sys_errno(NR["clone3"], 0, 0))
`, verdict: func(r *result) error { return all(r.want("errno", syscall.EPERM), r.want("clone3", syscall.ENOSYS)) }},
	// /dev/mqueue is the one place besides /tmp where a program could
	// leave a name for the next: it is not writable.
	{name: "dev mqueue", code: `
def create():
    fd = os.open("/dev/mqueue/left-behind", os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
opts = [l.split()[3] for l in open("/proc/self/mounts") if l.split()[1] == "/dev/mqueue"]
report(errno=attempt(create), exists=int(os.path.exists("/dev/mqueue/left-behind")),
       ro=int(bool(opts) and all("ro" in o.split(",") for o in opts)), mounted=len(opts))
`, verdict: func(r *result) error {
		if r.num("exists") != 0 {
			return fmt.Errorf("/dev/mqueue holds what the program made")
		}
		if r.num("mounted") > 0 && r.num("ro") != 1 {
			return fmt.Errorf("/dev/mqueue is mounted writable")
		}
		// Read-only (EROFS; gVisor checks the mode first: EACCES), or not
		// there at all (ENOENT).
		if e := r.errno("errno"); e != syscall.EROFS && e != syscall.ENOENT && !(r.rt == sandbox.Runsc && e == syscall.EACCES) {
			return fmt.Errorf("creating an entry in /dev/mqueue: errno %d (%v), want EROFS or ENOENT", int(e), e)
		}
		return nil
	}},
	{name: "AF_VSOCK", code: `
report(errno=attempt(lambda: socket.socket(40, socket.SOCK_STREAM).close()))
`, verdict: func(r *result) error { return r.wantUnder("errno", syscall.EPERM, syscall.EAFNOSUPPORT) }},
	{name: "core dump", results: true, code: `
soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
raised = 0
try:
    resource.setrlimit(resource.RLIMIT_CORE, (1 << 20, 1 << 20))
    raised = 1
except (ValueError, OSError):
    pass
pid = os.fork()
if pid == 0:
    os.chdir("/tmp")
    ctypes.string_at(0)
    os._exit(0)
_, st = os.waitpid(pid, 0)
cores = [d + "/" + f for d in ("/tmp", "/results", "/") for f in os.listdir(d) if f.startswith("core")]
report(soft=soft, hard=hard, raised=raised, signaled=int(os.WIFSIGNALED(st)), sig=os.WTERMSIG(st) if os.WIFSIGNALED(st) else 0,
       dumped=int(os.WCOREDUMP(st)), cores=cores)
`, verdict: func(r *result) error {
		var errs []error
		if r.num("soft") != 0 || r.num("hard") != 0 || r.num("raised") != 0 {
			errs = append(errs, fmt.Errorf("core limit %v/%v, raised %v", r.report["soft"], r.report["hard"], r.report["raised"]))
		}
		if r.num("sig") != float64(syscall.SIGSEGV) || r.num("dumped") != 0 {
			errs = append(errs, fmt.Errorf("child ended with signal %v, core dumped %v", r.report["sig"], r.report["dumped"]))
		}
		if c, _ := r.report["cores"].([]any); len(c) != 0 {
			errs = append(errs, fmt.Errorf("core files written: %v", c))
		}
		return errors.Join(errs...)
	}},
	{name: "orphan daemon", code: `
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("/tmp/heartbeat", "w") as f:
                f.write(str(time.time()))
            time.sleep(0.1)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.3)
report(daemon_started=int(os.path.exists("/tmp/heartbeat")))
`, verdict: func(r *result) error {
		if r.num("daemon_started") != 1 {
			return fmt.Errorf("the daemon did not start, the test proves nothing: %v", r.report)
		}
		if r.o.TimedOut {
			return fmt.Errorf("the runner waited for the daemon until the deadline")
		}
		return nil
	}},
	{name: "SIGTERM to PID 1 and the holder", code: `
holder = 0
for p in os.listdir("/proc"):
    if p.isdigit() and p != "1":
        try:
            if open("/proc/%s/cmdline" % p, "rb").read().startswith(b"/bin/sleep"):
                holder = int(p)
        except OSError:
            pass
report(pid1=attempt(lambda: os.kill(1, signal.SIGTERM)), holder_found=int(holder > 0),
       holder=attempt(lambda: os.kill(holder, signal.SIGKILL)) if holder else 0)
time.sleep(0.5)
`, verdict: func(r *result) error {
		err := all(r.want("pid1", syscall.EPERM), r.want("holder", syscall.EPERM))
		if r.num("holder_found") != 1 {
			err = all(err, errors.New("holder process not found"))
		}
		if r.o.ContainerEnded || r.o.ExitCode != 0 {
			err = all(err, fmt.Errorf("the container ended under the program: %+v", r.o))
		}
		return err
	}},
}

// inodesUnderGVisor: gVisor's tmpfs ignores nr_inodes, and its inodes live
// in the sandbox's memory, charged to the container's memory cgroup. The
// program must be stopped within its limits (a refused file, the OOM
// killer or the deadline) with the container's peak memory at most the
// limit; the host side is checked as for every case.
func inodesUnderGVisor(r *result) error {
	var errs []error
	stopped := r.num("errno") != 0 || r.o.OOMKilled || r.o.ContainerEnded || r.o.TimedOut
	if !stopped {
		errs = append(errs, fmt.Errorf("%v files made without a refusal, a kill or the deadline: %+v", r.num("files"), r.o))
	}
	if r.o.PeakMemory > r.lim.Memory {
		errs = append(errs, fmt.Errorf("peak memory %d over the limit %d", r.o.PeakMemory, r.lim.Memory))
	}
	return errors.Join(errs...)
}

var allowedEnv = []string{"HOME", "HOSTNAME", "LANG", "LC_ALL", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "TMPDIR"}

func below(v float64, limit int64, what string) error {
	if v >= float64(limit) {
		return fmt.Errorf("%s reached %v, the limit is %d", what, v, limit)
	}
	return nil
}

// fixture is the host side of one hostile run: a workspace of samples and a
// dataset folder, both mounted read-only.
type fixture struct {
	ws          *sandbox.Workspace
	dataset     string
	datasetHash digest.SHA256
	marker      string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	var samples []string
	for i, body := range []string{"def add(a, b):\n    return a + b\n", "def sub(a, b):\n    return a - b\n"} {
		p := filepath.Join(src, fmt.Sprintf("sample%d.py", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, p)
	}
	ws, err := sandbox.NewWorkspace(filepath.Join(dir, "ws"), samples)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	if err := os.WriteFile(filepath.Join(data, "canary.txt"), []byte("dataset canary\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(data, 0o777)
	f := &fixture{ws: ws, dataset: data, marker: fmt.Sprintf("repro-hostile-%d-%d", os.Getpid(), time.Now().UnixNano())}
	f.datasetHash = treeHash(t, data)
	return f
}

func treeHash(t *testing.T, dir string) digest.SHA256 {
	t.Helper()
	var buf bytes.Buffer
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b := []byte{}
		if fi.Mode().IsRegular() {
			b, _ = os.ReadFile(p)
		}
		fmt.Fprintf(&buf, "%s %v %d %x\n", p, fi.Mode(), fi.Size(), digest.Of(b))
		return nil
	})
	return digest.Of(buf.Bytes())
}

func (f *fixture) spec(img sandbox.Image, code string, l sandbox.Limits, results bool) sandbox.Spec {
	return sandbox.Spec{
		Image:    img,
		Cmd:      []string{"python3", "-c", prelude + code, f.marker},
		ReadOnly: []sandbox.Mount{{Source: f.dataset, Target: "/data"}},
		Samples:  f.ws,
		Dir:      "/tmp",
		Limits:   l,
		Results:  results,
		Labels:   map[string]string{"org.reprolab.test": f.marker},
	}
}

// hostSide checks what the run left on the host.
func (f *fixture) hostSide(t *testing.T, e *sandbox.Engine, o *sandbox.Outcome) error {
	t.Helper()
	ctx := context.Background()
	var errs []error
	if _, err := e.Client().ContainerInspect(ctx, o.ContainerID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("container %s still exists (inspect: %v)", o.ContainerID, err))
	}
	byLabel := make(client.Filters).Add("label", "org.reprolab.test="+f.marker)
	if l, err := e.Client().ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byLabel}); err != nil || len(l.Items) != 0 {
		errs = append(errs, fmt.Errorf("labelled containers left: %v %v", l.Items, err))
	}
	if l, err := e.Client().VolumeList(ctx, client.VolumeListOptions{Filters: byLabel}); err != nil || len(l.Items) != 0 {
		errs = append(errs, fmt.Errorf("labelled volumes left: %v %v", l.Items, err))
	}
	if procs := hostProcesses(f.marker); len(procs) != 0 {
		errs = append(errs, fmt.Errorf("processes of the run survive on the host: %v", procs))
	}
	if err := f.ws.Check(); err != nil {
		errs = append(errs, err)
	}
	if h := treeHash(t, f.dataset); h != f.datasetHash {
		errs = append(errs, errors.New("the dataset folder changed"))
	}
	if root := dockerRoot(t, e); root != "" {
		if _, err := os.Stat(filepath.Join(root, "containers", o.ContainerID)); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("the engine keeps files of container %s (%v)", o.ContainerID, err))
		}
	}
	return errors.Join(errs...)
}

// hostProcesses lists host processes whose command line holds marker.
func hostProcesses(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, d.Name())
		}
	}
	return out
}

func dockerRoot(t *testing.T, e *sandbox.Engine) string {
	if os.Geteuid() != 0 {
		return ""
	}
	info, err := e.Client().Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info.Info.DockerRootDir
}

// runCase runs one hostile case and returns its result and the host-side
// findings. Errors of the runner itself fail the test.
func runCase(t *testing.T, e *sandbox.Engine, img sandbox.Image, c hostileCase) (*result, error) {
	t.Helper()
	f := newFixture(t)
	l := testLimits()
	if c.limits != nil {
		c.limits(&l)
	}
	o, err := e.Run(context.Background(), f.spec(img, c.code, l, c.results), nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r := &result{o: o, report: map[string]any{}, lim: l, rt: e.Runtime()}
	lines := bytes.Split(bytes.TrimSpace(o.Stdout), []byte("\n"))
	if last := lines[len(lines)-1]; len(last) > 0 && last[0] == '{' {
		if err := json.Unmarshal(last, &r.report); err != nil {
			t.Fatalf("probe report %q: %v", last, err)
		}
	}
	return r, f.hostSide(t, e, o)
}

// TestHostile runs every hostile case under each runtime.
// Under runsc, a case marked runscDiffers must fail, and its difference
// must be listed in sandbox.RunscDifferences with what holds the control
// instead (tested where that is built): a runsc that holds the control
// makes the case pass and this test fail until the list is updated.
func TestHostile(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		img := sandboxtest.Image(t, e)
		for _, c := range hostileCases {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				t.Parallel()
				r, host := runCase(t, e, img, c)
				if host != nil {
					t.Errorf("host side: %v", host)
				}
				if c.runscDiffers != "" && e.Runtime() == sandbox.Runsc {
					if !slices.ContainsFunc(sandbox.RunscDifferences, func(d sandbox.RuntimeDifference) bool { return d.Control == c.runscDiffers }) {
						t.Errorf("difference %q is not listed in sandbox.RunscDifferences", c.runscDiffers)
					}
					if !slices.ContainsFunc(e.RuntimeFacts().Differences, func(d sandbox.RuntimeDifference) bool { return d.Control == c.runscDiffers }) {
						t.Errorf("difference %q is not in the engine's runtime facts", c.runscDiffers)
					}
					if err := c.verdict(r); err == nil {
						t.Errorf("passes under runsc: runsc now holds %q, take it out of sandbox.RunscDifferences", c.runscDiffers)
					} else {
						t.Logf("known runsc difference %q: %v", c.runscDiffers, err)
					}
					return
				}
				if err := c.verdict(r); err != nil {
					t.Errorf("verdict: %v\noutcome %+v\nstdout %q\nstderr %q", err, r.o, clipBytes(r.o.Stdout), clipBytes(r.o.Stderr))
				}
			})
		}
	})
}

func clipBytes(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// TestControlsAreNeeded takes one control at a time out of the policy and
// requires the named hostile test to notice. If a control could be removed
// without any test failing, the suite would not be testing it.
//
// Under runsc it runs the pairs marked runsc: those whose control runsc
// holds and whose case proves it there (gVisor refuses ptrace of pid 1 and
// of the parent, and answers io_uring ENOSYS, on its own, and its /dev/shm
// is not the host's), plus the seccomp launcher, which only runsc uses.
func TestControlsAreNeeded(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e0 *sandbox.Engine) {
		testControlsAreNeeded(t, e0)
	})
}

func testControlsAreNeeded(t *testing.T, e0 *sandbox.Engine) {
	img := sandboxtest.Image(t, e0)
	rt := e0.Runtime()
	type removal struct {
		control, test string
		limits        func(*sandbox.Limits) // so that the case fails for the named reason
		runsc         bool
	}
	removals := []removal{
		// Under runsc, --network=none (required at connect) keeps the
		// sandbox without a network even in a bridge container.
		{"network", "network connect and DNS", nil, false},
		{"read-only root", "write outside the mounts", nil, true},
		{"cap-drop", "capabilities", nil, true},
		{"pids", "fork bomb", func(l *sandbox.Limits) { l.Memory = 1 << 30 }, true},
		{"pids", "thread bomb", func(l *sandbox.Limits) { l.Memory = 1 << 30 }, true},
		{"memory", "memory bomb", nil, true},
		{"seccomp", "ptrace the parent", nil, false},
		{"seccomp entirely", "process_vm_readv", nil, false}, // Docker's default profile denies it too
		{"seccomp", "io_uring", nil, false},
		{"seccomp", "AF_VSOCK", nil, false},
		{"seccomp INET", "INET sockets", nil, true},
		{"seccomp CLONE_PARENT", "CLONE_PARENT", nil, true},
		// gVisor mounts no mqueue file system of its own.
		{"mqueue", "dev mqueue", nil, false},
		{"seccomp", "limits and scheduling of the parent", nil, false},
		{"seccomp", "SysV IPC", nil, false},
		{"seccomp caller-only arguments", "limits and scheduling of the parent", nil, true},
		{"seccomp SysV IPC", "SysV IPC", nil, true},
		// Under runsc, gVisor reports no_new_privs set for an exec'd
		// program even with neither the engine's flag nor the launcher
		// (runsc 0.0~20221219), so no removal shows there.
		{"no-new-privileges", "setuid", nil, false},
		{"ipc", "fill dev shm", nil, false},
		{"nofile", "too many open files", nil, true},
		{"tmpfs", "exec from tmp and the workspace", nil, false},
		{"tmpfs", "fill tmp", nil, true},
		{"tmpfs", "inode exhaustion", nil, false},
		{"user", "read etc shadow", nil, true},
	}
	// Under runsc two filters hold the profile for an exec'd program,
	// gVisor's (--oci-seccomp) and the launcher's; each alone holds the
	// cases only a filter holds (TestSeccompLayersUnderRunsc), so only
	// taking out both shows.
	for _, name := range seccompLayerCases {
		removals = append(removals, removal{"seccomp launcher and profile", name, nil, true})
	}
	for _, m := range removals {
		if rt == sandbox.Runsc && !m.runsc || rt != sandbox.Runsc && m.control == "seccomp launcher and profile" {
			continue
		}
		t.Run(strings.ReplaceAll(m.control+"/"+m.test, " ", "_"), func(t *testing.T) {
			t.Parallel()
			idx := slices.IndexFunc(hostileCases, func(c hostileCase) bool { return c.name == m.test })
			if idx < 0 {
				t.Fatalf("no hostile case %q", m.test)
			}
			c := hostileCases[idx]
			if m.limits != nil {
				base := c.limits
				c.limits = func(l *sandbox.Limits) {
					if base != nil {
						base(l)
					}
					m.limits(l)
				}
			}
			e := sandboxtest.EngineRuntime(t, rt)
			sandbox.RemoveControl(e, m.control)
			r, _ := runCase(t, e, img, c)
			err := c.verdict(r)
			if err == nil {
				t.Fatalf("with %s removed, hostile test %q still passes: the suite does not test that control", m.control, m.test)
			}
			t.Logf("with %s removed, %q fails as it must: %v", m.control, m.test, err)
		})
	}
}

// seccompLayerCases are the hostile cases that only a seccomp filter
// holds under runsc (gVisor implements the calls they make).
var seccompLayerCases = []string{"limits and scheduling of the parent", "SysV IPC", "exec from tmp and the workspace"}

// TestSeccompLayersUnderRunsc: under runsc the policy's profile reaches an
// exec'd program twice, through gVisor (--oci-seccomp, which in the tested
// build applies to execs too, unlike Debian's runsc 0.0~20221219) and
// through the launcher's filter; each alone must hold every case only a
// filter holds, and TestControlsAreNeeded shows the cases failing with
// both taken out.
func TestSeccompLayersUnderRunsc(t *testing.T) {
	e0 := sandboxtest.EngineRuntime(t, sandbox.Runsc)
	img := sandboxtest.Image(t, e0)
	for _, layer := range []struct{ name, remove string }{
		{"gVisor's filter alone", "seccomp launcher"},
		{"the launcher's filter alone", "launcher only"},
	} {
		for _, name := range seccompLayerCases {
			t.Run(strings.ReplaceAll(layer.name+"/"+name, " ", "_"), func(t *testing.T) {
				t.Parallel()
				idx := slices.IndexFunc(hostileCases, func(c hostileCase) bool { return c.name == name })
				if idx < 0 {
					t.Fatalf("no hostile case %q", name)
				}
				e := sandboxtest.EngineRuntime(t, sandbox.Runsc)
				sandbox.RemoveControl(e, layer.remove)
				r, host := runCase(t, e, img, hostileCases[idx])
				if host != nil {
					t.Errorf("host side: %v", host)
				}
				if err := hostileCases[idx].verdict(r); err != nil {
					t.Errorf("with %s (%s removed): %v", layer.name, layer.remove, err)
				}
			})
		}
	}
}

func TestMain(m *testing.M) {
	// A host secret that must never reach a container.
	os.Setenv("REPRO_HOST_CANARY", "host-secret")
	code := m.Run()
	if reproBin.dir != "" {
		os.RemoveAll(reproBin.dir)
	}
	os.Exit(code)
}
