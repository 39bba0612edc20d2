package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestJSONFailuresAreJSON: under --json a failure is one exit_error object
// on stderr, with the message and the exit code; without --json it is
// one "repro:" line.
func TestJSONFailuresAreJSON(t *testing.T) {
	t.Setenv("REPRO_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want exitcode.Code
	}{
		{[]string{"verify", "humaneval", "--json"}, exitcode.Precondition},
		{[]string{"runs", "verify", "nope", "--json"}, exitcode.Usage},
		{[]string{"runs", "verify", "--bundle", "/nonexistent.tar", "--json"}, exitcode.Usage},
		{[]string{"runs", "export", "nope", "--out", "/tmp/x.tar", "--json"}, exitcode.Usage},
		{[]string{"runs", "reproduce", "/nonexistent.tar", "--json"}, exitcode.Usage},
		{[]string{"keys", "list", "--json"}, exitcode.Precondition},
		{[]string{"catalog", "list", "--json", "--bogus"}, exitcode.Usage},
		{[]string{"pickle", "scan", "--json", "/nonexistent\nfile"}, exitcode.Precondition},
	} {
		code, _, stderr := runRepro(t, tc.args...)
		var m map[string]any
		if code != tc.want || strings.Count(stderr, "\n") != 1 || json.Unmarshal([]byte(stderr), &m) != nil {
			t.Errorf("repro %q: exit %d, stderr %q; want exit %d and one JSON line", tc.args, code, stderr, tc.want)
			continue
		}
		if m["message_type"] != "exit_error" || m["exit_code"] != float64(tc.want) || m["error"] == "" {
			t.Errorf("repro %q: %v", tc.args, m)
		}
	}
	code, _, stderr := runRepro(t, "verify", "humaneval")
	if code != exitcode.Precondition || !strings.HasPrefix(stderr, "repro: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("without --json: exit %d, stderr %q", code, stderr)
	}
}

// TestFetchJSONLinesAreTagged: every line of fetch --json is a JSON object
// with a message type, the last one the summary.
func TestFetchJSONLinesAreTagged(t *testing.T) {
	t.Setenv("REPRO_HOME", t.TempDir())
	gz := filepath.Join(sharedData(t), "humanevalplus-v0.1.10", "HumanEvalPlus.jsonl.gz")
	code, stdout, stderr := runRepro(t, "fetch", "humanevalplus-v0.1.10", "--from", gz, "--json")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("want progress lines and a summary, got %q", stdout)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not a JSON object: %q", i+1, l)
		}
		want := "progress"
		if i == len(lines)-1 {
			want = "summary"
		}
		if m["message_type"] != want {
			t.Errorf("line %d: message_type %v, want %s: %q", i+1, m["message_type"], want, l)
		}
	}
}
