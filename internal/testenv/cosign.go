package testenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RepoRoot is the root of the repro checkout the test runs in: the first
// folder above the working directory that holds scripts/deps.sh and
// tools/cosign/go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if fileExists(filepath.Join(d, "scripts", "deps.sh")) && fileExists(filepath.Join(d, "tools", "cosign", "go.mod")) {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			t.Fatal("the test does not run inside a repro checkout (no scripts/deps.sh and tools/cosign/go.mod above it)")
		}
		d = up
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

var cosign struct {
	sync.Once
	path string
	err  error
}

// Cosign returns the path of the cosign binary that tools/cosign pins
// (go.mod and go.sum of its own module), built by the go command into its
// build cache: `go -C tools/cosign tool -n cosign`, which builds it when
// the cache lacks it (scripts/deps.sh does that once per machine). A go
// command that cannot build it stops the test through Missing.
func Cosign(t testing.TB) string {
	t.Helper()
	Heavy(t, "cosign")
	root := RepoRoot(t)
	cosign.Do(func() {
		cmd := exec.Command("go", "-C", filepath.Join(root, "tools", "cosign"), "tool", "-n", "cosign")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			cosign.err = errors.New(strings.TrimSpace(err.Error() + ": " + stderr.String()))
			return
		}
		cosign.path = strings.TrimSpace(string(out))
	})
	if cosign.err != nil || !fileExists(cosign.path) {
		Missing(t, "cosign (tools/cosign)", "scripts/deps.sh builds it with 'go -C tools/cosign tool -n cosign': "+errOr(cosign.err))
	}
	return cosign.path
}

func errOr(err error) string {
	if err == nil {
		return "the go command named no binary"
	}
	return err.Error()
}

// Offline returns argv run in a new network namespace with no interface
// but a loopback that is down (unshare -n, as root), so that a tool that
// tried the network would fail; unshare missing or refused stops the test
// through Missing.
func Offline(t testing.TB, argv ...string) []string {
	t.Helper()
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		Missing(t, "unshare -n (util-linux, as root)", "run the test as root on a kernel with network namespaces: "+err.Error())
	}
	return append([]string{"unshare", "-n", "--"}, argv...)
}
