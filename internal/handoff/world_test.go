package handoff

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
)

// world is a complete handoff made of local fixture files: the volumes of
// one workload, a catalog pinning them, and a configuration naming them.
type world struct {
	name  string
	root  string
	cat   *catalog.Catalog
	cfg   *Config
	state string
	out   string
}

func (w *world) path(p ...string) string { return filepath.Join(append([]string{w.root}, p...)...) }

func (w *world) opts(target string) Options {
	return Options{
		Workload: w.workload(), Target: target, Config: w.cfg, Catalog: w.cat, StateDir: w.state,
		Host: "test-host", Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }, Version: "test",
	}
}

func (w *world) workload() string { return w.name }

func writeFile(t testing.TB, name string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, perm); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func fileSHA(t testing.TB, name string) string {
	t.Helper()
	d, _, err := digest.File(name)
	if err != nil {
		t.Fatal(err)
	}
	return d.Hex()
}

func treeDigest(t testing.TB, dir string) digest.SHA256 {
	t.Helper()
	m, err := digest.Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m.Digest()
}

const fixtureImage = "nvcr.io/nvidia/tensorflow@sha256:1111111111111111111111111111111111111111111111111111111111111111"

// sourceFixture writes a small source tree: plain, executable and
// symbolic-link files, a nested folder and a .git folder (left out of the
// tree digest).
func sourceFixture(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		perm := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			perm = 0o755
		}
		writeFile(t, filepath.Join(dir, name), []byte(body), perm)
	}
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
	if err := os.Symlink("README.md", filepath.Join(dir, "README.link")); err != nil {
		t.Fatal(err)
	}
}

// newWorld makes the folders every world has (state, output volume,
// node work folder) and the source volume holding files; it returns the
// world and the source volume's path.
func newWorld(t testing.TB, name string, files map[string]string) (*world, string) {
	t.Helper()
	w := &world{name: name, root: t.TempDir()}
	w.state = w.path("state")
	os.MkdirAll(w.state, 0o700)
	w.out = w.path("bundle")
	os.MkdirAll(w.path("volumes", "output"), 0o755)
	os.MkdirAll(w.path("work"), 0o755)
	src := w.path("volumes", "source")
	sourceFixture(t, src, files)
	return w, src
}

// newCatalog builds the world's catalog from entries.
func newCatalog(t testing.TB, entries []catalog.Entry) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func newMiniGoWorld(t testing.TB) *world {
	t.Helper()
	w, src := newWorld(t, "minigo", map[string]string{
		"README.md":                           "minigo fixture\n",
		"ml_perf/flags/19/architecture.flags": "--conv_width=64\n--fc_width=64\n--trunk_layers=6\n",
		"ml_perf/flags/19/train.flags":        "--train_batch_size=4096\n--lr_rates=0.016\n",
		"ml_perf/scripts/train.sh":            "#!/bin/sh\necho train\n",
		"ml_perf/train_loop.py":               "print('loop')\n",
	})
	ck := w.path("volumes", "checkpoint")
	writeFile(t, filepath.Join(ck, "mlperf07", "work_dir", "model.ckpt-9.index"), randomBytes(1, 300), 0o644)
	writeFile(t, filepath.Join(ck, "mlperf07", "data", "selfplay.tfrecord.zz"), randomBytes(2, 900), 0o644)
	writeFile(t, filepath.Join(ck, "target", "target.minigo.tf"), randomBytes(3, 1200), 0o644)

	entries := []catalog.Entry{
		{ID: idMiniGoSource, Kind: catalog.SourceTree, Description: "fixture minigo tree", License: "Apache-2.0", Pin: catalog.Pinned,
			TreeDigest: ptr(treeDigest(t, src)),
			Facts: map[string]string{
				"upstream_commit": "6d89c202cdceaf449aefc3149ab2110d44f1a6a4",
				"sha256:ml_perf/flags/19/architecture.flags": fileSHA(t, filepath.Join(src, "ml_perf/flags/19/architecture.flags")),
				"sha256:ml_perf/flags/19/train.flags":        fileSHA(t, filepath.Join(src, "ml_perf/flags/19/train.flags")),
			}},
		{ID: idMiniGoBootstrap, Kind: catalog.External, Description: "fixture bootstrap", License: "unknown", Pin: catalog.Unpinned},
		{ID: idMiniGoTarget, Kind: catalog.External, Description: "fixture target", License: "unknown", Pin: catalog.Unpinned},
	}
	w.cat = newCatalog(t, entries)
	w.cfg = &Config{
		Image:     fixtureImage,
		ImageCUDA: "11.8",
		GPUs:      2,
		Node:      &NodeConfig{MinDiskGiB: 1, MinMemoryGiB: 1, WorkDir: w.path("work")},
		Volumes: Volumes{
			Checkpoint: &Volume{Path: ck},
			Source:     &Volume{Path: src},
			Output:     &Volume{Path: w.path("volumes", "output")},
		},
		Models: &MiniGoModels{
			Bootstrap: &ModelPin{Path: "mlperf07", TreeDigest: treeDigest(t, filepath.Join(ck, "mlperf07")).Hex()},
			Target:    &ModelPin{Path: "target/target.minigo.tf", SHA256: fileSHA(t, filepath.Join(ck, "target", "target.minigo.tf"))},
		},
		Command: []string{"./run_and_time.sh", "--seed={seed}"},
		Runtime: &Runtime{TensorFlow: "1.15.5"},
	}
	return w
}

// Fixture sizes of the DLRM binaries: rows x 160 bytes, like the real ones.
const (
	fixtureTrainRows = 5
	fixtureTestRows  = 3
)

func newDLRMWorld(t testing.TB) *world {
	t.Helper()
	w, src := newWorld(t, "dlrm", map[string]string{
		"README.md":             "dlrm fixture\n",
		"dlrm_s_pytorch.py":     "print('dlrm')\n",
		"bench/run_and_time.sh": "#!/bin/bash\npython dlrm_s_pytorch.py $1\n",
	})
	ck := w.path("volumes", "checkpoint")
	ckpt := randomBytes(10, 4096)
	writeFile(t, filepath.Join(ck, "tb00_40M.pt"), ckpt, 0o644)
	data := w.path("volumes", "dataset")
	entries := []catalog.Entry{
		{ID: idDLRMSource, Kind: catalog.SourceTree, Description: "fixture dlrm tree", License: "MIT", Pin: catalog.Pinned,
			TreeDigest: ptr(treeDigest(t, src)), Facts: map[string]string{"upstream_commit": "6d75c84d834380a365e2f03d4838bee464157516"}},
		{ID: idDLRMCheckpoint, Kind: catalog.Checkpoint, Description: "fixture checkpoint", Filename: "tb00_40M.pt", License: "CC-BY-NC", Pin: catalog.Unpinned,
			URLs: []string{"https://dlrm.example/tb00_40M.pt"}, Facts: map[string]string{"md5": md5hex(ckpt)}},
	}
	for i := 0; i < criteoDays; i++ {
		b := randomBytes(int64(100+i), 1500+97*i)
		name := "day_" + strconv.Itoa(i)
		writeFile(t, filepath.Join(data, name), b, 0o644)
		entries = append(entries, catalog.Entry{ID: idCriteoDayPrefix + strconv.Itoa(i), Kind: catalog.External, Description: "fixture " + name,
			Filename: name, License: "CC BY-NC-SA 4.0", Pin: catalog.Unpinned,
			Facts: map[string]string{"md5": md5hex(b), "du_kib": strconv.Itoa((len(b) + 1023) / 1024)}})
	}
	writeFile(t, filepath.Join(data, "terabyte_processed_train.bin"), randomBytes(200, fixtureTrainRows*160), 0o644)
	writeFile(t, filepath.Join(data, "terabyte_processed_test.bin"), randomBytes(201, fixtureTestRows*160), 0o644)
	writeFile(t, filepath.Join(data, "day_fea_count.npz"), randomBytes(202, 333), 0o644)
	entries = append(entries,
		catalog.Entry{ID: idDLRMTrainBin, Kind: catalog.External, Description: "fixture train", Filename: "terabyte_processed_train.bin", License: "CC BY-NC-SA 4.0", Pin: catalog.Unpinned,
			Facts: map[string]string{"rows": strconv.Itoa(fixtureTrainRows), "record_bytes": "160", "size": strconv.Itoa(fixtureTrainRows * 160)}},
		catalog.Entry{ID: idDLRMTestBin, Kind: catalog.External, Description: "fixture test", Filename: "terabyte_processed_test.bin", License: "CC BY-NC-SA 4.0", Pin: catalog.Unpinned,
			Facts: map[string]string{"rows": strconv.Itoa(fixtureTestRows), "record_bytes": "160", "size": strconv.Itoa(fixtureTestRows * 160)}},
		catalog.Entry{ID: idDLRMFeatureCount, Kind: catalog.External, Description: "fixture counts", Filename: "day_fea_count.npz", License: "CC BY-NC-SA 4.0", Pin: catalog.Unpinned},
	)
	w.cat = newCatalog(t, entries)
	w.cfg = &Config{
		Image:     "docker.io/library/pytorch@sha256:2222222222222222222222222222222222222222222222222222222222222222",
		ImageCUDA: "11.8",
		GPUs:      1,
		Node:      &NodeConfig{MinDiskGiB: 1, MinMemoryGiB: 1, WorkDir: w.path("work")},
		Volumes: Volumes{
			Dataset:    &Volume{Path: data},
			Checkpoint: &Volume{Path: ck},
			Source:     &Volume{Path: src},
			Output:     &Volume{Path: w.path("volumes", "output")},
		},
		CriteoLicense: &LicenseAcceptance{License: "CC BY-NC-SA 4.0", AcceptedBy: "Data Steward", Date: "2026-11-01", Terms: "https://huggingface.co/datasets/criteo/CriteoClickLogs"},
		Runtime:       &Runtime{Python: "3.11", Torch: "1.13.1", MLPerfLogging: "2.1.0"},
	}
	return w
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// configJSON round-trips the world's configuration through ParseConfig, so
// every test configuration also passes the strict parser.
func (w *world) reparse(t testing.TB) {
	t.Helper()
	b, err := json.Marshal(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		t.Fatalf("fixture config does not parse: %v\n%s", err, b)
	}
	w.cfg = c
}

// bundle writes a ready bundle for target and returns its manifest.
func (w *world) bundle(t testing.TB, target string) *Manifest {
	t.Helper()
	w.reparse(t)
	p, err := Handoff(context.Background(), w.opts(target), w.out, false)
	if err != nil {
		var lines []string
		if p != nil {
			for _, r := range p.Failed() {
				lines = append(lines, r.Line())
			}
		}
		t.Fatalf("Handoff: %v\n%s", err, strings.Join(lines, "\n"))
	}
	return p.Manifest
}

// gpuStack writes stand-ins for what this machine lacks (an NVIDIA driver,
// pyxis, a GPU framework in an image) into a folder to put first on PATH.
// They answer the preflight's queries the way a working GPU node does.
func gpuStack(t testing.TB, gpus int, workload string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gpu-bin")
	var smi strings.Builder
	smi.WriteString("#!/bin/sh\ncat <<'EOF'\n")
	for i := 0; i < gpus; i++ {
		smi.WriteString("535.104.05, 9.0\n")
	}
	smi.WriteString("EOF\n")
	writeFile(t, filepath.Join(dir, "nvidia-smi"), []byte(smi.String()), 0o755)
	writeFile(t, filepath.Join(dir, "srun"), []byte("#!/bin/sh\n[ \"$1\" = --help ] && printf '      --container-image=IMAGE\\n      --container-readonly\\n' && exit 0\nexit 1\n"), 0o755)
	probe := "python 3.8.10\ntensorflow 1.15.5\ngpu yes\n"
	py := "python3"
	if workload == "dlrm" {
		probe = "python 3.11.2\ntorch 1.13.1\ngpu yes\narch sm_90 yes\nmlperf_logging 2.1.0\n"
		py = "python"
	}
	writeFile(t, filepath.Join(dir, py), []byte("#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n"+probe+"EOF\n"), 0o755)
	return dir
}

// runPreflight runs the bundle's preflight.sh with bash and returns its
// output and exit status. pathPrefix, when set, goes first on PATH.
func runPreflight(t testing.TB, bundle, pathPrefix string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(bundle, PreflightFile)}, args...)...)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if pathPrefix != "" {
		env[0] = "PATH=" + pathPrefix + ":" + os.Getenv("PATH")
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("preflight: %v", err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

func failLines(out string) []string {
	var fails []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "preflight: FAIL ") {
			fails = append(fails, l)
		}
	}
	return fails
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return v
}
