package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestHostileFileNamesCannotForgeOutput: a file name holding a newline and
// terminal escapes appears quoted in every message and listing, so it can
// neither add a line of its own nor drive the terminal.
func TestHostileFileNamesCannotForgeOutput(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x\nrepro: verdict CLEAN \x1b[2J\x1b]0;owned\x07.pkl")
	if err := os.WriteFile(name, []byte("\x80\x04\xff."), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "gone\nok   forged.log\x1b[1A")
	for _, tc := range []struct {
		args []string
		want exitcode.Code
	}{
		{[]string{"pickle", "scan", name}, exitcode.Integrity},
		{[]string{"pickle", "scan", missing}, exitcode.Precondition},
		{[]string{"pickle", "convert", name, "--out", missing}, exitcode.Precondition},
		{[]string{"mllog", "verify", name}, exitcode.Negative},
		{[]string{"mllog", "verify", missing}, exitcode.Precondition},
		{[]string{"catalog", "digest-tree", missing}, exitcode.Precondition},
	} {
		code, stdout, stderr := runRepro(t, tc.args...)
		if code != tc.want {
			t.Errorf("repro %q: exit %d, want %d\n%s", tc.args, code, tc.want, stderr)
		}
		for stream, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
			if strings.ContainsAny(text, "\x1b\x07") {
				t.Errorf("repro %q: %s carries a terminal escape: %q", tc.args, stream, text)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "repro: verdict") || strings.HasPrefix(line, "ok   forged") {
					t.Errorf("repro %q: %s has a forged line: %q", tc.args, stream, text)
				}
			}
		}
	}
}
