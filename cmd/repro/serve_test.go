package main

import (
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
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
