package edm

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// npyBytes writes a .npy v1 file with the given header text and payload.
func npyBytes(header string, payload []byte) []byte {
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic + "\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	b.Write(payload)
	return b.Bytes()
}

func f32s(vs ...float32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

func f64s(vs ...float64) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

func npzBytes(members map[string][]byte, method uint16) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"mu.npy", "sigma.npy", "extra.npy"} {
		m, ok := members[name]
		if !ok {
			continue
		}
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		w.Write(m)
	}
	zw.Close()
	return b.Bytes()
}

func TestReadFeaturesRejects(t *testing.T) {
	good := npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, 2, 3, 4))
	if st, err := ReadFeatures(bytes.NewReader(good), 2, 2); err != nil || st.Mu[0] != 2 || st.Mu[1] != 3 || st.Sigma[0] != 2 {
		t.Fatalf("good features: %+v, %v", st, err)
	}
	for name, b := range map[string][]byte{
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte(nil), good...), 0),
		"wrong-shape":   npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f32s(1, 2, 3, 4)),
		"fortran":       npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f32s(1, 2, 3, 4)),
		"big-endian":    npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, 2, 3, 4)),
		"object":        npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, 2, 3, 4)),
		"nan":           npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, float32(math.NaN()), 3, 4)),
		"dup-key":       npyBytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, 2, 3, 4)),
		"huge-shape":    npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2147483648, 2147483648), }", nil),
		"bad-magic":     append([]byte("\x93NUMPZ"), good[6:]...),
		"no-newline":    append(good[:10:10], bytes.Replace(good[10:], []byte("\n"), []byte(" "), 1)...),
		"unknown-key":   npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", f32s(1, 2, 3, 4)),
		"one-no-comma":  npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", f32s(1, 2, 3, 4)),
		"version-9":     append(append([]byte(npyMagic), 9, 0), good[8:]...),
		"negative-dims": npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 2), }", f32s(1, 2, 3, 4)),
	} {
		if _, err := ReadFeatures(bytes.NewReader(b), 2, 2); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReadReferenceRejects(t *testing.T) {
	mu := npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64s(1, 2))
	sigma := npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f64s(1, 0.5, 0.5, 1))
	asym := npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f64s(1, 0.5, 0.4, 1))
	good := npzBytes(map[string][]byte{"mu.npy": mu, "sigma.npy": sigma}, zip.Store)
	if st, err := ReadReference(bytes.NewReader(good), int64(len(good)), 2); err != nil || st.Sigma[1] != 0.5 {
		t.Fatalf("good reference: %+v, %v", st, err)
	}
	for name, b := range map[string][]byte{
		"missing-sigma": npzBytes(map[string][]byte{"mu.npy": mu}, zip.Store),
		"extra-member":  npzBytes(map[string][]byte{"mu.npy": mu, "sigma.npy": sigma, "extra.npy": mu}, zip.Store),
		"asymmetric":    npzBytes(map[string][]byte{"mu.npy": mu, "sigma.npy": asym}, zip.Deflate),
		"swapped":       npzBytes(map[string][]byte{"mu.npy": sigma, "sigma.npy": mu}, zip.Store),
		"not-zip":       mu,
		"truncated":     good[:len(good)-10],
	} {
		if _, err := ReadReference(bytes.NewReader(b), int64(len(b)), 2); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	s, err := ParseSeeds("0-49999")
	if err != nil || len(s) != 50000 || s[49999] != 49999 {
		t.Fatalf("%d seeds, %v", len(s), err)
	}
	if s, err := ParseSeeds("1,2,5-7"); err != nil || formatSeeds(s) != "1-2,5-7" {
		t.Fatalf("%v %v", s, err)
	}
	for _, bad := range []string{"", "a", "1,,2", "-1", "5-1", "1,1", "0-4294967296", "0-2000000", "1 2", "+1", "1-2-3"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzReadFeatures(f *testing.F) {
	f.Add(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f32s(1, 2, 3, 4)), 2, 2)
	f.Add(npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1), }", f64s(1, 2, 3)), 3, 1)
	f.Add(npyBytes("{'shape': (2, 2), 'fortran_order': False, 'descr': '<f4'}", f32s(1, 2, 3, 4)), 2, 2)
	f.Fuzz(func(t *testing.T, b []byte, n, d int) {
		if n < 0 || n > 64 || d < 0 || d > 64 {
			return
		}
		st, err := ReadFeatures(bytes.NewReader(b), n, d)
		if err == nil && (len(st.Mu) != d || len(st.Sigma) != d*d) {
			t.Fatalf("statistics of the wrong size")
		}
	})
}

func FuzzReadReference(f *testing.F) {
	mu := npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64s(1, 2))
	sigma := npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f64s(1, 0.5, 0.5, 1))
	f.Add(npzBytes(map[string][]byte{"mu.npy": mu, "sigma.npy": sigma}, zip.Store))
	f.Add(npzBytes(map[string][]byte{"mu.npy": mu, "sigma.npy": sigma}, zip.Deflate))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ReadReference(bytes.NewReader(b), int64(len(b)), 2)
		if err == nil {
			if _, err := FrechetDistance(st, st); err != nil {
				t.Fatalf("accepted statistics without a distance: %v", err)
			}
		}
	})
}

func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"0-49999", "1,2,5-10", "4294967295", "0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err != nil {
			return
		}
		again, err := ParseSeeds(formatSeeds(seeds))
		if err != nil || len(again) != len(seeds) {
			t.Fatalf("%q does not round-trip: %v", s, err)
		}
		for i := range seeds {
			if seeds[i] < 0 || seeds[i] > MaxSeed || again[i] != seeds[i] {
				t.Fatalf("%q: seed %d", s, seeds[i])
			}
		}
	})
}

func FuzzParseNvidiaSMI(f *testing.F) {
	f.Add([]byte("0, NVIDIA H200, 580.159.03, 143771, 143000\n"))
	f.Add([]byte("0, A, 1, 2, 3\n1, B, 1, 2, 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, err := parseNvidiaSMI(b)
		if err == nil && len(gpus) == 0 {
			t.Fatal("no GPU and no error")
		}
	})
}
