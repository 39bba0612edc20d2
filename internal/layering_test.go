package internal_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// allowed lists, for each package, the repro packages it may import.
// A package missing from the map may import nothing of repro's.
var allowed = map[string][]string{
	"catalog":   {"digest", "exitcode"},
	"layout":    {"exitcode"},
	"store":     {"atomicfile", "catalog", "digest", "exitcode", "layout", "safefile"},
	"pickle":    {"atomicfile", "digest", "exitcode", "safefile"},
	"mllog":     {"exitcode", "safefile"},
	"sandbox":   {"atomicfile", "digest", "exitcode", "layout", "safefile"},
	"runs":      {"atomicfile", "digest", "exitcode", "layout", "safefile"},
	"humaneval": {"atomicfile", "catalog", "digest", "exitcode", "runs", "safefile", "sandbox", "store", "workload", "workpool"},
	"edm":       {"atomicfile", "catalog", "digest", "exitcode", "pickle", "runs", "safefile", "store", "workload"},
	"workload":  {"atomicfile", "catalog", "digest", "exitcode", "runs", "store"},
	"ui":        {"exitcode", "store"},
	"handoff":   {"atomicfile", "catalog", "digest", "exitcode", "mllog", "runs", "safefile", "store", "workload"},
}

// TestLayering checks the import graph of internal/ against the layers in
// docs/ARCHITECTURE.md.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const prefix = "github.com/reprolab/repro/internal/"
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, prefix)
		if name == p.ImportPath || strings.Contains(name, "/") {
			continue // not a top-level internal package (sub-packages are test helpers)
		}
		ok := map[string]bool{}
		for _, a := range allowed[name] {
			ok[a] = true
		}
		for _, imp := range p.Imports {
			dep, isOurs := strings.CutPrefix(imp, prefix)
			if !isOurs {
				continue
			}
			dep, _, _ = strings.Cut(dep, "/")
			if !ok[dep] {
				t.Errorf("internal/%s imports internal/%s, which its layer does not allow", name, dep)
			}
		}
	}
}
