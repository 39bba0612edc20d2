package pickle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/testenv"
)

// systemPython is Debian's interpreter, which has python3-torch; the
// python3 first on PATH may not.
const systemPython = "/usr/bin/python3"

// requireTorch returns the interpreter to run with PyTorch; without it the
// test stops (testenv.Missing).
func requireTorch(t testing.TB) string {
	t.Helper()
	testenv.Heavy(t, "PyTorch")
	torchOnce.Do(func() {
		out, err := exec.Command(systemPython, "-c", "import torch, numpy; print(torch.__version__)").CombinedOutput()
		if err != nil {
			torchErr = strings.TrimSpace(string(out))
			if torchErr == "" {
				torchErr = err.Error()
			}
		}
	})
	if torchErr != "" {
		testenv.Missing(t, "PyTorch for "+systemPython, "install the Debian packages python3-torch and python3-numpy: "+torchErr)
	}
	return systemPython
}

var (
	torchOnce sync.Once
	torchErr  string
)

// fixtureDir builds the PyTorch fixtures once per test binary run.
func fixtureDir(t *testing.T) string {
	t.Helper()
	py := requireTorch(t)
	return fixtureFolder.Path(t, "pickle-fixtures-", func(dir string) error {
		cmd := exec.Command(py, "testdata/torchfix/fixtures.py", "make", dir)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("fixtures.py make: %v\n%s", err, out)
		}
		return nil
	})
}

// fixtureFolder holds the PyTorch fixtures of this test binary.
var fixtureFolder testenv.FixtureDir

func TestMain(m *testing.M) {
	code := m.Run()
	fixtureFolder.Remove()
	os.Exit(code)
}

type refDoc struct {
	Tensors []struct {
		Name   string  `json:"name"`
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		Offset int64   `json:"offset"`
		NBytes int64   `json:"nbytes"`
	} `json:"tensors"`
	ClassName  string          `json:"class_name"`
	InitKwargs json.RawMessage `json:"init_kwargs"`
	InitArgs   json.RawMessage `json:"init_args"`
}

func readRef(t *testing.T, dir, name string) (*refDoc, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc refDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	blob, err := os.ReadFile(filepath.Join(dir, name+".ref.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return &doc, blob
}

var torchFixtures = []struct {
	file, ref, profile, format string
}{
	{"snapshot.pkl", "snapshot", ProfileEDMCheckpoint, FormatPickle},
	{"state_dict_zip.pt", "state_dict_zip", ProfileTorchStateDict, FormatTorchZip},
	{"state_dict_legacy.pt", "state_dict_legacy", ProfileTorchStateDict, FormatTorchLegacy},
	{"state_dict.pkl", "state_dict", ProfileTorchStateDict, FormatPickle},
}

// TestConvertMatchesPyTorch converts each fixture and compares every tensor,
// bit for bit, with the state_dict PyTorch produced from the same file;
// then an independent Python reader checks the safetensors files.
func TestConvertMatchesPyTorch(t *testing.T) {
	dir := fixtureDir(t)
	py := requireTorch(t)
	out := t.TempDir()
	for _, fx := range torchFixtures {
		t.Run(fx.ref, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, fx.file))
			if err != nil {
				t.Fatal(err)
			}
			p, err := LookupProfile(fx.profile)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ConvertBytes(data, p)
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			if m.Report.Format != fx.format {
				t.Errorf("format %q, want %q", m.Report.Format, fx.format)
			}
			if m.Config.Asset.SHA256 != digest.Of(data) || m.Config.Asset.Size != int64(len(data)) {
				t.Errorf("config asset %+v does not pin the input", m.Config.Asset)
			}
			doc, blob := readRef(t, dir, fx.ref)
			if len(m.Tensors) != len(doc.Tensors) {
				t.Fatalf("%d tensors, PyTorch's state_dict has %d", len(m.Tensors), len(doc.Tensors))
			}
			for i, want := range doc.Tensors {
				got := m.Tensors[i]
				if got.Name != want.Name || got.DType.Name != want.DType || !reflect.DeepEqual(got.Shape, want.Shape) {
					t.Errorf("tensor %d: %s %s %v, want %s %s %v", i, got.Name, got.DType.Name, got.Shape, want.Name, want.DType, want.Shape)
					continue
				}
				if !bytes.Equal(got.Bytes(), blob[want.Offset:want.Offset+want.NBytes]) {
					t.Errorf("tensor %s: bytes differ from PyTorch's", want.Name)
				}
			}
			if fx.profile == ProfileEDMCheckpoint {
				checkSnapshotConfig(t, m, doc)
			}
			if _, _, err := m.WriteSafetensorsFile(filepath.Join(out, fx.ref+".safetensors"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, fx.file), filepath.Join(out, fx.file)); err != nil {
				t.Fatal(err)
			}
		})
	}
	cmd := exec.Command(py, "testdata/torchfix/fixtures.py", "verify", out)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("independent safetensors check failed: %v\n%s", err, b)
	} else {
		t.Logf("%s", bytes.TrimSpace(b))
	}
}

// checkSnapshotConfig compares the conversion's config with what PyTorch
// recorded for the loaded network, and the embedded-source digest with the
// digest of the source file the fixture was built from.
func checkSnapshotConfig(t *testing.T, m *Model, doc *refDoc) {
	t.Helper()
	c := m.Config
	if c.NetworkClass != doc.ClassName || c.PersistenceVersion != 6 {
		t.Errorf("network %s version %d, want %s version 6", c.NetworkClass, c.PersistenceVersion, doc.ClassName)
	}
	var got, want any
	if err := json.Unmarshal(c.InitKwargs, &got); err != nil {
		t.Fatalf("init_kwargs %s: %v", c.InitKwargs, err)
	}
	if err := json.Unmarshal(doc.InitKwargs, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("init_kwargs %s, PyTorch recorded %s", c.InitKwargs, doc.InitKwargs)
	}
	if string(c.InitArgs) != "[]" {
		t.Errorf("init_args %s, want []", c.InitArgs)
	}
	src, err := os.ReadFile("testdata/torchfix/training/networks.py")
	if err != nil {
		t.Fatal(err)
	}
	if c.NetworkSourceSHA256 != digest.Of(src) {
		t.Errorf("network source digest %s differs from networks.py's", c.NetworkSourceSHA256)
	}
	if len(c.Sources) != 2 {
		t.Errorf("%d embedded sources, want 2 (networks and loss)", len(c.Sources))
	}
}
