package boardlog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// FuzzParseEntry: an entry that parses re-encodes to the same bytes and
// stays within its bounds.
func FuzzParseEntry(f *testing.F) {
	for _, i := range []int{0, 1} {
		b, _ := entry(i).Marshal()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEntry(b)
		if err != nil {
			return
		}
		again, err := e.Marshal()
		if err != nil || !bytes.Equal(again, b) || len(b) > MaxEntry || !isRecordText(b) {
			t.Fatalf("ParseEntry accepted %q, which is not canonical (%v)", b, err)
		}
	})
}

// fuzzSigner is a fixed log key for the fuzz targets.
func fuzzSigner(t testing.TB) (note.Signer, note.Verifier) {
	// A key made for these tests only.
	const skey = "PRIVATE+KEY+repro-board+535fc13e+AUc6r3f3d2nXQkRgUm1Tatb/VvrR5uD64GFirc8Y+rf5"
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := verifierKeyOf(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// FuzzOpenCheckpoint: a checkpoint note signed with the key whose text
// is fuzzed opens only in its canonical form and within the bounds.
func FuzzOpenCheckpoint(f *testing.F) {
	f.Add([]byte("repro board humanevalplus-v0.1.10\n5\nnND/nri/U0xuHUrYSy0HtMeal2vzD9V4k/BO79C+QeI=\n"))
	f.Add([]byte("repro board x\n01\nAAAA\n"))
	s, v := fuzzSigner(f)
	f.Fuzz(func(t *testing.T, text []byte) {
		msg, err := note.Sign(&note.Note{Text: string(text)}, s)
		if err != nil {
			return // not note text at all
		}
		cp, err := OpenCheckpoint(msg, v)
		if err != nil {
			return
		}
		if !bytes.Equal(formatCheckpoint(cp), text) || cp.Tree.N < 0 || cp.Tree.N > MaxEntries {
			t.Fatalf("OpenCheckpoint accepted %q as %+v", text, cp)
		}
	})
}

// FuzzVerifyDataTile: Verify of a log whose data tile is fuzzed accepts
// only the entries the signed tree holds.
func FuzzVerifyDataTile(f *testing.F) {
	home := f.TempDir()
	l, err := Open(home, dataset)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.Append(context.Background(), entries(0, 3)); err != nil {
		f.Fatal(err)
	}
	k, err := LoadKey(home, false)
	if err != nil {
		f.Fatal(err)
	}
	const rel = "tile/8/data/000.p/3"
	good, err := os.ReadFile(filepath.Join(l.dir, rel))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if _, err := l.Publish(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Verify(context.Background(), dirSource(dir), k.Verifier, VerifyOptions{})
		if err == nil && !bytes.Equal(data, good) {
			t.Fatalf("Verify accepted a data tile that is not the logged one: %q", data)
		}
	})
}

// FuzzSplitDataTile: the entries a data tile splits into are as many as
// asked, each ends in a newline, and together with their separators
// they are the tile.
func FuzzSplitDataTile(f *testing.F) {
	a, _ := entry(0).Marshal()
	b, _ := entry(1).Marshal()
	f.Add(append(append(append(a, '\n'), b...), '\n'), 2)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, w int) {
		if w < 1 || w > 1<<Height {
			return
		}
		recs, err := splitDataTile(data, w)
		if err != nil {
			return
		}
		var again []byte
		for _, r := range recs {
			if len(r) == 0 || r[len(r)-1] != '\n' {
				t.Fatalf("entry %q does not end in a newline", r)
			}
			again = append(append(again, r...), '\n')
		}
		if len(recs) != w || !bytes.Equal(again, data) {
			t.Fatalf("splitDataTile(%q, %d) = %q", data, w, recs)
		}
	})
}
