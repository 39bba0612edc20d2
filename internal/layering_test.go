package internal_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// allowed lists, for each package, the repro packages it may import.
// A package missing from the map may import nothing of repro's.
var allowed = map[string][]string{
	"catalog":    {"digest", "exitcode", "strictjson"},
	"layout":     {"exitcode"},
	"store":      {"atomicfile", "catalog", "digest", "exitcode", "layout", "safefile"},
	"pickle":     {"atomicfile", "digest", "exitcode", "safefile"},
	"mllog":      {"exitcode", "safefile", "workpool"},
	"sandbox":    {"atomicfile", "digest", "exitcode", "layout", "safefile", "strictjson"},
	"keys":       {"atomicfile", "digest", "safefile"},
	"trust":      {"keys", "safefile", "strictjson"},
	"runs":       {"atomicfile", "digest", "exitcode", "keys", "layout", "safefile", "sigbundle", "strictjson", "trust"},
	"release":    {"atomicfile", "buildinfo", "digest", "exitcode", "keys", "safefile", "sigbundle"},
	"humaneval":  {"atomicfile", "catalog", "digest", "exitcode", "imagetrust", "runs", "safefile", "sandbox", "store", "workload", "workpool"},
	"imagetrust": {"atomicfile", "digest", "exitcode", "keys", "layout", "runs", "safefile", "sandbox", "strictjson", "trust", "vulnscan"},
	"edm":        {"atomicfile", "catalog", "digest", "exitcode", "pickle", "runs", "safefile", "store", "workload"},
	"runindex":   {"digest", "exitcode", "layout", "runs", "safefile"},
	"workload":   {"atomicfile", "catalog", "digest", "exitcode", "runindex", "runs", "store"},
	"ui":         {"exitcode", "store"},
	"report":     {"exitcode", "humaneval", "mllog", "runs", "safefile"},
	"rundiff":    {"exitcode", "report", "runs"},
	"dashboard":  {"exitcode", "layout", "report", "rundiff", "runs"},
	"vulnscan":   {"atomicfile", "digest", "exitcode", "layout", "runs", "safefile", "strictjson"},
	"handoff":    {"atomicfile", "catalog", "digest", "exitcode", "mllog", "runs", "safefile", "store", "strictjson", "workload"},
	"shard":      {"atomicfile", "catalog", "digest", "exitcode", "humaneval", "imagetrust", "layout", "runs", "safefile", "sandbox", "store", "workload"},
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

// owned maps a standard package to the one repro package that may import
// it; everyone else goes through that package.
var owned = map[string]string{
	"crypto/sha256": "github.com/reprolab/repro/internal/digest",
}

// TestOneOwnerPerConcern checks, like a depguard rule, that only the owner
// of a concern imports its standard package, in code and in tests: hashing
// goes through internal/digest.
func TestOneOwnerPerConcern(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "github.com/reprolab/repro/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if owner, ok := owned[imp]; ok && p.ImportPath != owner {
				t.Errorf("%s imports %s; only %s may", p.ImportPath, imp, owner)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list found %d packages", n)
	}
}

// skipCall matches a test skipping itself: t.Skip, b.Skipf, tb.SkipNow.
var skipCall = regexp.MustCompile(`\.Skip(f|Now)?\(`)

// TestSkipsGoThroughTestenv keeps every skip in internal/testenv, which
// turns it into a failure where skips are disallowed (scripts/test.sh) and
// lets only the GPU-only test skip, and only without a GPU. It also keeps
// the decision of what CI=true means there.
func TestSkipsGoThroughTestenv(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "testdata" || path == filepath.Join("..", "internal", "testenv") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || path == filepath.Join("..", "internal", "layering_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if skipCall.MatchString(line) {
				t.Errorf("%s:%d skips a test; call testenv.Missing or testenv.SkipWithoutGPU instead", path, i+1)
			}
			if strings.Contains(line, `Getenv("CI")`) {
				t.Errorf("%s:%d reads CI; testenv.SkipDisallowed decides what it means", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gated are the sandbox functions that hand out the pinned image without
// the trust file's image policy; outside the sandbox package, only
// imagetrust (which applies the policy) may call them in code, so that
// every sandboxed run goes through imagetrust.Open or imagetrust.Verify.
var gated = regexp.MustCompile(`sandbox\.(OpenPinned|PinnedImage)\(`)

// TestSandboxedRunsCheckTheImagePolicy keeps every caller of the gated
// functions in internal/imagetrust (tests may call them).
func TestSandboxedRunsCheckTheImagePolicy(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		if dir == filepath.Join("..", "internal", "imagetrust") || dir == filepath.Join("..", "internal", "sandbox") || dir == filepath.Join("..", "internal", "sandbox", "sandboxtest") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if gated.MatchString(line) {
				t.Errorf("%s:%d takes the pinned image without the trust file's image policy; call imagetrust.Open or imagetrust.Verify", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
