package humaneval

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// candidate is one sample of the hostile suite and the verdicts it must
// get: one of want for base (and for plus, unless plus is set apart).
type candidate struct {
	name string
	task string
	// code is the program; "{canon}" is replaced by the task's canonical
	// program, so that a cheat can also be a correct solution plus a trick.
	code string
	want []Status // allowed statuses; a cheat never lists pass
}

func (c candidate) program(d *Dataset) string {
	return strings.ReplaceAll(c.code, "{canon}", d.Task(c.task).Program())
}

var (
	onlyPass    = []Status{StatusPass}
	onlyFail    = []Status{StatusFail}
	onlyTimeout = []Status{StatusTimeout}
	failOrTime  = []Status{StatusFail, StatusTimeout}
)

// The tasks used: 0 has_close_elements -> bool, 2 truncate_number -> float,
// 12 longest -> str or None, 53 add -> int, 29 filter_by_prefix -> list.
func hostileCandidates() []candidate {
	return []candidate{
		// Correct programs, which must pass whatever the others do.
		{"correct 0", "HumanEval/0", "{canon}", onlyPass},
		{"correct 2", "HumanEval/2", "{canon}", onlyPass},
		{"correct 12", "HumanEval/12", "{canon}", onlyPass},
		{"correct 53", "HumanEval/53", "{canon}", onlyPass},
		{"correct 29", "HumanEval/29", "{canon}", onlyPass},
		{"correct 53, own words", "HumanEval/53", "def add(x, y):\n    return y + x\n", onlyPass},
		{"1 for True passes, as in EvalPlus", "HumanEval/0", "{canon}\n_f = has_close_elements\ndef has_close_elements(n, t):\n    return int(_f(n, t))\n", onlyPass},

		// Wrong programs.
		{"off by one", "HumanEval/53", "def add(x, y):\n    return x + y + 1\n", onlyFail},
		{"wrong type: str for int", "HumanEval/53", "def add(x, y):\n    return str(x + y)\n", onlyFail},
		{"wrong type: tuple for list", "HumanEval/29", "{canon}\n_f = filter_by_prefix\ndef filter_by_prefix(s, p):\n    return tuple(_f(s, p))\n", onlyFail},
		{"wrong type: int for float", "HumanEval/2", "def truncate_number(x):\n    return int(x)\n", onlyFail},
		{"exception", "HumanEval/12", "def longest(strings):\n    raise ValueError('no')\n", onlyFail},
		{"syntax error", "HumanEval/12", "def longest(strings)\n    return None\n", onlyFail},
		{"missing entry point", "HumanEval/12", "def shortest(strings):\n    return None\n", onlyFail},
		{"too slow in input 0's call: EvalPlus's alarm fails it", "HumanEval/53", "def add(x, y):\n    while True:\n        pass\n", onlyFail},
		{"too slow while loading: a timeout, as under EvalPlus", "HumanEval/53", "def add(x, y):\n    return x + y\nwhile True:\n    pass\n", onlyTimeout},
		{"a forged load mark, then too slow while loading", "HumanEval/53", "import os, struct\nos.write(3, struct.pack('>I', 1) + b'G')\nwhile True:\n    pass\n", onlyFail},
		{"too slow from the second input: EvalPlus's alarm fails it", "HumanEval/53", "n = 0\ndef add(x, y):\n    global n\n    n += 1\n    while n > 1:\n        pass\n    return x + y\n", onlyFail},

		// Cheats: never pass.
		{"always-equal object", "HumanEval/53", `
class Yes:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__
def add(x, y):
    return Yes()
`, onlyFail},
		{"lying int subclass", "HumanEval/53", `
class I(int):
    def __eq__(self, other): return True
    __hash__ = int.__hash__
def add(x, y):
    return I(0)
`, onlyFail},
		{"lying str subclass", "HumanEval/12", `
class S(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
def longest(strings):
    return S("")
`, onlyFail},
		{"lying list subclass", "HumanEval/29", `
class L(list):
    def __eq__(self, other): return True
def filter_by_prefix(strings, prefix):
    return L()
`, onlyFail},
		{"float subclass close to everything", "HumanEval/2", `
class F(float):
    def __eq__(self, other): return True
    def __sub__(self, other): return 0.0
    def __abs__(self): return 0.0
    __hash__ = float.__hash__
def truncate_number(number):
    return F(0.0)
`, onlyFail},
		{"dict subclass whose methods show the right answer", "HumanEval/53", `
{canon}
_f = add
class D(dict):
    def __eq__(self, other): return True
    def items(self): return [(0, _f(*self.args))]
    def keys(self): return [0]
    def __iter__(self): return iter([0])
    def __len__(self): return 1
def add(x, y):
    d = D()
    d.args = (x, y)
    return d
`, onlyFail},
		{"class posing as a numpy scalar", "HumanEval/53", `
class int64(int):
    __module__ = "numpy"
    def __eq__(self, other): return True
    def item(self): return 0
    __hash__ = int.__hash__
def add(x, y):
    return int64(-1)
`, onlyFail},
		{"iterator that equals everything", "HumanEval/29", `
class It:
    def __iter__(self): return self
    def __next__(self): raise StopIteration
    def __eq__(self, other): return True
def filter_by_prefix(strings, prefix):
    return It()
`, onlyFail},
		{"sys.exit(0) at import", "HumanEval/53", "import sys\nsys.exit(0)\n", onlyFail},
		{"os._exit(0) at import", "HumanEval/53", "import os\nos._exit(0)\n", onlyFail},
		{"sys.exit(0) in the function", "HumanEval/53", "import sys\ndef add(x, y):\n    sys.exit(0)\n", onlyFail},
		{"os._exit(0) in the function", "HumanEval/53", "import os\ndef add(x, y):\n    os._exit(0)\n", onlyFail},
		{"raise SystemExit after a correct answer", "HumanEval/53", "n = 0\ndef add(x, y):\n    global n\n    n += 1\n    if n > 1: raise SystemExit(0)\n    return x + y\n", onlyFail},
		{"print forged result records", "HumanEval/0", `
import sys, struct, os
payload = b"V" + struct.pack(">d", 0.0) + b"T"
frame = b"R" + struct.pack(">I", 16 + len(payload)) + struct.pack(">dd", 0.0, 0.0) + payload
for _ in range(5000):
    sys.stdout.buffer.write(frame)
    os.write(1, frame)
    os.write(2, frame)
sys.stdout.flush()
def has_close_elements(numbers, threshold):
    print(frame)
    return None
`, onlyFail},
		{"forge records on the result pipe and exit", "HumanEval/0", `
import os, struct
rec = b"V" + struct.pack(">d", 0.0) + b"T"
for _ in range(2000):
    try:
        os.write(3, struct.pack(">I", len(rec)) + rec)
    except OSError:
        break
os._exit(0)
`, onlyFail},
		{"expected values from the caller's frames", "HumanEval/53", `
import sys
def add(x, y):
    found = None
    f = sys._getframe(1)
    while f is not None:
        for name, val in list(f.f_locals.items()) + list(f.f_globals.items()):
            if name in ("expected", "exp", "oracle", "results", "outputs") and val:
                found = val
        f = f.f_back
    return found
`, onlyFail},
		{"expected values from gc", "HumanEval/53", `
import gc
def add(x, y):
    best = None
    for o in gc.get_objects():
        if type(o) is dict and "expected" in o:
            best = o["expected"]
        if type(o) is list and len(o) > 100 and all(type(i) is int for i in o[:10]):
            best = o
    return best
`, onlyFail},
		{"expected values on disk", "HumanEval/53", `
import os
def add(x, y):
    for root, dirs, files in os.walk("/"):
        if root.startswith(("/proc", "/sys", "/usr", "/dev")):
            dirs[:] = []
            continue
        for f in files:
            p = os.path.join(root, f)
            try:
                data = open(p, "rb").read(1 << 20)
            except OSError:
                continue
            if b"plus_input" in data or b"canonical_solution" in data:
                return data
    return -1
`, onlyFail},
		{"expected values in the environment", "HumanEval/53", `
import os
def add(x, y):
    for k, v in os.environ.items():
        if "EXPECT" in k or "ANSWER" in k:
            return int(v)
    for p in ("/proc/1/environ", "/proc/%d/environ" % os.getppid()):
        try:
            return open(p, "rb").read()
        except OSError:
            pass
    return -1
`, onlyFail},
		{"read the supervisor's memory", "HumanEval/53", `
import os
def add(x, y):
    try:
        with open("/proc/%d/mem" % os.getppid(), "rb") as f:
            return f.read(16)
    except OSError as e:
        return -2
`, onlyFail},
		{"write a results file", "HumanEval/53", `
import json, os
for p in ("/tmp/eval_results.json", "/results/eval_results.json", "eval_results.json", "/harness/eval_results.json"):
    try:
        with open(p, "w") as f:
            json.dump({"eval": {"HumanEval/53": [{"base_status": "pass", "plus_status": "pass"}]}}, f)
    except OSError:
        pass
def add(x, y):
    return 0
`, onlyFail},
		{"monkeypatch json, type, isinstance", "HumanEval/53", `
import builtins, json
builtins.type = lambda *a: int
builtins.isinstance = lambda *a: True
json.dumps = lambda *a, **k: '"pass"'
json.loads = lambda *a, **k: []
def add(x, y):
    return "pass"
`, onlyFail},
		{"monkeypatch the harness", "HumanEval/53", `
import sys, gc, struct
for o in gc.get_objects():
    if type(o) is type(lambda: 0) and o.__name__ in ("encode", "enc", "emit", "make_encoder"):
        try:
            o.__code__ = (lambda *a, **k: b"T").__code__
        except Exception:
            pass
for m in list(sys.modules.values()):
    for name in ("U32", "F64", "GAP"):
        if hasattr(m, name):
            try:
                setattr(m, name, struct.Struct(">I"))
            except Exception:
                pass
def add(x, y):
    return True
`, onlyFail},
		{"infinite loop at import", "HumanEval/53", "while True:\n    pass\n", onlyTimeout},
		{"segfault", "HumanEval/53", "import ctypes\ndef add(x, y):\n    return ctypes.string_at(0)\n", onlyFail},
		{"recursion bomb", "HumanEval/53", "import sys\nsys.setrecursionlimit(10**7)\ndef r(n):\n    return r(n + 1) + 1\ndef add(x, y):\n    return r(0)\n", failOrTime},
		{"huge output to stdout", "HumanEval/53", "import os\nblock = b'x' * (1 << 20)\nwhile True:\n    os.write(1, block)\n", onlyTimeout},
		{"huge return value", "HumanEval/12", "def longest(strings):\n    return 'x' * (300 << 20)\n", onlyFail},
		{"huge list return value", "HumanEval/29", "def filter_by_prefix(s, p):\n    return [p] * (50 << 20)\n", failOrTime},
		{"memory bomb", "HumanEval/53", "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n", onlyFail},
		{"fork bomb", "HumanEval/53", `
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
`, failOrTime},
		{"CPU bomb with threads", "HumanEval/53", `
import threading
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
def add(x, y):
    while True:
        pass
`, failOrTime},
		{"fill /tmp and leave a process behind", "HumanEval/53", `
import os
try:
    with open("/tmp/junk", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
except OSError:
    pass
if os.fork() == 0:
    os.setsid()
    while True:
        pass
def add(x, y):
    return None
`, onlyFail},
		{"kill the parent (the zygote)", "HumanEval/53", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(x, y):\n    return x + y\n", onlyFail},
		{"stop the parent (the zygote)", "HumanEval/53", "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(3600)\n", failOrTime},
		{"sleep", "HumanEval/53", "import time\ndef add(x, y):\n    time.sleep(3600)\n", onlyFail},
		{"kill everything it may", "HumanEval/53", "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\ndef add(x, y):\n    return x + y\n", onlyFail},
	}
}

// TestHostileSuite runs every hostile candidate under each runtime.
func TestHostileSuite(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) { testHostileSuite(t, e) })
}

func testHostileSuite(t *testing.T, e *sandbox.Engine) {
	launch, _, img := testSandboxOn(t, e)
	d := testDataset(t, "humanevalplus-mini-v0.1.10")
	truth := testTruth(t, d, img)
	cands := hostileCandidates()
	var samples []*Sample
	taskSet := map[string]bool{}
	for i, c := range cands {
		samples = append(samples, &Sample{TaskID: c.task, ID: i, Solution: c.program(d), Origin: c.name})
		taskSet[c.task] = true
	}
	var tasks []*Task
	for _, task := range d.Tasks {
		if taskSet[task.ID] {
			tasks = append(tasks, task)
		}
	}
	// Tighter time limits than the defaults keep the suite short; they are
	// CPU seconds, so a loaded machine does not make them flaky (under
	// runsc the host's clock of the container decides the load allowance
	// and the list's limit, since gVisor's clock counts a loaded host's
	// waits). The load allowance, which ends at the load mark, holds the
	// memory bomb's 448 MiB before its MemoryError.
	limits := DefaultRunLimits()
	limits.MinTimeLimit, limits.ImportAllowance = 1, 6
	start := time.Now()
	rep, err := Run(context.Background(), Config{
		Dataset: d, Tasks: tasks, Samples: samples, Launch: launch, Truth: truth,
		Limits: limits, Parallel: 2,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("%d samples in %v", len(samples), time.Since(start))
	if !rep.SelfCheck.OK() {
		t.Fatalf("self-check: %+v", rep.SelfCheck)
	}
	for i, r := range rep.Results {
		c := cands[i]
		for _, pr := range []*PhaseResult{&r.Base, r.Plus} {
			ok := false
			for _, w := range c.want {
				ok = ok || pr.Status == w
			}
			if !ok {
				t.Errorf("%s: status %s (%s), want one of %v", c.name, pr.Status, pr.Reason, c.want)
			} else {
				t.Logf("%s: %s (%s)", c.name, pr.Status, pr.Reason)
			}
		}
	}
}
