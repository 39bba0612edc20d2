package sandbox

import (
	"context"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/testenv"
)

// TestPinnedSBOMAsFormat: a format other than cyclonedx and spdx is a
// usage error before the pin is read; without a pin both formats fail
// with PinnedSBOM's error.
func TestPinnedSBOMAsFormat(t *testing.T) {
	home := t.TempDir()
	testenv.NoDockerEngine(t)
	if _, err := PinnedSBOMAs(context.Background(), home, nil, "bogus"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("bogus format: %v", err)
	}
	_, want := PinnedSBOM(context.Background(), home, nil)
	if want == nil {
		t.Fatal("an SBOM without a pin")
	}
	for _, f := range []string{"cyclonedx", "spdx"} {
		if _, err := PinnedSBOMAs(context.Background(), home, nil, f); err == nil || err.Error() != want.Error() {
			t.Errorf("%s without a pin: %v, want %v", f, err, want)
		}
	}
}

// TestBuildAndPinNoEngine: without an engine nothing is built (exit 3).
func TestBuildAndPinNoEngine(t *testing.T) {
	home := t.TempDir()
	testenv.NoDockerEngine(t)
	if _, pin, err := BuildAndPin(context.Background(), home, BuildOptions{}); pin != nil || exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("no engine: %v %v", pin, err)
	}
}
