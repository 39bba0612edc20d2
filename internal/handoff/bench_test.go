package handoff

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkHashFile measures the one-pass SHA-256 (+ MD5) hashing that
// repro handoff does over every Criteo day file and the DLRM checkpoint;
// bytes/s times ~1.1 TB (days) + ~0.7 TB (binaries) + 90 GB (checkpoint)
// estimates how long a DLRM handoff takes.
func BenchmarkHashFile(b *testing.B) {
	name := filepath.Join(b.TempDir(), "blob")
	writeFile(b, name, randomBytes(1, 64<<20), 0o644)
	for _, withMD5 := range []bool{false, true} {
		label := "sha256"
		if withMD5 {
			label = "sha256+md5"
		}
		b.Run(label, func(b *testing.B) {
			b.SetBytes(64 << 20)
			for i := 0; i < b.N; i++ {
				if _, err := hashFile(context.Background(), name, withMD5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRender measures rendering a bundle's files from a manifest,
// which verify and ingest do every time.
func BenchmarkRender(b *testing.B) {
	w := newDLRMWorld(b)
	m := w.bundle(b, TargetKubernetes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Render(m); err != nil {
			b.Fatal(err)
		}
	}
}
