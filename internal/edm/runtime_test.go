package edm

import (
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

// The runtime is pinned: a change to it must change RuntimeTreeDigest in
// the same reviewed commit.
func TestRuntimeDigestPinned(t *testing.T) {
	m, err := digest.TreeFS(runtimeFS, "runtime")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Digest(); got != RuntimeTreeDigest {
		t.Fatalf("embedded runtime digest %s, RuntimeTreeDigest %s: review the runtime change and update the pin", got.Hex(), RuntimeTreeDigest.Hex())
	}
	dir := t.TempDir() + "/rt"
	if err := writeRuntime(dir); err != nil {
		t.Fatal(err)
	}
}
