package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SharedData finds the shared data folder: $REPRO_SHARED_DATA, else
// shared/data beside the repository (or one level further up, where the
// repository is a worktree in a folder of worktrees). It stops the test
// where there is none.
func SharedData(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("REPRO_SHARED_DATA"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for _, d := range []string{filepath.Join(root, "..", "shared", "data"), filepath.Join(root, "..", "..", "shared", "data")} {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	t.Fatalf("shared data not found beside the repository (set REPRO_SHARED_DATA)")
	return ""
}
