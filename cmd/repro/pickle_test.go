package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
)

// runRepro runs the command line in process and returns stdout and the
// exit code main would use.
const snapshotFixture = "testdata/pickle/snapshot.pkl"

func TestPickleScanExitCodes(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	system := write("system.pkl", []byte("cos\nsystem\n(S'touch "+canary+"'\ntR."))
	badOp := write("badop.pkl", []byte("\x80\x04\xff."))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want exitcode.Code
		out  string
	}{
		{"clean", []string{"pickle", "scan", "--profile", "edm-checkpoint", snapshotFixture}, exitcode.OK, "verdict    CLEAN"},
		{"wrong profile", []string{"pickle", "scan", snapshotFixture}, exitcode.Negative, "verdict    REJECTED"},
		{"os.system", []string{"pickle", "scan", "--profile", "edm-checkpoint", system}, exitcode.Negative, "NO        1  os.system"},
		{"unknown opcode", []string{"pickle", "scan", badOp}, exitcode.Integrity, "unknown opcode 0xff"},
		{"unknown profile", []string{"pickle", "scan", "--profile", "nope", snapshotFixture}, exitcode.Usage, ""},
		{"no file", []string{"pickle", "scan"}, exitcode.Usage, ""},
		{"missing file", []string{"pickle", "scan", filepath.Join(dir, "absent")}, exitcode.Precondition, ""},
		{"folder", []string{"pickle", "scan", dir}, exitcode.Usage, ""},
		{"fifo", []string{"pickle", "scan", fifo}, exitcode.Usage, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var out string
			var code exitcode.Code
			go func() { code, out, _ = runRepro(t, c.args...); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("command blocked")
			}
			if code != c.want {
				t.Errorf("exit %d, want %d\n%s", code, c.want, out)
			}
			if !strings.Contains(out, c.out) {
				t.Errorf("output lacks %q:\n%s", c.out, out)
			}
		})
	}
	if _, err := os.Stat(canary); !os.IsNotExist(err) {
		t.Fatal("canary exists: the payload ran")
	}
}

func TestPickleScanJSON(t *testing.T) {
	code, out, _ := runRepro(t, "pickle", "scan", "--profile", "edm-checkpoint", "--json", snapshotFixture)
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	var r struct {
		File    string `json:"file"`
		Verdict string `json:"verdict"`
		Format  string `json:"format"`
		SHA256  string `json:"sha256"`
		Globals []struct {
			Name    string `json:"name"`
			Allowed bool   `json:"allowed"`
		} `json:"globals"`
		Sources []struct {
			SHA256 string `json:"sha256"`
		} `json:"embedded_sources"`
		Tensors []struct {
			Name  string  `json:"name"`
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		} `json:"tensors"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.File != snapshotFixture || r.Verdict != "clean" || r.Format != "pickle" || len(r.SHA256) != 64 {
		t.Errorf("report header %+v", r)
	}
	if len(r.Tensors) != 1 || r.Tensors[0].Name != "ema.w" || r.Tensors[0].DType != "F32" || len(r.Tensors[0].Shape) != 1 {
		t.Errorf("tensors %+v", r.Tensors)
	}
	if len(r.Sources) != 1 || len(r.Globals) == 0 {
		t.Errorf("sources %+v globals %+v", r.Sources, r.Globals)
	}
	// One document, nothing after it.
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON document on stdout")
	}
}

func TestPickleConvert(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runRepro(t, "pickle", "convert", "--profile", "edm-checkpoint", "--out", dir, "--json", snapshotFixture)
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var res struct {
		Safetensors string `json:"safetensors"`
		Config      string `json:"config"`
		Tensors     int    `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Tensors != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	st, err := os.ReadFile(res.Safetensors)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(st, []byte{0, 1, 2, 3, 4, 5, 6, 7}) || !bytes.Contains(st, []byte(`"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`)) {
		t.Errorf("safetensors file %q", st)
	}
	var cfg struct {
		NetworkClass string         `json:"network_class"`
		InitKwargs   map[string]int `json:"init_kwargs"`
	}
	b, _ := os.ReadFile(res.Config)
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.NetworkClass != "EDMPrecond" || cfg.InitKwargs["img_resolution"] != 32 {
		t.Errorf("config %s: %v", b, err)
	}

	// A rejected file writes nothing.
	empty := t.TempDir()
	bad := filepath.Join(empty, "bad.pkl")
	os.WriteFile(bad, []byte("cos\nsystem\n(S'true'\ntR."), 0o644)
	if code, _, _ := runRepro(t, "pickle", "convert", "--profile", "edm-checkpoint", "--out", empty, bad); code != exitcode.Negative {
		t.Errorf("exit %d for os.system, want 1", code)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 1 {
		t.Errorf("rejected conversion left files: %v", ents)
	}
	if code, _, _ := runRepro(t, "pickle", "convert", snapshotFixture); code != exitcode.Usage {
		t.Errorf("exit %d without --out, want 2", code)
	}
}

// TestPickleMetadataKeyScanAgreesWithConvert: a state dict entry named
// "__metadata__" (the key safetensors reserves for its header's metadata)
// is rejected alike by scan and convert, and convert writes nothing.
// testdata/pickle/metadata_key.pkl is pickle.dump(OrderedDict(w=ones(2),
// __metadata__=zeros(2)), protocol=2) from Debian's python3-torch 1.13.
func TestPickleMetadataKeyScanAgreesWithConvert(t *testing.T) {
	const file = "testdata/pickle/metadata_key.pkl"
	code, out, _ := runRepro(t, "pickle", "scan", file)
	if code != exitcode.Negative || !strings.Contains(out, "__metadata__") {
		t.Errorf("scan: exit %d, want 1 naming __metadata__:\n%s", code, out)
	}
	dir := t.TempDir()
	code, _, stderr := runRepro(t, "pickle", "convert", "--out", dir, file)
	if code != exitcode.Negative || !strings.Contains(stderr, "__metadata__") {
		t.Errorf("convert: exit %d (%s), want 1 naming __metadata__", code, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("rejected conversion left files: %v", ents)
	}
}
