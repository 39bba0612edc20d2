package pickle

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

// attackFiles builds the parser-differential attack files with real
// PyTorch (testdata/torchfix/attacks.py); each runs `touch canary` when
// PyTorch or Python loads it.
func attackFiles(t *testing.T, canary string) string {
	t.Helper()
	py := requireTorch(t)
	dir := t.TempDir()
	cmd := exec.Command(py, "testdata/torchfix/attacks.py", "make", dir, canary)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("attacks.py make: %v\n%s", err, out)
	}
	return dir
}

// pyLoad loads path with torch.load (kind "torch") or pickle.load (kind
// "pickle") in Debian's Python and returns its output and error.
func pyLoad(t *testing.T, kind, path string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(requireTorch(t), "testdata/torchfix/attacks.py", "load", kind, path)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Dir = "."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return errb.Bytes(), err
	}
	return out.Bytes(), nil
}

// TestParserDifferentials builds each attack class, shows in a control run
// that PyTorch (or pickle) runs its payload, and requires scan and convert
// to refuse it under every profile.
func TestParserDifferentials(t *testing.T) {
	canary := filepath.Join(t.TempDir(), "canary")
	dir := attackFiles(t, canary)
	for _, c := range []struct {
		file, loader, reason string
	}{
		{"zip_two_directories.pt", "torch", "different central directories"},
		{"nested_two_directories.pkl", "pickle", "different central directories"},
		{"tar_polyglot.pt", "torch", "valid tar header"},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			os.Remove(canary)
			pyLoad(t, c.loader, path) // the payload runs, then loading fails
			if _, err := os.Stat(canary); err != nil {
				t.Fatalf("control: %s.load did not run the payload (%v): the attack file is not what it claims", c.loader, err)
			}
			os.Remove(canary)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range ProfileNames() {
				p := mustProfile(t, name)
				r := ScanBytes(data, p)
				if r.Verdict == Clean {
					t.Fatalf("profile %s: scan calls a file clean that %s.load runs code from", name, c.loader)
				}
				if _, err := ConvertBytes(data, p); err == nil {
					t.Fatalf("profile %s: convert accepts a file that %s.load runs code from", name, c.loader)
				}
			}
			r := ScanBytes(data, mustProfile(t, ProfileTorchStateDict))
			if !strings.Contains(r.Error, c.reason) {
				t.Errorf("scan error %q, want it to mention %q", r.Error, c.reason)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Fatal("the payload ran during the scan")
			}
		})
	}
}

// pyTensor is one state_dict entry as attacks.py load describes it.
type pyTensor struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256"`
}

var torchDTypeNames = map[string]string{
	"F64": "torch.float64", "F32": "torch.float32", "F16": "torch.float16", "BF16": "torch.bfloat16",
	"I64": "torch.int64", "I32": "torch.int32", "I16": "torch.int16", "I8": "torch.int8",
	"U8": "torch.uint8", "BOOL": "torch.bool", "C64": "torch.complex64",
}

// differentialCorpus is every file of the tests' corpus: the PyTorch
// fixtures, the fuzz seed corpus and the attack files.
func differentialCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	add := func(label, dir string, fuzz bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".bin") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if fuzz {
				if b, err = fuzzCorpusBytes(b); err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
			}
			files[label+"/"+e.Name()] = b
		}
	}
	add("fixtures", fixtureDir(t), false)
	for _, f := range []string{"FuzzScan", "FuzzTorchZip", "FuzzTorchLegacy"} {
		add(f, "testdata/fuzz/"+f, true)
	}
	add("attacks", attackFiles(t, filepath.Join(t.TempDir(), "canary")), false)
	return files
}

// fuzzCorpusBytes reads a one-value []byte file of Go's fuzz corpus format.
func fuzzCorpusBytes(b []byte) ([]byte, error) {
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		return nil, strconv.ErrSyntax
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	return []byte(s), err
}

// TestAcceptedFilesLoadAlike loads every file of the corpus that repro
// converts with PyTorch (torch.load for torch files, pickle.load for plain
// pickles) and requires exactly the tensors repro exported: same names,
// dtypes, shapes and bytes.
func TestAcceptedFilesLoadAlike(t *testing.T) {
	tmp := t.TempDir()
	accepted := 0
	for name, data := range differentialCorpus(t) {
		for _, pn := range ProfileNames() {
			m, err := ConvertBytes(data, mustProfile(t, pn))
			if err != nil {
				continue
			}
			accepted++
			path := filepath.Join(tmp, "input")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			kind := "torch"
			if m.Report.Format == FormatPickle {
				kind = "pickle"
			}
			out, err := pyLoad(t, kind, path)
			if err != nil {
				t.Errorf("%s (profile %s): repro converts it but %s.load fails: %s", name, pn, kind, out)
				continue
			}
			var want []pyTensor
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatalf("%s: %v: %s", name, err, out)
			}
			var got []pyTensor
			for _, nt := range m.Tensors {
				got = append(got, pyTensor{nt.Name, torchDTypeNames[nt.DType.Name], nt.Shape, digest.Of(nt.Bytes()).Hex()})
			}
			for i := range got {
				if got[i].Shape == nil {
					got[i].Shape = []int64{}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (profile %s): repro exports %+v, %s.load returns %+v", name, pn, got, kind, want)
			}
		}
	}
	if accepted < 4 {
		t.Fatalf("only %d files of the corpus convert; the differential check needs the fixtures", accepted)
	}
	t.Logf("%d accepted (file, profile) pairs load alike", accepted)
}

// TestZipDirectoriesCannotSwapWeights: a zip whose zip64 directory points
// data/0 at other bytes runs no code, but torch.load returns other weights
// than a reader following the classic directory exports; repro refuses it.
func TestZipDirectoriesCannotSwapWeights(t *testing.T) {
	dir := attackFiles(t, filepath.Join(t.TempDir(), "canary"))
	path := filepath.Join(dir, "zip_two_directories_weights.pt")
	out, err := pyLoad(t, "torch", path)
	if err != nil {
		t.Fatalf("torch.load: %v: %s", err, out)
	}
	var got []pyTensor
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	sevens := bytes.Repeat([]byte{0, 0, 0xe0, 0x40}, 4) // float32 7.0, four times
	if len(got) != 1 || got[0].SHA256 != digest.Of(sevens).Hex() {
		t.Fatalf("control: torch.load returns %+v, not the zip64 directory's weights", got)
	}
	refusedByEveryProfile(t, path, "")
}

// refusedByEveryProfile requires every profile's scan to refuse the file
// at path, naming reason (when not ""), and its convert to fail.
func refusedByEveryProfile(t *testing.T, path, reason string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ProfileNames() {
		p := mustProfile(t, name)
		r := ScanBytes(data, p)
		why := r.Error
		for _, v := range r.Violations {
			why += " " + v.Reason
		}
		if r.Verdict == Clean || !strings.Contains(why, reason) {
			t.Errorf("profile %s: scan gives %s (%s), want a refusal naming %q", name, r.Verdict, why, reason)
		}
		if m, err := ConvertBytes(data, p); err == nil {
			t.Errorf("profile %s: convert exports %d tensors", name, len(m.Tensors))
		}
	}
}

// TestMetaStorageIsRefused: a torch.save zip whose storage location is
// "meta" but which holds the storage's bytes. torch.load (Debian's
// PyTorch, no map_location) returns a tensor without data on the meta
// device; repro, which would export the bytes, refuses the file.
func TestMetaStorageIsRefused(t *testing.T) {
	dir := attackFiles(t, filepath.Join(t.TempDir(), "canary"))
	path := filepath.Join(dir, "zip_meta_location.pt")
	out, err := pyLoad(t, "torch", path)
	if err != nil {
		t.Fatalf("torch.load: %v: %s", err, out)
	}
	var got []struct {
		Name, Device string
		SHA256       *string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Device != "meta" || got[0].SHA256 != nil {
		t.Fatalf("control: torch.load returns %s, not one tensor on the meta device", out)
	}
	refusedByEveryProfile(t, path, `"meta"`)
}
