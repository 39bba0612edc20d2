package codebench

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
)

// attackFiles holds the programs of the integrity and hostile suites, one
// file a program, in a folder a suite (testdata/attacks/README.md).
//
//go:embed testdata/attacks
var attackFiles embed.FS

// attacksRead records the files attack has returned, for
// TestEveryAttackFileIsRun.
var attacksRead struct {
	sync.Mutex
	names map[string]bool
}

// attack returns the program in testdata/attacks/name as a case runs it:
// the file less its first line, a comment that says what the program
// tries. Placeholders ({canon}, {n}, {outputs}, {loops}) are left for the
// caller to fill. It panics where the file is missing or its first line is
// not such a comment: the suites' tables are built from it before any test
// can report.
func attack(name string) string {
	b, err := attackFiles.ReadFile(path.Join("testdata/attacks", name))
	if err != nil {
		panic(fmt.Sprintf("attack program %s: %v (add it under testdata/attacks, or fix the name)", name, err))
	}
	head, prog, ok := strings.Cut(string(b), "\n")
	if !ok || !strings.HasPrefix(head, "# ") {
		panic(fmt.Sprintf("attack program %s: its first line must be a comment (# ...) that says what it tries", name))
	}
	attacksRead.Lock()
	defer attacksRead.Unlock()
	if attacksRead.names == nil {
		attacksRead.names = map[string]bool{}
	}
	attacksRead.names[name] = true
	return prog
}

// TestEveryAttackFileIsRun: every program under testdata/attacks belongs
// to a case of a suite, so that no file reads as an attack the suites run
// when none does.
func TestEveryAttackFileIsRun(t *testing.T) {
	integrityCases()
	clockCases()
	evalplusAttacks()
	hostileCandidates()
	var files []string
	err := fs.WalkDir(attackFiles, "testdata/attacks", func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() && path.Ext(p) == ".py" {
			files = append(files, strings.TrimPrefix(p, "testdata/attacks/"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no programs embedded from testdata/attacks")
	}
	attacksRead.Lock()
	defer attacksRead.Unlock()
	for _, f := range files {
		if !attacksRead.names[f] {
			t.Errorf("testdata/attacks/%s is no case's program: use it in a suite's table or remove it", f)
		}
	}
	for name := range attacksRead.names {
		if !slices.Contains(files, name) {
			t.Errorf("attack(%q) read a file that is not a .py program under testdata/attacks", name)
		}
	}
}
