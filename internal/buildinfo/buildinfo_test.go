package buildinfo

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// goSum reads the go.sum of the repro module: "path version" -> hash.
func goSum(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 && !strings.HasSuffix(fs[1], "/go.mod") {
			out[fs[0]+" "+fs[1]] = fs[2]
		}
	}
	return out
}

// TestReadFileOfAnotherPlatform cross-compiles a program for linux/arm64
// as scripts/release.sh builds, and reads its platform, toolchain and
// module with its go.sum hash back from the file.
func TestReadFileOfAnotherPlatform(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "stamped")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.Version=v0.9.0 -X main.Commit=feedface", "-o", bin, "./testdata/stamped")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	in, err := ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	m := Module{Path: "golang.org/x/mod", Version: "v0.42.0", Sum: goSum(t)["golang.org/x/mod v0.42.0"]}
	if in.Platform != "linux/arm64" || !strings.HasPrefix(in.Go, "go1.") || len(in.Modules) != 1 || in.Modules[0] != m {
		t.Fatalf("info %+v", in)
	}
	if _, err := ReadFile(filepath.Join("testdata", "stamped", "main.go")); err == nil {
		t.Fatal("a Go source file read as a binary")
	}
}

// TestSBOM: the SBOM decodes as CycloneDX, describes repro with its
// commit, and lists every module with its package URL and go.sum hash.
func TestSBOM(t *testing.T) {
	in := Info{Version: "v1.2.3", Commit: "0123abcd", Go: "go1.26.8", Module: "github.com/reprolab/repro", Modules: []Module{
		{Path: "github.com/spf13/cobra", Version: "v1.10.2", Sum: "h1:cobra="},
		{Path: "golang.org/x/mod", Version: "v0.42.0", Sum: "h1:mod=", Replace: &Module{Path: "example.org/mod", Version: "v0.42.1", Sum: "h1:fork="}},
	}}
	b, err := SBOM(in)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := SBOM(in)
	if !bytes.Equal(b, again) {
		t.Fatal("the SBOM of the same build differs between two calls")
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(b), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	mc := bom.Metadata.Component
	if bom.SpecVersion != cdx.SpecVersion1_6 || mc.Name != "github.com/reprolab/repro" || mc.Version != "v1.2.3" || mc.PackageURL != "pkg:golang/github.com/reprolab/repro@v1.2.3" {
		t.Fatalf("metadata %+v", mc)
	}
	if (*mc.Properties)[1] != (cdx.Property{Name: propCommit, Value: "0123abcd"}) {
		t.Fatalf("metadata properties %+v", *mc.Properties)
	}
	if len(*bom.Components) != len(in.Modules) {
		t.Fatalf("%d components for %d modules", len(*bom.Components), len(in.Modules))
	}
	for i, c := range *bom.Components {
		m := in.Modules[i]
		if c.Name != m.Path || c.Version != m.Version || c.PackageURL != "pkg:golang/"+m.Path+"@"+m.Version || (*c.Properties)[0].Value != m.Sum {
			t.Errorf("component %+v for module %+v", c, m)
		}
	}
	if p := (*(*bom.Components)[1].Properties)[1]; p != (cdx.Property{Name: propReplace, Value: "example.org/mod@v0.42.1"}) {
		t.Errorf("replaced module: %+v", p)
	}
}
