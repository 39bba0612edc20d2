package tarball_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/reprolab/repro/internal/tarball"
	tt "github.com/reprolab/repro/internal/tarball/tarballtest"
)

// FuzzReader: any bytes get an answer, never a panic, a *FormatError when
// refused; and what the reader accepts is exactly what the writer writes
// for the entries it read, then at most a record of zeros. The seed
// corpus (testdata/fuzz/FuzzReader) holds archives of every shape the
// writer writes and every hostile archive of the tests.
func FuzzReader(f *testing.F) {
	f.Add(write(f, shapes()...))
	for _, h := range hostiles(f) {
		f.Add(h.archive)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := readEntries(b, lim)
		if err != nil {
			var fe *tarball.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("refused without a format error: %v", err)
			}
			return
		}
		var w bytes.Buffer
		tw := tarball.NewWriter(&w)
		for _, e := range es {
			if err := tw.AddBytes(e.Name, e.mtime, e.Data); err != nil {
				t.Fatalf("accepted entry %q the writer refuses: %v", e.Name, err)
			}
		}
		tw.Close()
		canon := w.Bytes()
		if !bytes.HasPrefix(b, canon) {
			t.Fatalf("accepted an archive that is not the writer's form of its entries")
		}
		rest := b[len(canon):]
		if len(rest) > tarball.MaxTrailingZeros || len(bytes.Trim(rest, "\x00")) != 0 {
			t.Fatalf("accepted %d bytes after the end marker that are not a record of zeros", len(rest))
		}
		_ = tt.End
	})
}
