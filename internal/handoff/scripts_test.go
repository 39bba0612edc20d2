package handoff

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

// TestShellcheck lints every generated script of every workload and
// target with shellcheck (Debian package shellcheck).
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		testenv.Missing(t, "shellcheck", "apt-get install shellcheck")
	}
	for _, nw := range []func(testing.TB) *world{newMiniGoWorld, newDLRMWorld} {
		for _, target := range []string{TargetSlurm, TargetKubernetes} {
			for _, container := range []string{ContainerPyxis, ContainerApptainer} {
				if target == TargetKubernetes && container == ContainerApptainer {
					continue
				}
				w := nw(t)
				w.cfg.Container = container
				w.cfg.ClearCaches = container == ContainerApptainer
				w.cfg.Env = map[string]string{"NCCL_DEBUG": "INFO", "QUOTE": "it's"}
				m := w.bundle(t, target)
				if keep := os.Getenv("HANDOFF_KEEP_DIR"); keep != "" {
					dst := filepath.Join(keep, m.Workload+"-"+target+"-"+container)
					os.RemoveAll(dst)
					if out, err := exec.Command("cp", "-a", w.out, dst).CombinedOutput(); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
				}
				for _, f := range m.Files {
					if !strings.HasSuffix(f, ".sh") && !strings.HasSuffix(f, ".sbatch") {
						continue
					}
					out, err := exec.Command(sc, "-s", "bash", "-S", "warning", filepath.Join(w.out, f)).CombinedOutput()
					if err != nil {
						t.Errorf("%s %s %s %s:\n%s", m.Workload, target, container, f, out)
					}
				}
			}
		}
	}
}

// TestShellTreeDigest holds the preflight's shell implementation of the
// tree digest to internal/digest's on a tree with plain, executable,
// symbolic-link and nested files, names with spaces, and a .git folder.
func TestShellTreeDigest(t *testing.T) {
	dir := t.TempDir()
	sourceFixture(t, dir, map[string]string{
		"a.txt":             "a\n",
		"b dir/c d.py":      "print(1)\n",
		"b dir/run.sh":      "#!/bin/sh\n",
		"z/deep/er/file":    strings.Repeat("x", 5000),
		"Upper.txt":         "sorts before lower case\n",
		"a-b.txt":           "dash\n",
		"a.b/inner.txt":     "dot folder\n",
		"emptyish":          "",
		"ml_perf/flags/x.f": "--flag\n",
	})
	if err := os.Chmod(filepath.Join(dir, "a-b.txt"), 0o744); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b dir/c d.py", filepath.Join(dir, "link to py")); err != nil {
		t.Fatal(err)
	}
	want := treeDigest(t, dir)
	body := extractFunction(t, preflightTemplate, "tree_digest")
	script := "set -u\nexport LC_ALL=C\n" + body + "\ntree_digest \"$1\"\n"
	out, err := exec.Command("bash", "-c", script, "sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want.Hex() {
		m, _ := digest.Tree(dir)
		t.Fatalf("shell tree digest %s, Go %s; Go manifest:\n%s", got, want.Hex(), m.Marshal())
	}
	// A change anywhere changes both.
	writeFile(t, filepath.Join(dir, "z/deep/er/file"), []byte("y"), 0o644)
	out, _ = exec.Command("bash", "-c", script, "sh", dir).CombinedOutput()
	if strings.TrimSpace(string(out)) == want.Hex() {
		t.Fatal("shell tree digest did not change with the tree")
	}
}

// TestShellDriverFloor holds the preflight's driver and compute capability
// checks to DriverFloor's on the published floors.
func TestShellDriverFloor(t *testing.T) {
	funcs := extractFunction(t, preflightTemplate, "ver_ge") + extractFunction(t, preflightTemplate, "driver_ok") + extractFunction(t, preflightTemplate, "cc_ok")
	versions := []string{"410.48", "410.47", "418.39", "418.40.04", "450.51.05", "450.51.06", "450.51", "450.36", "470.57.02", "470.42", "510.47.03", "515.65.01", "515.43", "520.61.05", "525", "535.104.05", "460.91", "abc", "", "9.0", "8.0", "8.6", "7.5", "6.0", "5.2"}
	for _, cuda := range KnownCUDA() {
		f, _ := FloorFor(cuda)
		for _, v := range versions {
			for _, fn := range []string{"driver_ok", "cc_ok"} {
				script := fmt.Sprintf("driver_min=%s\ndriver_fc=%s\ncc_min=%s\ncc_below=%s\n%s\n%s %s\n",
					shellQuote(f.Min), shellQuote(strings.Join(f.ForwardCompat, " ")), shellQuote(f.MinCC), shellQuote(f.BelowCC), funcs, fn, shellQuote(v))
				err := exec.Command("bash", "-c", script).Run()
				got := err == nil
				want := f.DriverOK(v)
				if fn == "cc_ok" {
					want = f.CCOK(v)
				}
				if v == "" && fn == "driver_ok" {
					want = false
				}
				if got != want {
					t.Errorf("CUDA %s %s(%q): shell %v, Go %v", cuda, fn, v, got, want)
				}
			}
		}
	}
}

// extractFunction returns the shell function name() { ... } from a
// template: from its first line to the first line that is "}".
func extractFunction(t *testing.T, text, name string) string {
	t.Helper()
	start := strings.Index(text, "\n"+name+"() {")
	if start < 0 {
		t.Fatalf("no shell function %s", name)
	}
	rest := text[start+1:]
	end := strings.Index(rest, "\n}\n")
	if end < 0 {
		t.Fatalf("shell function %s does not end", name)
	}
	return rest[:end+3]
}
