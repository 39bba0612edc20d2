package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/sandbox/sandboxtest"
)

// TestHugeOutput floods stdout and stderr: the runner keeps the cap, drains
// the rest so that the program is not blocked, and the engine writes no log.
func TestHugeOutput(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	f := newFixture(t)
	l := testLimits()
	code := `
chunk = b"o" * (64 << 10)
for i in range(256):
    sys.stdout.buffer.write(chunk)
    sys.stderr.buffer.write(chunk)
sys.stdout.flush()
`
	c, err := e.Start(context.Background(), f.spec(img, code, l, false))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr []byte
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); stdout, _ = io.ReadAll(c.Stdout()) }()
	go func() { defer wg.Done(); stderr, _ = io.ReadAll(c.Stderr()) }()

	// While the flood runs, the engine must keep no log of it.
	root := dockerRoot(t, e)
	var maxLog int64
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if root == "" {
				continue
			}
			filepath.Walk(filepath.Join(root, "containers", c.ID()), func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() && fi.Size() > maxLog {
					maxLog = fi.Size()
				}
				return nil
			})
		}
	}()
	o, err := c.Wait(context.Background())
	close(stop)
	<-polled
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !o.OutputCapHit || int64(len(stdout)) != l.OutputCap || int64(len(stderr)) != l.OutputCap {
		t.Errorf("output cap: hit %v, kept %d and %d bytes, cap %d", o.OutputCapHit, len(stdout), len(stderr), l.OutputCap)
	}
	if o.TimedOut || o.ExitCode != 0 {
		t.Errorf("the program was not drained to its end: %+v", o)
	}
	if maxLog > 64<<10 {
		t.Errorf("the engine wrote a %d-byte file for the container", maxLog)
	}
	if err := f.hostSide(t, e, o); err != nil {
		t.Error(err)
	}
}

var reproBin struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// buildRepro builds the repro command once for all tests of the process.
func buildRepro(t *testing.T) string {
	t.Helper()
	reproBin.once.Do(func() {
		reproBin.dir, reproBin.err = os.MkdirTemp("", "repro-bin-")
		if reproBin.err != nil {
			return
		}
		reproBin.path = filepath.Join(reproBin.dir, "repro")
		reproBin.out, reproBin.err = exec.Command("go", "build", "-o", reproBin.path, "github.com/reprolab/repro/cmd/repro").CombinedOutput()
	})
	if reproBin.err != nil {
		t.Fatalf("go build: %v\n%s", reproBin.err, reproBin.out)
	}
	return reproBin.path
}

// startRepro runs `repro sandbox run` on a program that sleeps, and waits
// until its container runs. It returns the process and the container ID.
func startRepro(t *testing.T, e *sandbox.Engine, bin, deadline string) (*exec.Cmd, string) {
	t.Helper()
	marker := "repro-lifecycle-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	cmd := exec.Command(bin, "sandbox", "run", "--deadline", deadline, "--", "python3", "-c", "import time; time.sleep(1000)", marker)
	cmd.Env = append(os.Environ(), "REPRO_HOME="+sandboxtest.Home())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	filter := make(client.Filters).Add("label", sandbox.LabelOwner+"="+strconv.Itoa(cmd.Process.Pid))
	for start := time.Now(); time.Since(start) < 60*time.Second; time.Sleep(100 * time.Millisecond) {
		l, err := e.Client().ContainerList(context.Background(), client.ContainerListOptions{Filters: filter})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 1 && programRuns(t, e, l.Items[0].ID, marker) {
			return cmd, l.Items[0].ID
		}
	}
	t.Fatal("repro's sandbox container did not start")
	return nil, ""
}

// programRuns reports whether container id runs and its program has
// started. Under runc the program is a host process whose command line holds
// marker (repro's own is the other one); under runsc the program lives in
// gVisor's kernel, which the host's process table does not show, so a
// running container is what the host can see.
func programRuns(t *testing.T, e *sandbox.Engine, id, marker string) bool {
	t.Helper()
	ins, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil || ins.Container.State == nil || !ins.Container.State.Running {
		return false
	}
	if ins.Container.HostConfig != nil && ins.Container.HostConfig.Runtime == "runsc" {
		return true
	}
	return len(hostProcesses(marker)) > 1
}

// TestReproSIGTERM: SIGTERM to repro removes its container before it exits.
func TestReproSIGTERM(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	sandboxtest.Image(t, e)
	bin := buildRepro(t)
	cmd, id := startRepro(t, e, bin, "60s")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("repro did not exit within 30 s of SIGTERM")
	}
	if _, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("container %s outlived repro (inspect: %v)", id, err)
	}
	if cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("an interrupted run exited 0")
	}
}

// TestReproSIGKILL: a repro killed outright leaves its container running;
// the next repro that connects to the engine (here `repro sandbox check`)
// finds that the container's owner is gone and removes it at once, long
// before its deadline, saying so; and a start-up sweep removes a container
// whose deadline has passed, whoever made it.
func TestReproSIGKILL(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	sandboxtest.Image(t, e)
	bin := buildRepro(t)
	// Any repro process that connects meanwhile reaps the container as
	// well (the package tests run side by side); a container reaped by
	// another is gone but not in this check's list: try again.
	for attempt := 1; ; attempt++ {
		cmd, id := startRepro(t, e, bin, "5m")
		cmd.Process.Kill()
		cmd.Wait()
		ins, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if err != nil || !ins.Container.State.Running {
			t.Fatalf("the container of the killed repro did not outlive it, the test proves nothing: %v", err)
		}
		check := exec.Command(bin, "sandbox", "check", "--json")
		check.Env = append(os.Environ(), "REPRO_HOME="+sandboxtest.Home())
		var stderr strings.Builder
		check.Stderr = &stderr
		out, err := check.Output()
		if err != nil {
			t.Fatalf("repro sandbox check: %v\n%s", err, stderr.String())
		}
		if _, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Fatalf("repro sandbox check left container %s of a killed repro (inspect: %v)", id, err)
		}
		var rep struct {
			Reaped []sandbox.Reaped `json:"reaped_containers"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("sandbox check --json: %v", err)
		}
		i := slices.IndexFunc(rep.Reaped, func(r sandbox.Reaped) bool { return r.ID == id })
		if i >= 0 {
			if rep.Reaped[i].OwnerPID != cmd.Process.Pid || !strings.Contains(rep.Reaped[i].Reason, "exited") {
				t.Errorf("reaped %+v, want owner %d that exited", rep.Reaped[i], cmd.Process.Pid)
			}
			if !strings.Contains(stderr.String(), "removed sandbox container "+id[:12]) {
				t.Errorf("the removal was not told on stderr:\n%s", stderr.String())
			}
			break
		}
		if attempt == 3 {
			t.Fatalf("in %d tries, another repro always reaped the container first; this check listed %+v", attempt, rep.Reaped)
		}
		t.Logf("another repro reaped %s first; again", id[:12])
	}

	// The deadline sweep: a container of a live owner (this process) whose
	// deadline has passed.
	id := createLabelled(t, e, map[string]string{sandbox.LabelDeadline: strconv.FormatInt(time.Now().Unix()-1, 10),
		sandbox.LabelOwner: strconv.Itoa(os.Getpid()), sandbox.LabelOwnerProcess: ownerLabel(t, os.Getpid(), startTicks(t, os.Getpid()), "")})
	if _, err := e.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the sweep left container %s past its deadline (inspect: %v)", id, err)
	}
}

// TestReapOrphans: a sweep removes before its deadline a container whose
// owner label names, exactly, a process of this host that has exited or
// whose pid now names another process; it keeps one whose owner runs, one
// made on another boot (another host on a shared engine), and one whose
// owner labels are not exactly ours.
func TestReapOrphans(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	sandboxtest.Image(t, e)
	me := os.Getpid()
	myStart := startTicks(t, me)
	gone := exec.Command("sleep", "60")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	goneStart := startTicks(t, gone.Process.Pid)
	gone.Process.Kill()
	gone.Wait()
	reusedStart, _ := strconv.ParseUint(myStart, 10, 64)
	cases := []struct {
		name  string
		pid   int
		owner string
		reap  string // what the reason says; "" to keep
	}{
		{"owner runs", me, ownerLabel(t, me, myStart, ""), ""},
		{"pid reused", me, ownerLabel(t, me, strconv.FormatUint(reusedStart+1, 10), ""), "another process"},
		{"owner exited", gone.Process.Pid, ownerLabel(t, gone.Process.Pid, goneStart, ""), "exited"},
		{"another boot", gone.Process.Pid, ownerLabel(t, gone.Process.Pid, goneStart, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), ""},
		{"owner pids disagree", gone.Process.Pid + 1, ownerLabel(t, gone.Process.Pid, goneStart, ""), ""},
		{"leading zero", gone.Process.Pid, strings.Replace(ownerLabel(t, gone.Process.Pid, goneStart, ""), "/"+strconv.Itoa(gone.Process.Pid)+"/", "/0"+strconv.Itoa(gone.Process.Pid)+"/", 1), ""},
		{"pid only", gone.Process.Pid, "", ""},
	}
	deadline := strconv.FormatInt(time.Now().Add(10*time.Minute).Unix(), 10)
	for attempt := 1; ; attempt++ {
		ids := make([]string, len(cases))
		for i, c := range cases {
			l := map[string]string{sandbox.LabelDeadline: deadline, sandbox.LabelOwner: strconv.Itoa(c.pid)}
			if c.owner != "" {
				l[sandbox.LabelOwnerProcess] = c.owner
			}
			ids[i] = createLabelled(t, e, l)
		}
		if _, err := e.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		reaped := e.Reaped()
		unlisted := 0
		for i, c := range cases {
			_, err := e.Client().ContainerInspect(context.Background(), ids[i], client.ContainerInspectOptions{})
			j := slices.IndexFunc(reaped, func(r sandbox.Reaped) bool { return r.ID == ids[i] })
			switch {
			case c.reap == "" && err != nil:
				t.Errorf("%s: the container was removed before its deadline (%v)", c.name, err)
			case c.reap == "" && j >= 0:
				t.Errorf("%s: listed as reaped: %+v", c.name, reaped[j])
			case c.reap != "" && !cerrdefs.IsNotFound(err):
				t.Errorf("%s: the container was kept (inspect: %v)", c.name, err)
			case c.reap != "" && j < 0:
				unlisted++ // another process's sweep may have been first
			case c.reap != "" && (!strings.Contains(reaped[j].Reason, c.reap) || reaped[j].OwnerPID != c.pid):
				t.Errorf("%s: reaped %+v, want owner %d and a reason naming %q", c.name, reaped[j], c.pid, c.reap)
			}
		}
		if unlisted == 0 || t.Failed() {
			return
		}
		if attempt == 3 {
			t.Fatalf("in %d tries another process always reaped first", attempt)
		}
	}
}

// createLabelled creates, without starting it, a container of the
// evaluator image carrying the sandbox label and labels, removed when the
// test ends.
func createLabelled(t *testing.T, e *sandbox.Engine, labels map[string]string) string {
	t.Helper()
	img := sandboxtest.Image(t, e)
	l := map[string]string{sandbox.LabelKey: "1"}
	for k, v := range labels {
		l[k] = v
	}
	c, err := e.Client().ContainerCreate(context.Background(), client.ContainerCreateOptions{
		Config:     &container.Config{Image: img.ID, Cmd: []string{"/bin/true"}, Labels: l, NetworkDisabled: true},
		HostConfig: &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Client().ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	return c.ID
}

// ownerLabel writes the LabelOwnerProcess value of process pid started at
// start (clock ticks), in this process's namespaces, on boot (this host's
// when "").
func ownerLabel(t *testing.T, pid int, start, boot string) string {
	t.Helper()
	if boot == "" {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			t.Fatal(err)
		}
		boot = strings.TrimSpace(string(b))
	}
	ns := func(kind string) string {
		l, err := os.Readlink("/proc/self/ns/" + kind)
		if err != nil {
			return "0"
		}
		return strings.TrimSuffix(strings.TrimPrefix(l, kind+":["), "]")
	}
	return boot + "/" + ns("pid") + "/" + ns("time") + "/" + strconv.Itoa(pid) + "/" + start
}

// startTicks reads the start time of process pid (field 22 of its stat).
func startTicks(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[19]
}

// TestRunRejectsChangedSamples: a sample that changes while its program
// runs (here from the host, since the container cannot) makes the run an
// integrity failure that names the change.
func TestRunRejectsChangedSamples(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	f := newFixture(t)
	s := f.spec(img, "time.sleep(1.5)\nreport(done=1)\n", testLimits(), false)
	go func() {
		time.Sleep(500 * time.Millisecond)
		p := filepath.Join(f.ws.Dir(), f.ws.Files()[0])
		os.Chmod(f.ws.Dir(), 0o755)
		os.Chmod(p, 0o644)
		os.WriteFile(p, []byte("def add(a, b):\n    return 42\n"), 0o644)
		os.Chmod(p, 0o444)
		os.Chmod(f.ws.Dir(), 0o555)
	}()
	o, err := e.Run(context.Background(), s, nil)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "sample0.py: content changed") {
		t.Fatalf("Run = %v (code %v), want an integrity error naming sample0.py", err, exitcode.Of(err))
	}
	if o == nil || o.ExitCode != 0 {
		t.Errorf("the outcome is not returned with the integrity error: %+v", o)
	}
}

// TestRunRefusesUnpinnedImage: only an image read from the pin runs.
func TestRunRefusesUnpinnedImage(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	s := sandbox.Spec{Image: sandbox.Image{ID: img.ID, ManifestDigest: img.ManifestDigest}, Cmd: []string{"/bin/true"}, Limits: testLimits()}
	if _, err := e.Run(context.Background(), s, nil); exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("an image literal ran: %v", err)
	}
	home := t.TempDir()
	if _, err := sandbox.PinnedImage(context.Background(), e, home); exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("no pin: %v", err)
	}
}

// TestBuildImageIsReproducible loads the image again from the cached layer
// into a fresh REPRO_HOME: the engine must report the same image ID and the
// build the same manifest digest.
func TestBuildImageIsReproducible(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	home := t.TempDir()
	cache := filepath.Join(home, "sandbox", "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"layer.tar", "layer.json"} {
		b, err := os.ReadFile(filepath.Join(sandboxtest.Home(), "sandbox", "cache", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again, err := sandbox.BuildImage(context.Background(), e, home, sandbox.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != img.ID || again.ManifestDigest != img.ManifestDigest {
		t.Fatalf("rebuilt image %+v differs from %+v", again, img)
	}
	pinned, err := sandbox.PinnedImage(context.Background(), e, home)
	if err != nil || pinned.ID != img.ID {
		t.Fatalf("pin of the rebuilt image: %+v %v", pinned, err)
	}
	// A cached layer that was changed is not used.
	f, err := os.OpenFile(filepath.Join(cache, "layer.tar"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("tampered"))
	f.Close()
	if os.Geteuid() != 0 {
		return
	}
	if _, err := os.Stat("/usr/sbin/debootstrap"); err != nil {
		return
	}
	// Without a usable cache the build would bootstrap again; a cancelled
	// context stops it before it does, proving the cache was refused.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var progress strings.Builder
	if _, err := sandbox.BuildImage(ctx, e, home, sandbox.BuildOptions{Progress: &progress}); err == nil {
		t.Fatal("a build from a tampered cache succeeded")
	}
	if !strings.Contains(progress.String(), "ignoring the cached layer") {
		t.Errorf("the tampered cache was not reported: %q", progress.String())
	}
}

// TestSelfTest: `repro sandbox check`'s probe finds every control in force
// under each runtime, and reports a removed one.
func TestSelfTest(t *testing.T) {
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		t.Parallel()
		testSelfTest(t, e)
	})
}

func testSelfTest(t *testing.T, e *sandbox.Engine) {
	img := sandboxtest.Image(t, e)
	rt := e.Runtime()
	cs, err := e.SelfTest(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 15 {
		t.Fatalf("only %d controls checked", len(cs))
	}
	for _, c := range cs {
		if !c.OK {
			t.Errorf("control %s not in force: %s", c.Name, c.Detail)
		}
	}
	removals := []struct{ control, row string }{
		{"network", "network none"}, {"seccomp", "seccomp profile"}, {"read-only root", "read-only root"},
		{"init", "init"}, {"cpu", "cpu limit"}, {"memory", "memory limit"}, {"pids", "pids limit"},
		{"no-new-privileges", "no-new-privileges"}, {"tmpfs", "noexec /tmp"},
	}
	if rt == sandbox.Runsc {
		// Under runsc gVisor and the launcher each hold seccomp for the
		// program, and gVisor keeps the sandbox without a network and
		// answers no_new_privs set on its own.
		removals = []struct{ control, row string }{
			{"seccomp launcher and profile", "seccomp profile"}, {"seccomp launcher and profile", "noexec /results"}, {"read-only root", "read-only root"},
			{"init", "init"}, {"cpu", "cpu limit"}, {"memory", "memory limit"}, {"pids", "pids limit"}, {"tmpfs", "noexec /tmp"},
		}
	}
	for _, m := range removals {
		weak := sandboxtest.EngineRuntime(t, rt)
		sandbox.RemoveControl(weak, m.control)
		cs, err := weak.SelfTest(context.Background(), img)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range cs {
			if c.Name == m.row {
				found = true
				if c.OK {
					t.Errorf("with %s removed the self-test still reports %q in force: %s", m.control, m.row, c.Detail)
				}
			}
		}
		if !found {
			t.Errorf("no row %q", m.row)
		}
	}
	// A row the probe cannot observe says so.
	for _, c := range cs {
		if c.Echo != strings.HasPrefix(c.Detail, "configuration echo") {
			t.Errorf("control %s: echo %v but detail %q", c.Name, c.Echo, c.Detail)
		}
	}
}

// TestKernelSeen: from inside, the program sees the host's kernel under
// runc and gVisor's under runsc; the self-test's runtime row says so, and
// neither runtime's observation passes for the other's.
func TestKernelSeen(t *testing.T) {
	seen := map[sandbox.Runtime][2]string{}
	var hostKernel string
	sandboxtest.EachRuntime(t, func(t *testing.T, e *sandbox.Engine) {
		img := sandboxtest.Image(t, e)
		ctx := context.Background()
		info, err := e.Client().Info(ctx, client.InfoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hostKernel = info.Info.KernelVersion
		o, err := e.Run(ctx, sandbox.Spec{Image: img, Limits: sandbox.SelfTestLimits(),
			Cmd: []string{"python3", "-c", "import os; print(os.uname().release); print(open('/proc/version').read().strip())"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		release, procVersion, _ := strings.Cut(strings.TrimSpace(string(o.Stdout)), "\n")
		seen[e.Runtime()] = [2]string{release, procVersion}
		t.Logf("%s: the program sees %q, %q; the host runs %q", e.Runtime(), release, procVersion, hostKernel)
		if err := sandbox.KernelSeen(e.Runtime(), hostKernel, release, procVersion); err != nil {
			t.Error(err)
		}
		cs, err := e.SelfTest(ctx, img)
		if err != nil {
			t.Fatal(err)
		}
		row := slices.IndexFunc(cs, func(c sandbox.Control) bool { return c.Name == "runtime "+string(e.Runtime()) })
		if row < 0 || !cs[row].OK {
			t.Errorf("self-test has no passing runtime row: %+v", cs)
		}
	})
	if r, ok := seen[sandbox.Runc]; ok {
		if sandbox.KernelSeen(sandbox.Runsc, hostKernel, r[0], r[1]) == nil {
			t.Errorf("what a program sees under runc (%q) passes for gVisor", r)
		}
	}
	if r, ok := seen[sandbox.Runsc]; ok {
		if sandbox.KernelSeen(sandbox.Runc, hostKernel, r[0], r[1]) == nil {
			t.Errorf("what a program sees under runsc (%q) passes for the host kernel", r)
		}
	}
}

// TestDiscard: Discard removes a running container at once, with no
// outcome: a Wait after it, or one already under way when it comes (on a
// program that would run for minutes), returns ErrDiscarded, and the
// container is gone when Discard returns.
func TestDiscard(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	img := sandboxtest.Image(t, e)
	f := newFixture(t)
	l := testLimits()
	l.Deadline = 10 * time.Minute // nothing but Discard ends the program here
	for _, waiting := range []bool{false, true} {
		c, err := e.Start(context.Background(), f.spec(img, "time.sleep(600)\n", l, false))
		if err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		if waiting {
			go func() { _, err := c.Wait(context.Background()); waited <- err }()
			time.Sleep(200 * time.Millisecond) // the Wait is under way
		}
		start := time.Now()
		discarded := make(chan error, 1)
		go func() { discarded <- c.Discard() }()
		select {
		case err := <-discarded:
			if err != nil {
				t.Errorf("Discard: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("waiting %v: Discard did not return within a minute", waiting)
		}
		t.Logf("waiting %v: discarded in %v", waiting, time.Since(start).Round(time.Millisecond))
		if _, err := e.Client().ContainerInspect(context.Background(), c.ID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("waiting %v: container %s outlived Discard (inspect: %v)", waiting, c.ID(), err)
		}
		if !waiting {
			go func() { _, err := c.Wait(context.Background()); waited <- err }()
		}
		select {
		case err := <-waited:
			if !errors.Is(err, sandbox.ErrDiscarded) {
				t.Errorf("waiting %v: Wait = %v, want ErrDiscarded", waiting, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("waiting %v: Wait did not return after Discard", waiting)
		}
	}
}
