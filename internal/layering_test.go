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
	"journal":    {"atomicfile", "digest", "strictjson"},
	"store":      {"atomicfile", "catalog", "digest", "exitcode", "filelock", "layout", "safefile", "strictjson"},
	"pickle":     {"atomicfile", "digest", "exitcode", "safefile", "strictjson", "ui"},
	"mllog":      {"exitcode", "safefile", "ui", "workpool"},
	"sandbox":    {"atomicfile", "digest", "exitcode", "layout", "safefile", "strictjson", "tarball", "ui"},
	"keys":       {"atomicfile", "digest", "safefile"},
	"sigbundle":  {"strictjson"},
	"trust":      {"keys", "safefile", "strictjson"},
	"runs":       {"atomicfile", "digest", "exitcode", "journal", "keys", "layout", "runlabel", "safefile", "sigbundle", "strictjson", "tarball", "trust"},
	"runlabel":   {"exitcode"},
	"codebench":  {"atomicfile", "catalog", "digest", "exitcode", "filelock", "imagetrust", "journal", "runlabel", "runs", "safefile", "sandbox", "store", "strictjson", "ui", "workload", "workpool"},
	"imagetrust": {"atomicfile", "digest", "exitcode", "keys", "layout", "runs", "safefile", "sandbox", "strictjson", "tarball", "trust", "ui", "vulnscan"},
	"edm":        {"atomicfile", "catalog", "digest", "exitcode", "pickle", "runs", "safefile", "store", "strictjson", "workload"},
	"runindex":   {"digest", "exitcode", "layout", "runlabel", "runs", "safefile"},
	"release":    {"atomicfile", "buildinfo", "digest", "exitcode", "keys", "safefile", "sigbundle"},
	"workload":   {"atomicfile", "catalog", "digest", "exitcode", "runindex", "runs", "store"},
	"ui":         {"exitcode"},
	"runimport":  {"atomicfile", "digest", "exitcode", "layout", "runindex", "runs", "safefile", "strictjson", "trust"},
	"boardlog":   {"atomicfile", "digest", "exitcode", "layout", "runimport", "runs", "safefile"},
	"report":     {"atomicfile", "boardlog", "exitcode", "layout", "codebench", "mllog", "reproduce", "runimport", "runindex", "runlabel", "runs", "safefile", "strictjson", "trust", "ui"},
	"reproduce":  {"catalog", "digest", "exitcode", "codebench", "keys", "runimport", "runlabel", "runs", "safefile", "store", "strictjson", "trust", "workload"},
	"rundiff":    {"exitcode", "report", "runs", "ui"},
	"dashboard":  {"boardlog", "exitcode", "layout", "report", "rundiff", "runindex", "runlabel", "runs"},
	"vulnscan":   {"atomicfile", "buildinfo", "digest", "exitcode", "layout", "runs", "safefile", "strictjson"},
	"ociattest":  {"digest", "exitcode", "keys", "sandbox", "strictjson", "trust", "ui", "vulnscan"},
	"handoff":    {"atomicfile", "catalog", "digest", "exitcode", "mllog", "ociattest", "runs", "safefile", "store", "strictjson", "trust", "ui", "workload"},
	"shard":      {"atomicfile", "catalog", "digest", "exitcode", "codebench", "imagetrust", "layout", "runs", "safefile", "sandbox", "store", "strictjson", "workload"},
}

// subAllowed lists, for the sub-packages whose place docs/ARCHITECTURE.md
// states, the repro packages (by path below internal/) each may import;
// other sub-packages, test helpers, are not checked. The supervisor wire
// never imports the scoring that uses it.
var subAllowed = map[string][]string{
	"codebench/judge": {},
	"codebench/task":  {"digest", "exitcode", "codebench/judge", "safefile", "strictjson"},
	"codebench/wire":  {"atomicfile", "digest", "exitcode", "codebench/task", "sandbox", "strictjson"},
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
		if name == p.ImportPath {
			continue
		}
		if strings.Contains(name, "/") {
			checkSubPackage(t, name, p.Imports)
			continue
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
			if !ok[dep] && dep != name { // a package may import its own sub-packages
				t.Errorf("internal/%s imports internal/%s, which its layer does not allow", name, dep)
			}
		}
	}
}

// checkSubPackage checks the repro imports of the sub-package name
// against subAllowed, if it is listed there.
func checkSubPackage(t *testing.T, name string, imports []string) {
	t.Helper()
	list, listed := subAllowed[name]
	if !listed {
		return // a test helper
	}
	ok := map[string]bool{}
	for _, a := range list {
		ok[a] = true
	}
	for _, imp := range imports {
		dep, isOurs := strings.CutPrefix(imp, "github.com/reprolab/repro/internal/")
		if isOurs && !ok[dep] {
			t.Errorf("internal/%s imports internal/%s, which its layer does not allow", name, dep)
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
	for path, lines := range codeFiles(t) {
		dir := filepath.Dir(path)
		if dir == filepath.Join("..", "internal", "imagetrust") || dir == filepath.Join("..", "internal", "sandbox") || dir == filepath.Join("..", "internal", "sandbox", "sandboxtest") {
			continue
		}
		for i, line := range lines {
			if gated.MatchString(line) {
				t.Errorf("%s:%d takes the pinned image without the trust file's image policy; call imagetrust.Open or imagetrust.Verify", path, i+1)
			}
		}
	}
}

// codeFiles returns the lines of every Go file of the module that is not
// a test (testdata and .git left out), by path relative to internal/.
func codeFiles(t *testing.T) map[string][]string {
	t.Helper()
	files := map[string][]string{}
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
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[path] = strings.Split(string(b), "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d Go files", len(files))
	}
	return files
}

// rawJSONReaders lists the code that may decode JSON with encoding/json
// rather than internal/strictjson, with how many calls each file holds
// and why: none of them reads untrusted text into named fields.
var rawJSONReaders = map[string]struct {
	calls int
	why   string
}{
	"sandbox/image.go":           {1, "the Docker engine's reply to an image load"},
	"sandbox/run.go":             {1, "the Docker engine's container statistics"},
	"sandbox/transfer.go":        {1, "the Docker engine's reply to an image load"},
	"codebench/judge/oracle.go":  {1, "the numbers of a dataset input, kept as written (UseNumber)"},
	"codebench/judge/special.go": {1, "the numbers of a dataset input, kept as written (UseNumber)"},
	"codebench/results.go":       {1, "re-reads the results file it has just written"},
	"codebench/evalplus.go":      {1, "the task id of a line of a pinned dataset, token by token with exact names, up to that member (the line may hold Infinity and NaN; the driver parses it)"},
	"report/report.go":           {2, "re-decodes a value of its own; re-encodes a test input for display"},
	"pickle/safetensors.go":      {1, "safetensors header names, read token by token with their own duplicate check (entries go through strictjson)"},
	"pickle/profile.go":          {1, "the compiled-in profiles"},
	"shard/merge.go":             {1, "re-decodes a value of its own"},
	"runs/statement.go":          {1, "the record it has just written"},
}

var rawJSONCall = regexp.MustCompile(`(^|[^A-Za-z0-9_])json\.(Unmarshal|NewDecoder)\(`)

// TestUntrustedJSONGoesThroughStrictjson keeps every decoder of JSON in
// code on internal/strictjson, which matches names exactly and refuses
// duplicate names (encoding/json matches them ignoring case and keeps the
// last), but for the readers listed in rawJSONReaders.
func TestUntrustedJSONGoesThroughStrictjson(t *testing.T) {
	found := map[string]int{}
	for path, lines := range codeFiles(t) {
		if filepath.Dir(path) == filepath.Join("..", "internal", "strictjson") {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join("..", "internal"), path)
		for i, line := range lines {
			if rawJSONCall.MatchString(line) {
				found[rel]++
				if _, ok := rawJSONReaders[rel]; !ok {
					t.Errorf("%s:%d decodes JSON with encoding/json; use strictjson.Decode or strictjson.DecodeOpen", path, i+1)
				}
			}
		}
	}
	for file, r := range rawJSONReaders {
		if found[file] != r.calls {
			t.Errorf("internal/%s has %d encoding/json decoders, %d are allowed (%s)", file, found[file], r.calls, r.why)
		}
	}
}

// writeTextMethod matches the declaration of a text report writer.
var writeTextMethod = regexp.MustCompile(`^func (\([^)]*\) )?Write(Text|Requirements)\(`)

// TestTextReportsGoThroughTheOnePrinter keeps text for people on
// ui.Fprintf (and the Terminal's Printf), which writes every string
// argument through ui.OneLine: no text report (a file that declares a
// WriteText method) and no command in cmd/repro prints with fmt's
// printers, so none can forget to escape an outside string.
func TestTextReportsGoThroughTheOnePrinter(t *testing.T) {
	fmtPrint := regexp.MustCompile(`\bfmt\.(Fprint|Fprintf|Fprintln|Print|Printf|Println)\(`)
	n := 0
	for path, lines := range codeFiles(t) {
		report := filepath.Dir(path) == filepath.Join("..", "cmd", "repro")
		for _, line := range lines {
			report = report || writeTextMethod.MatchString(line)
		}
		if !report {
			continue
		}
		n++
		for i, line := range lines {
			if fmtPrint.MatchString(line) {
				t.Errorf("%s:%d prints text for people with fmt; use ui.Fprintf or the Terminal's Printf", path, i+1)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d text reports and commands", n)
	}
}
