package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// TestServeRefusesRemoteWithoutFlag: a non-loopback --addr without
// --allow-remote stops before anything listens.
func TestServeRefusesRemoteWithoutFlag(t *testing.T) {
	t.Setenv("REPRO_HOME", t.TempDir())
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		code, stdout, stderr := runRepro(t, "serve", "--addr", addr)
		if code != exitcode.Usage || !strings.Contains(stderr, "--allow-remote") || stdout != "" {
			t.Errorf("serve --addr %s: exit %d\n%s%s", addr, code, stdout, stderr)
		}
	}
}

// TestServeEndToEnd: the binary serves the run list on the port it
// prints, refuses another Host, and exits 0 on SIGTERM.
func TestServeEndToEnd(t *testing.T) {
	home := t.TempDir()
	id := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{})
	cmd := exec.Command(reproBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "REPRO_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v", err)
	}
	u := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if u == "" {
		t.Fatalf("printed %q", line)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), id) {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", u, nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host: %v %v", resp, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}
