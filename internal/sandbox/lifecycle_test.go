package sandbox_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
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
		if len(l.Items) == 1 && len(hostProcesses(marker)) > 1 {
			return cmd, l.Items[0].ID
		}
	}
	t.Fatal("repro's sandbox container did not start")
	return nil, ""
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

// TestReproSIGKILL: a repro killed outright leaves its container, and the
// next start-up sweep removes it once its deadline has passed.
func TestReproSIGKILL(t *testing.T) {
	t.Parallel()
	e := sandboxtest.Engine(t)
	sandboxtest.Image(t, e)
	bin := buildRepro(t)
	cmd, id := startRepro(t, e, bin, "1s")
	cmd.Process.Kill()
	cmd.Wait()
	ins, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("the container of the killed repro is already gone, the test proves nothing: %v", err)
	}
	if !ins.Container.State.Running {
		t.Fatalf("the container of the killed repro stopped by itself")
	}
	dl, err := strconv.ParseInt(ins.Container.Config.Labels[sandbox.LabelDeadline], 10, 64)
	if err != nil {
		t.Fatalf("deadline label: %v", err)
	}
	time.Sleep(time.Until(time.Unix(dl+1, 0)))
	if _, err := e.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client().ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the sweep left container %s (inspect: %v)", id, err)
	}
}
