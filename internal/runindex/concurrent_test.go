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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/testenv"
)

// The test binary doubles as the child processes of the tests below,
// chosen by REPRO_RUNINDEX_CHILD.
func TestMain(m *testing.M) {
	home := os.Getenv("REPRO_HOME")
	switch os.Getenv("REPRO_RUNINDEX_CHILD") {
	case "":
		os.Exit(m.Run())
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

// TestConcurrentProcesses: four writers each run `repro mllog verify` on
// a real MLPerf log ten times, so that repro binaries end runs at once,
// while another repro binary lists the runs over and over. Every run ends
// and is signed, every list succeeds without a warning, the database holds
// every run, and the last list shows them all. (That a run is indexed by
// the process that ends it is TestEndIndexesTheRun in internal/workload.)
func TestConcurrentProcesses(t *testing.T) {
	bin, err := buildRepro()
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(testenv.MLPerfLogsDir(t), "dgxa100_ngc22.04_merlin_hugectr", "dlrm", "result_*.txt"))
	if len(logs) == 0 {
		t.Fatal("no DLRM result logs")
	}
	home := t.TempDir()
	reproRun := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
		return cmd.CombinedOutput()
	}
	// the first run makes the run key and the trust file
	if out, err := reproRun("mllog", "verify", logs[0]); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	const writers, perWriter = 4, 10
	var wg sync.WaitGroup
	writerErrs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if out, err := reproRun("mllog", "verify", logs[(w+i)%len(logs)]); err != nil {
					writerErrs[w] = fmt.Errorf("writer %d, run %d: %v\n%s", w, i, err, out)
					return
				}
			}
		}()
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
	wg.Wait()
	close(stop)
	<-done
	for _, err := range writerErrs {
		if err != nil {
			t.Error(err)
		}
	}
	if listErr != nil {
		t.Fatal(listErr)
	}
	t.Logf("%d lists ran while the runs ended; the largest saw %d runs", lists, maxSeen)
	if lists < 2 {
		t.Errorf("only %d lists ran beside the writers", lists)
	}
	const total = writers*perWriter + 1
	// The database holds every run before any further list.
	db, err := sql.Open("sqlite", layout.Home(home).RunIndex()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = db.QueryRow("SELECT count(*) FROM runs WHERE kind = 'mllog' AND status = 'ok'").Scan(&n)
	db.Close()
	if err != nil || n != total {
		t.Errorf("indexed ok runs: %d, %v; want %d", n, err, total)
	}
	l, stderr, err := reproList(t, bin, home, "--kind", "mllog", "--status", "ok", "--limit", "0")
	if err != nil || stderr != "" || len(l.Runs) != total {
		t.Fatalf("final list: %d runs, %v, stderr %q; want %d", len(l.Runs), err, stderr, total)
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
