package pickle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FuzzScan decodes arbitrary bytes under every profile. It must never
// panic, and scan and convert must agree: a clean verdict converts, a
// conversion implies a clean verdict, and what converts writes a
// safetensors file that reads back.
func FuzzScan(f *testing.F) {
	f.Add(tinySnapshot("ema", "EDMPrecond"))
	f.Add(floatBlob(3))
	profiles := []*Profile{plainProfile(f)}
	for _, n := range ProfileNames() {
		profiles = append(profiles, mustProfile(f, n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range profiles {
			r := ScanBytes(data, p)
			var ie *InternalError
			if errors.As(r.Err(), &ie) {
				t.Fatalf("profile %s: %v", p.Name, ie)
			}
			m, err := ConvertBytes(data, p)
			if errors.As(err, &ie) {
				t.Fatalf("profile %s: convert: %v", p.Name, ie)
			}
			if (err == nil) != (r.Verdict == Clean) {
				t.Fatalf("profile %s: scan verdict %s but convert error %v", p.Name, r.Verdict, err)
			}
			if err != nil {
				continue
			}
			var buf bytes.Buffer
			if _, err := m.WriteSafetensors(&buf); err != nil {
				// Scan checks every name and dtype safetensors refuses.
				t.Fatalf("profile %s: clean verdict but the safetensors write fails: %v", p.Name, err)
			}
			h, err := ReadSafetensorsHeader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatalf("profile %s: written safetensors does not read back: %v", p.Name, err)
			}
			if len(h.Tensors) != len(m.Tensors) {
				t.Fatalf("profile %s: %d tensors written, %d read back", p.Name, len(m.Tensors), len(h.Tensors))
			}
			if _, err := m.ConfigJSON(); err != nil {
				t.Fatalf("profile %s: config: %v", p.Name, err)
			}
		}
	})
}

// FuzzSafetensorsHeader checks the header validator on arbitrary bytes.
func FuzzSafetensorsHeader(f *testing.F) {
	var buf bytes.Buffer
	st := &Storage{DType: DType{"F32", 4}, Numel: 2, Data: make([]byte, 8)}
	EncodeSafetensors(&buf, []NamedTensor{{"a", &Tensor{Storage: st, DType: st.DType, Shape: []int64{2}, Strides: []int64{1}}}}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadSafetensorsHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		var total int64
		for _, e := range h.Tensors {
			total += e.DataOffsets[1] - e.DataOffsets[0]
		}
		if h.DataStart+total != int64(len(data)) {
			t.Fatalf("accepted a header whose tensors cover %d of %d data bytes", total, int64(len(data))-h.DataStart)
		}
	})
}

// TestFuzzSeeds checks that the committed seed corpus under testdata/fuzz
// holds every seed built in Go (the hostile cases and the assembled
// snapshots) as they are built today. With REPRO_WRITE_FUZZ_SEEDS=1 it
// regenerates the corpus instead, adding small files written by PyTorch.
func TestFuzzSeeds(t *testing.T) {
	seeds := map[string][]byte{
		"tiny_snapshot": tinySnapshot("ema", "EDMPrecond"),
		"float_blob":    floatBlob(3),
	}
	for i, hc := range hostileCases {
		seeds[fmt.Sprintf("hostile_%02d", i)] = hc.build("touch /nonexistent/canary")
	}
	corpus := filepath.Join("testdata", "fuzz", "FuzzScan")
	if os.Getenv("REPRO_WRITE_FUZZ_SEEDS") != "1" {
		for name, b := range seeds {
			got, err := os.ReadFile(filepath.Join(corpus, name))
			if err != nil || string(got) != fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b) {
				t.Errorf("seed %s in %s is missing or stale (%v); regenerate with REPRO_WRITE_FUZZ_SEEDS=1", name, corpus, err)
			}
		}
		return
	}
	py := requireTorch(t)
	dir := t.TempDir()
	cmd := exec.Command(py, "testdata/torchfix/fixtures.py", "seeds", dir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, name := range []string{"seed_zip.pt", "seed_legacy.pt", "seed_sd.pkl", "seed_snapshot.pkl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		seeds[name] = b
	}
	os.RemoveAll(corpus)
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds {
		if err := os.WriteFile(filepath.Join(corpus, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	m, err := ConvertBytes(seeds["seed_zip.pt"], mustProfile(t, ProfileTorchStateDict))
	if err != nil {
		t.Fatal(err)
	}
	m.WriteSafetensors(&buf)
	hdr := filepath.Join("testdata", "fuzz", "FuzzSafetensorsHeader")
	os.MkdirAll(hdr, 0o755)
	if err := os.WriteFile(filepath.Join(hdr, "state_dict"), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", buf.Bytes())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzTorchZip checks the strict zip reader against Go's archive/zip: what
// readTorchZip accepts, archive/zip must read as the same records at the
// same offsets, and the records, headers and directory must account for
// every byte.
func FuzzTorchZip(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := readTorchZip(data)
		if err != nil {
			return
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("readTorchZip accepts what archive/zip refuses: %v", err)
		}
		if len(zr.File) != len(entries) {
			t.Fatalf("%d records, archive/zip reads %d", len(entries), len(zr.File))
		}
		var prev int64
		for i, zf := range zr.File {
			off, err := zf.DataOffset()
			en := entries[i]
			if err != nil || zf.Name != en.name || off != en.off || int64(zf.UncompressedSize64) != en.size || zf.CRC32 != en.crc {
				t.Fatalf("record %d: %q at %d+%d, archive/zip reads %q at %d+%d (%v)", i, en.name, en.off, en.size, zf.Name, off, zf.UncompressedSize64, err)
			}
			if en.off < prev {
				t.Fatalf("record %d overlaps the one before", i)
			}
			prev = en.off + en.size
		}
	})
}

// FuzzTorchLegacy decodes legacy torch files and plain pickles: a clean
// verdict must never go to a file that Python's tarfile (which torch.load
// tries first) or Go's archive/tar would read as a tar archive, and scan
// and convert must agree.
func FuzzTorchLegacy(f *testing.F) {
	p := mustProfile(f, ProfileTorchStateDict)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := ScanBytes(data, p)
		_, err := ConvertBytes(data, p)
		if (err == nil) != (r.Verdict == Clean) {
			t.Fatalf("scan verdict %s but convert error %v", r.Verdict, err)
		}
		if r.Verdict != Clean {
			return
		}
		if isTarHeader(data) {
			t.Fatal("clean verdict for a file with a valid tar header")
		}
		if _, err := tar.NewReader(bytes.NewReader(data)).Next(); err == nil {
			t.Fatal("clean verdict for a file archive/tar reads as a tar archive")
		}
	})
}
