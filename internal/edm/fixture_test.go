package edm

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/testenv"
)

// fixtureModel is the model the fixtures stand in for: 32x32, 3 channels,
// 10 labels, as CIFAR-10 conditional.
const fixtureModel = "edm-cifar10-32x32-cond-vp"

// makeFixtures makes and checks the PyTorch fixtures.
const makeFixtures = "testdata/fixtures/make_fixtures.py"

// fixtureFeatureDim is the tiny detector's feature dimension.
const fixtureFeatureDim = 16

// torchFixtures holds the PyTorch fixtures of this test binary.
var torchFixtures testenv.FixtureDir

func TestMain(m *testing.M) {
	code := m.Run()
	torchFixtures.Remove()
	os.Exit(code)
}

// srcTree is the stand-in EDM source tree.
func srcTree(t testing.TB) string {
	p, err := filepath.Abs("testdata/edmsrc")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixtures makes the PyTorch fixtures once per test binary and returns
// their folder (see testdata/fixtures/make_fixtures.py).
func fixtures(t testing.TB) string {
	t.Helper()
	needPython(t, "torch", "numpy")
	return torchFixtures.Path(t, "repro-edm-fixtures-", func(dir string) error {
		cmd := exec.Command(systemPython, "-B", makeFixtures, srcTree(t), dir, strconv.Itoa(fixtureFeatureDim))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("making fixtures: %v\n%s", err, out)
		}
		return nil
	})
}

// pinFile returns a pinned catalog entry for the file at path.
func pinFile(t testing.TB, id string, kind catalog.Kind, path string) catalog.Entry {
	t.Helper()
	sum, size, err := digest.File(path)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.Entry{ID: id, Kind: kind, Description: "test fixture " + filepath.Base(path),
		URLs: []string{"https://fixtures.invalid/" + filepath.Base(path)}, Filename: filepath.Base(path),
		Size: size, SHA256: &sum, License: "test", Pin: catalog.Pinned}
}

// pinTree returns the pinned edm-source entry for the tree at dir.
func pinTree(t testing.TB, dir string) catalog.Entry {
	t.Helper()
	m, err := digest.Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Digest()
	nets, _, err := digest.File(filepath.Join(dir, "training", "networks.py"))
	if err != nil {
		t.Fatal(err)
	}
	return catalog.Entry{ID: SourceID, Kind: catalog.SourceTree, Description: "stand-in EDM source tree",
		TreeDigest: &d, License: "test", Pin: catalog.Pinned,
		Facts: map[string]string{"commit": "fixture", "networks_py_sha256": nets.Hex()}}
}

// fixtureSet names the files behind the model's catalog ids.
type fixtureSet struct {
	checkpoint, detector, reference string
}

func defaultSet(dir string) fixtureSet {
	return fixtureSet{
		checkpoint: filepath.Join(dir, "checkpoint.pkl"),
		detector:   filepath.Join(dir, "detector.pkl"),
		reference:  filepath.Join(dir, "ref.npz"),
	}
}

// fixtureStore builds a catalog pinning the given files under the model's
// ids, opens a store on it and imports them. Entries listed in unpinned
// are left unpinned (and not imported).
func fixtureStore(t testing.TB, set fixtureSet, unpinned ...string) *store.Store {
	t.Helper()
	return fixtureStoreSrc(t, set, srcTree(t), unpinned...)
}

// fixtureStoreSrc is fixtureStore with the EDM source pinned to src.
func fixtureStoreSrc(t testing.TB, set fixtureSet, src string, unpinned ...string) *store.Store {
	t.Helper()
	m, err := LookupModel(fixtureModel)
	if err != nil {
		t.Fatal(err)
	}
	entries := []catalog.Entry{
		pinFile(t, m.Checkpoint, catalog.Checkpoint, set.checkpoint),
		pinFile(t, m.Detector, catalog.Detector, set.detector),
		pinFile(t, m.Reference, catalog.FIDReference, set.reference),
		pinTree(t, src),
	}
	skip := map[string]bool{}
	for _, id := range unpinned {
		skip[id] = true
	}
	for i, e := range entries {
		if skip[e.ID] {
			entries[i] = catalog.Entry{ID: e.ID, Kind: e.Kind, Description: e.Description, URLs: e.URLs,
				Filename: e.Filename, License: e.License, Pin: catalog.Unpinned}
		}
	}
	cat, err := catalog.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir(), cat)
	if err != nil {
		t.Fatal(err)
	}
	for id, path := range map[string]string{m.Checkpoint: set.checkpoint, m.Detector: set.detector, m.Reference: set.reference} {
		if skip[id] {
			continue
		}
		if err := st.Import(context.Background(), id, path, nil); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// fastSampler keeps CPU runs short: the real sampler code with few steps.
var fastSampler = Sampler{NumSteps: 4, SigmaMin: 0.002, SigmaMax: 80, Rho: 7, SMax: math.Inf(1), SNoise: 1}

// cpuOptions are FID options for a fixture run on the CPU.
func cpuOptions(t testing.TB, seeds []int64) FIDOptions {
	s := fastSampler
	return FIDOptions{
		Model: fixtureModel, Seeds: seeds, Batch: 3, SourceDir: srcTree(t), Python: systemPython,
		RunDir: filepath.Join(t.TempDir(), "run"), Log: testLog{t},
		test: &testHooks{cpu: true, featureDim: fixtureFeatureDim, sampler: &s},
	}
}

// testLog sends the runtime's messages to the test log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", p)
	return len(p), nil
}
