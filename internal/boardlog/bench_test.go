package boardlog

import (
	"context"
	"testing"
)

// BenchmarkVerify1000: Verify of a 1000-entry log from a folder, every
// entry checked, with an inclusion and a consistency proof.
func BenchmarkVerify1000(b *testing.B) {
	home := b.TempDir()
	l, err := Open(home, dataset)
	if err != nil {
		b.Fatal(err)
	}
	first, err := l.Append(context.Background(), entries(0, 10))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Append(context.Background(), entries(10, 1000)); err != nil {
		b.Fatal(err)
	}
	k, _ := LoadKey(home, false)
	for b.Loop() {
		if _, err := Verify(context.Background(), dirSource(l.dir), k.Verifier, VerifyOptions{RunID: entry(500).RunID, Since: first.Signed}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendOne1000: one entry appended to a 1000-entry log (the log
// is read and checked against its checkpoint first).
func BenchmarkAppendOne1000(b *testing.B) {
	home := b.TempDir()
	l, err := Open(home, dataset)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.Append(context.Background(), entries(0, 1000)); err != nil {
		b.Fatal(err)
	}
	i := 1000
	for b.Loop() {
		if _, err := l.Append(context.Background(), entries(i, i+1)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
