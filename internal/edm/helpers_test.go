package edm

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/testenv"
)

// systemPython is Debian's interpreter, the one that has python3-torch,
// python3-numpy and python3-scipy.
const systemPython = "/usr/bin/python3"

// needPython makes sure /usr/bin/python3 can import every module named. A
// missing component stops the test (testenv.Missing).
func needPython(t testing.TB, modules ...string) {
	t.Helper()
	script := "import " + strings.Join(modules, ", ")
	out, err := exec.Command(systemPython, "-c", script).CombinedOutput()
	if err == nil {
		return
	}
	testenv.Missing(t, systemPython+" with "+strings.Join(modules, ", "),
		"Debian: python3-torch python3-numpy python3-scipy: "+strings.TrimSpace(lastOutputLine(out)))
}

func lastOutputLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return string(b[i+1:])
	}
	return string(b)
}

// runPython runs a script with /usr/bin/python3 in dir and returns stdout.
func runPython(t testing.TB, dir, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(systemPython, append([]string{"-B", "-c", script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

// runScript runs a Python file with /usr/bin/python3 -B.
func runScript(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(systemPython, append([]string{"-B", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python %s: %v\n%s", script, err, stderr.String())
	}
	return out
}
