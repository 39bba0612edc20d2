package release

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
)

// TestAttestDirChecks: AttestDir refuses an unusable key (exit 3) before
// it parses anything else, then a malformed --started or --build-command
// (exit 2) before it reads dir; VerifyDir refuses a missing public key
// before it reads dir.
func TestAttestDirChecks(t *testing.T) {
	tmp := t.TempDir()
	kp := filepath.Join(tmp, "release.key")
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePrivate(kp, k); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing")
	for _, c := range []struct {
		name string
		r    AttestRequest
		code exitcode.Code
		want string
	}{
		{"no key", AttestRequest{KeyPath: missing, Started: "bad"}, exitcode.Precondition, "release key"},
		{"bad start", AttestRequest{KeyPath: kp, Started: "bad", BuildCommands: []string{"nope"}}, exitcode.Usage, "--started"},
		{"bad build command", AttestRequest{KeyPath: kp, BuildCommands: []string{"linux/amd64=make", "nope"}}, exitcode.Usage, "--build-command"},
	} {
		c.r.Now = time.Now()
		if _, err := AttestDir(missing, c.r); exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (exit %d), want exit %d naming %q", c.name, err, exitcode.Of(err), c.code, c.want)
		}
	}
	if _, err := AttestDir(missing, AttestRequest{KeyPath: kp, Started: "2026-01-01T00:00:00Z", Now: time.Now()}); err == nil || strings.Contains(err.Error(), "--") {
		t.Errorf("a well-formed request for a missing folder: %v, want Attest's error", err)
	}
	if _, err := VerifyDir(missing, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing public key: %v", err)
	}
}
