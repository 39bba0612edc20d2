package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfigRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"volumes":{},"gpu":8}`, `unknown field "gpu"`},
		{`{"volumes":{}} {"volumes":{}}`, "trailing data"},
		{`{"volumes":{"output":{"path":"results"}}}`, "not an absolute path"},
		{`{"volumes":{"output":{"path":"/a/../b"}}}`, "not a clean path"},
		{`{"volumes":{"output":{"path":"/a:b"}}}`, "':' or ','"},
		{`{"volumes":{"dataset":{"claim":"Criteo_Data"}}}`, "not a Kubernetes object name"},
		{`{"volumes":{},"env":{"A":"x\ny"}}`, "control character"},
		{`{"volumes":{},"env":{"REPRO_SEED":"1"}}`, "set by the bundle"},
		{`{"volumes":{},"criteo_license":{"date":"01/11/2026"}}`, "not a date"},
		{`{"volumes":{},"models":{"target":{"path":"../x"}}}`, "clean relative path"},
		{`{"volumes":{},"gpus":1000}`, "out of range"},
		{`{"volumes":{},"container":"docker"}`, "none of pyxis, apptainer and podman"},
		{`{"volumes":{},"runtime":{"torch":"1.13; rm -rf /"}}`, "is not a version"},
		{`{"volumes":{},"slurm":{"time":"8h --wrap=x"}}`, "sbatch does not take"},
		{`{"volumes":{},"command":["a",""]}`, "empty argument"},
		{"{\"volumes\":{},\"image\":\"\xff\"}", "not valid UTF-8"},
		{`{"volumes":{},"seeds":[-1]}`, "out of range"},
		{`{"volumes":{},"image":"` + strings.Repeat("a", 5000) + `"}`, "over the limit"},
	} {
		_, err := ParseConfig([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: got %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseConfig(make([]byte, MaxConfigBytes+1)); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("oversized config: %v", err)
	}
}

// TestDocExampleParses keeps the example in docs/handoff.md valid.
func TestDocExampleParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "handoff.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "```json\n")
	j := strings.Index(s[i+8:], "```")
	ex := strings.ReplaceAll(s[i+8:i+8+j], "<64 hex>", strings.Repeat("a", 64))
	c, err := ParseConfig([]byte(ex))
	if err != nil {
		t.Fatalf("the documented example does not parse: %v", err)
	}
	if _, err := ParseImageRef(c.Image); err != nil || c.Volumes.Dataset.Claim != "criteo" {
		t.Fatalf("example: %v %+v", err, c.Volumes.Dataset)
	}
}

func TestParseImageRef(t *testing.T) {
	h := strings.Repeat("a", 64)
	for in, want := range map[string]string{
		"nvcr.io/nvidia/tensorflow@sha256:" + h: "docker://nvcr.io#nvidia/tensorflow@sha256:" + h,
		"pytorch/pytorch@sha256:" + h:           "docker://pytorch/pytorch@sha256:" + h,
		"docker.io/library/ubuntu@sha256:" + h:  "docker://library/ubuntu@sha256:" + h,
		"localhost:5000/x@sha256:" + h:          "docker://localhost:5000#x@sha256:" + h,
	} {
		r, err := ParseImageRef(in)
		if err != nil || r.Enroot() != want || r.String() != in || r.Apptainer() != "docker://"+in {
			t.Errorf("%s: %v, enroot %s", in, err, r.Enroot())
		}
	}
	for in, want := range map[string]string{
		"nvcr.io/nvidia/tensorflow:22.09-tf1-py3":                "names no digest",
		"nvcr.io/nvidia/tensorflow:22.09-tf1-py3@sha256:" + h:    "drop the tag",
		"bob:secret@nvcr.io/nvidia/tensorflow@sha256:" + h:       "carries a credential",
		"nvcr.io#nvidia/tensorflow@sha256:" + h:                  "enroot's registry#name",
		"nvcr.io/nvidia/tensorflow@sha512:" + h + h:              "only sha256",
		"nvcr.io/nvidia/tensorflow@sha256:" + strings.ToUpper(h): "lowercase",
		"NVIDIA/tensorflow@sha256:" + h:                          "invalid repository name",
	} {
		if _, err := ParseImageRef(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestDriverFloor(t *testing.T) {
	f, _ := FloorFor("11.8")
	for v, ok := range map[string]bool{"520.61.05": true, "535.104.05": true, "470.57.02": true, "470.42.01": false, "460.91.03": false, "515.65.01": true, "450.51.06": true, "418.226.00": false} {
		if f.DriverOK(v) != ok {
			t.Errorf("CUDA 11.8 driver %s: %v, want %v", v, !ok, ok)
		}
	}
	f, _ = FloorFor("10.0")
	if !f.CCOK("7.0") || f.CCOK("8.0") || f.CCOK("5.2") || !f.DriverOK("410.48") || f.DriverOK("410.47") {
		t.Error("CUDA 10.0 floor")
	}
	if _, ok := FloorFor("12.2"); ok {
		t.Error("a floor for CUDA 12.2 is on record; the MLPerf notes publish none")
	}
}

// A key given twice in one object (or twice up to case, which encoding/json
// does not tell apart) is refused, at any depth; the last one used to win.
func TestParseConfigDuplicateKeys(t *testing.T) {
	img := `"nvcr.io/nvidia/tensorflow@sha256:` + strings.Repeat("a", 64) + `"`
	refused := map[string]string{
		`{"image":` + img + `,"image":` + img + `,"volumes":{}}`:                           `key "image" appears twice in the object at the top level`,
		`{"gpus":1,"GPUS":8,"volumes":{}}`:                                                 `keys "gpus" and "GPUS" of the object at the top level differ only in case`,
		`{"volumes":{"output":{"path":"/a","path":"/b"}}}`:                                 `key "path" appears twice in the object at volumes.output`,
		`{"volumes":{},"env":{"A":"1","A":"2"}}`:                                           `key "A" appears twice in the object at env`,
		`{"volumes":{},"pro_games":{"decision":"none","files":[{"path":"a","path":"b"}]}}`: `at pro_games.files[]`,
		`{"volumes":{},"log_file":"a.txt","log_file":"x$(touch y).log"}`:                   `key "log_file" appears twice`,
	}
	for text, want := range refused {
		_, err := ParseConfig([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%s): %v; want an error containing %q", text, err, want)
		}
	}
	// The same names in different objects are fine.
	ok := `{"volumes":{"output":{"path":"/a"},"source":{"path":"/b"}},"env":{"A":"1","B":"2"}}`
	if _, err := ParseConfig([]byte(ok)); err != nil {
		t.Errorf("ParseConfig(%s): %v", ok, err)
	}
}
