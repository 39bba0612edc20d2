package internal_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// homeJoin matches code that builds a path under REPRO_HOME itself: a
// join onto a home folder, or a read of REPRO_HOME.
var homeJoin = regexp.MustCompile(`filepath\.Join\(\s*(home|[a-z]+\.home|[a-z]+\.Home\(\))\s*,|Getenv\("REPRO_HOME"\)`)

// TestOnlyLayoutBuildsHomePaths: every path under REPRO_HOME comes from
// internal/layout (docs/ARCHITECTURE.md, "REPRO_HOME").
func TestOnlyLayoutBuildsHomePaths(t *testing.T) {
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "layout" || strings.HasPrefix(d.Name(), ".") && p != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if homeJoin.MatchString(line) {
				t.Errorf("%s:%d builds a REPRO_HOME path itself; ask internal/layout: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
