package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// bigSignedRun leaves in home a completed run whose record, signed with
// home's run key, also names big.bin, a sparse file of size bytes in the
// run folder (its digest is made up: no check gets that far), and writes
// a bundle of the run carrying big.bin, also sparse. Checking either
// hashes size bytes.
func bigSignedRun(t *testing.T, home string, size int64) (id, bundle string) {
	t.Helper()
	id = runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{})
	dir := layout.Home(home).Run(id)
	recPath, envPath := filepath.Join(dir, runs.RecordFile), filepath.Join(dir, "record.dsse.json")
	var rec map[string]any
	b, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	madeUp := strings.Repeat("ab", 32)
	rec["files"] = append(rec["files"].([]any), map[string]any{"path": "big.bin", "sha256": madeUp, "size": float64(size)})
	recJSON, _ := json.MarshalIndent(rec, "", "  ")
	recJSON = append(recJSON, '\n')
	eb, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(eb, &env); err != nil {
		t.Fatal(err)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Subject {
		if s.Name == runs.RecordFile {
			s.Digest["sha256"] = digest.Of(recJSON).Hex()
		}
	}
	st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: "big.bin", Digest: map[string]string{"sha256": madeUp}})
	if st.Predicate, err = structpb.NewStruct(rec); err != nil {
		t.Fatal(err)
	}
	payload, err = protojson.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	k, err := runs.LocalKey(home)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signer.SignPayload(context.Background(), runs.PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	envJSON, _ := json.MarshalIndent(signed, "", "  ")
	envJSON = append(envJSON, '\n')
	os.WriteFile(recPath, recJSON, 0o644)
	os.WriteFile(envPath, envJSON, 0o644)
	if err := os.Truncate(filepath.Join(dir, "big.bin"), 0); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	entries := []tarballtest.SparseEntry{{Name: "run/" + runs.RecordFile, Data: recJSON}, {Name: "run/record.dsse.json", Data: envJSON}}
	for _, fl := range rec["files"].([]any) {
		p := fl.(map[string]any)["path"].(string)
		if p == "big.bin" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, tarballtest.SparseEntry{Name: "run/" + p, Data: data})
	}
	pub, err := os.ReadFile(runs.LocalPublicKeyPath(home))
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, tarballtest.SparseEntry{Name: "run/big.bin", Zeros: size}, tarballtest.SparseEntry{Name: "signer.pub", Data: pub})
	bundle = filepath.Join(t.TempDir(), "big.tar")
	tarballtest.WriteSparse(t, bundle, entries)
	return id, bundle
}

// waitHashing waits until process pid holds open a file of 1 GiB or more
// (the sparse run file or bundle its command hashes). Only then is a
// signal a test of the command's check: main sets up its signal handling
// before any command runs, but on a loaded machine a fixed delay can end
// before the process reaches it, and a SIGTERM that comes first kills it
// outright. A process that ends first, or does not get there within two
// minutes, fails the test.
func waitHashing(t *testing.T, pid int, done <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !holdsBigFile(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the command opened no file of 1 GiB within 2 minutes: %s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("ended before the signal (%v): %s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holdsBigFile reports whether process pid has a regular file of 1 GiB or
// more open.
func holdsBigFile(pid int) bool {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(fds)
	for _, e := range ents {
		if fi, err := os.Stat(filepath.Join(fds, e.Name())); err == nil && fi.Mode().IsRegular() && fi.Size() >= 1<<30 {
			return true
		}
	}
	return false
}

// TestSignalStopsLongChecks: `runs verify` of a run folder and of a
// bundle, `runs export`, `runs import`, `runs diff`, `report` (of the run
// and of its dataset's board) and `runs reproduce` hash 64 GiB here (a
// sparse file: no disk); SIGTERM or Ctrl-C (SIGINT) must end each within
// a few seconds with exit 1 ("interrupted"), leaving no extracted folder,
// bundle, report, page, temporary or staging folder, or run.
// Before, the hashing went on to the end (27 to 95 s for the runs and
// bundles of the report).
func TestSignalStopsLongChecks(t *testing.T) {
	home := t.TempDir()
	id, bundle := bigSignedRun(t, home, 64<<30)
	trustPath := filepath.Join(home, "trust.json")
	other := t.TempDir()
	reviewed := filepath.Join(t.TempDir(), "reviewed")
	exported := filepath.Join(t.TempDir(), "out.tar")
	reported := filepath.Join(t.TempDir(), "report.json")
	site := t.TempDir()
	// The commands' temporary folders (runs reproduce extracts the bundle
	// into one), which must be gone after the signal.
	tmp := t.TempDir()
	// The bound leaves room for a loaded machine; the loops check for the
	// signal at every read of at most 1 MiB.
	const bound = 5 * time.Second
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		home string
		args []string
	}{
		{"runs verify of a run folder, SIGTERM", syscall.SIGTERM, home, []string{"runs", "verify", id}},
		{"runs verify --bundle --extract, SIGINT", syscall.SIGINT, other, []string{"runs", "verify", "--bundle", bundle, "--trust", trustPath, "--extract", reviewed}},
		{"runs export, SIGINT", syscall.SIGINT, home, []string{"runs", "export", id, "--out", exported}},
		{"runs import, SIGTERM", syscall.SIGTERM, other, []string{"runs", "import", bundle, "--trust", trustPath}},
		{"runs diff, SIGTERM", syscall.SIGTERM, home, []string{"runs", "diff", id, id}},
		{"report --out, SIGINT", syscall.SIGINT, home, []string{"report", id, "--format", "json", "--out", reported}},
		{"runs reproduce, SIGTERM", syscall.SIGTERM, other, []string{"runs", "reproduce", bundle, "--trust", trustPath}},
		{"report --leaderboard, SIGINT", syscall.SIGINT, home, []string{"report", "--leaderboard", "humanevalplus-v0.1.10", "--out", site}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(reproBin, tc.args...)
			cmd.Env = append(os.Environ(), "REPRO_HOME="+tc.home, "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			waitHashing(t, cmd.Process.Pid, done, &stderr)
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(bound):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running %s after %v", bound, tc.sig)
			}
			took := time.Since(sent)
			t.Logf("exited %v after %v", took.Round(time.Millisecond), tc.sig)
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != 1 || !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("after %v: exit %d (%v), want 1 naming the interruption:\n%s", tc.sig, code, err, stderr.String())
			}
		})
	}
	// Nothing half-written: no extracted folder nor its temporary
	// sibling, no bundle or report nor a temporary sibling, no staging
	// folder, no imported run or import record.
	if ents, _ := os.ReadDir(filepath.Dir(reviewed)); len(ents) > 0 {
		t.Errorf("an interrupted --extract left %s", ents[0].Name())
	}
	if ents, _ := os.ReadDir(filepath.Dir(exported)); len(ents) > 0 {
		t.Errorf("an interrupted export left %s", ents[0].Name())
	}
	if ents, _ := os.ReadDir(filepath.Dir(reported)); len(ents) > 0 {
		t.Errorf("an interrupted report left %s", ents[0].Name())
	}
	if ents, _ := os.ReadDir(site); len(ents) > 0 {
		t.Errorf("an interrupted board export left %s", ents[0].Name())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("an interrupted command left %s in its temporary folder", ents[0].Name())
	}
	if ents, _ := os.ReadDir(layout.Home(other).Imports()); len(ents) > 0 {
		t.Errorf("an interrupted import left %s in imports", ents[0].Name())
	}
	if _, err := os.Lstat(layout.Home(other).Run(id)); err == nil {
		t.Errorf("an interrupted import left run %s", id)
	}
}

// TestSignalStopsServe: `repro serve` shuts down within a few seconds of
// SIGTERM, exit 0, while a request for a run page is still checking the
// run's 64 GiB of files. Before, the shutdown waited the 5 s it allows
// the requests in flight, then exited 1 with the hashing unfinished.
func TestSignalStopsServe(t *testing.T) {
	home := t.TempDir()
	id, _ := bigSignedRun(t, home, 64<<30)
	cmd := exec.Command(reproBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { done <- cmd.Wait() }()
	base := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if err != nil || base == "" {
		cmd.Process.Kill()
		<-done
		t.Fatalf("repro serve printed %q (%v): %s", line, err, stderr.String())
	}
	go func() {
		if resp, err := http.Get(base + "runs/" + id); err == nil {
			resp.Body.Close()
		}
	}()
	// The request is checking the run's files once serve holds big.bin.
	waitHashing(t, cmd.Process.Pid, done, &stderr)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	const bound = 3 * time.Second
	select {
	case err = <-done:
	case <-time.After(bound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("serve still running %v after SIGTERM: %s", bound, stderr.String())
	}
	t.Logf("serve exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("serve after SIGTERM: %v, want exit 0: %s", err, stderr.String())
	}
}
