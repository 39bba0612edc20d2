package runindex_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/workload"
)

// The test binary doubles as the child processes of the tests below,
// chosen by REPRO_RUNINDEX_CHILD.
func TestMain(m *testing.M) {
	home := os.Getenv("REPRO_HOME")
	switch os.Getenv("REPRO_RUNINDEX_CHILD") {
	case "":
		os.Exit(m.Run())
	case "end-runs":
		// ends runs through the one path a workload takes
		n, _ := strconv.Atoi(os.Getenv("REPRO_RUNINDEX_RUNS"))
		for i := range n {
			err := workload.Do(home, "concurrent", "test", func(r *workload.Run) error {
				return r.WriteJSON("out.json", map[string]int{"i": i}, 0o600)
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "run:", err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	case "rebuild-forever":
		ix, err := runindex.Open(context.Background(), home, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			fmt.Println("rebuilding")
			if _, err := ix.Rebuild(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	os.Exit(2)
}

func child(t *testing.T, home, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "REPRO_HOME="+home, "REPRO_RUNINDEX_CHILD="+mode)...)
	return cmd
}

// buildRepro builds the repro binary once for the tests that run it.
var buildRepro = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "repro-runindex-bin-")
	if err != nil {
		return "", err
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "repro")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/repro")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

type listed struct {
	Runs []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"runs"`
}

func reproList(t *testing.T, bin, home string, args ...string) (listed, string, error) {
	cmd := exec.Command(bin, append([]string{"runs", "list", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var l listed
	if err == nil {
		err = json.Unmarshal(o.Bytes(), &l)
	}
	return l, e.String(), err
}

// TestConcurrentProcesses: four processes end runs at once while repro
// binaries list them over and over. Every run ends and is signed, every
// list succeeds without a warning, every run ends up indexed by the
// process that ended it, and the last list shows them all.
func TestConcurrentProcesses(t *testing.T) {
	bin, err := buildRepro()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	// the first run makes the run key; the children share it
	if err := workload.Do(home, "first", "test", func(*workload.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 4, 15
	var children []*exec.Cmd
	var outs []*bytes.Buffer
	for range writers {
		c := child(t, home, "end-runs", "REPRO_RUNINDEX_RUNS="+strconv.Itoa(perWriter))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		children, outs = append(children, c), append(outs, &out)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var lists, maxSeen int
	var listErr error
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, stderr, err := reproList(t, bin, home, "--limit", "0")
			if err != nil || stderr != "" {
				listErr = fmt.Errorf("list %d: %v, stderr %q", lists, err, stderr)
				return
			}
			lists++
			maxSeen = max(maxSeen, len(l.Runs))
		}
	}()
	for i, c := range children {
		if err := c.Wait(); err != nil {
			t.Errorf("writer %d: %v\n%s", i, err, outs[i])
		}
	}
	close(stop)
	<-done
	if listErr != nil {
		t.Fatal(listErr)
	}
	t.Logf("%d lists ran while the runs ended; the largest saw %d runs", lists, maxSeen)
	if lists < 2 {
		t.Errorf("only %d lists ran beside the writers", lists)
	}
	// Every run was indexed when it ended, by its own process: the
	// database holds them all before any further list.
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = db.QueryRow("SELECT count(*) FROM runs WHERE kind = 'concurrent' AND status = 'ok'").Scan(&n)
	db.Close()
	if err != nil || n != writers*perWriter {
		t.Errorf("indexed ok runs: %d, %v; want %d", n, err, writers*perWriter)
	}
	l, stderr, err := reproList(t, bin, home, "--kind", "concurrent", "--limit", "0")
	if err != nil || stderr != "" || len(l.Runs) != writers*perWriter {
		t.Fatalf("final list: %d runs, %v, stderr %q; want %d", len(l.Runs), err, stderr, writers*perWriter)
	}
	for _, r := range l.Runs[:3] {
		runstest.Verified(t, layout.Home(home).Run(r.ID))
	}
}

// TestKilledMidWrite: a process rebuilding the index is killed with
// SIGKILL at different moments; the next process finds every run.
func TestKilledMidWrite(t *testing.T) {
	home := t.TempDir()
	const total = 300
	for i := range total {
		runindex.WriteRun(t, home, i, runindex.NewFakeRun("humaneval", i))
	}
	for _, delay := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond, 700 * time.Millisecond} {
		c := child(t, home, "rebuild-forever")
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		var warnings []string
		ix, err := runindex.Open(context.Background(), home, func(w string) { warnings = append(warnings, w) })
		if err != nil {
			t.Fatalf("killed after %s: %v\n%s", delay, err, out.String())
		}
		es, err := ix.List(context.Background(), runindex.Filter{})
		ix.Close()
		if err != nil || len(es) != total {
			t.Fatalf("killed after %s (%d rebuilds begun): %d runs listed, %v; want %d", delay, strings.Count(out.String(), "rebuilding"), len(es), err, total)
		}
		for _, e := range es {
			if e.Status != "ok" {
				t.Fatalf("killed after %s: %+v", delay, e)
			}
		}
		if len(warnings) > 0 {
			t.Logf("killed after %s: %q", delay, warnings)
		}
	}
}
