package boardlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const dataset = "HumanEvalPlus-v0.1.10"

func hex64(c byte) string { return strings.Repeat(string([]byte{c}), 64) }

// entry is the i-th test entry; every field differs between entries.
func entry(i int) Entry {
	e := Entry{
		RunID: fmt.Sprintf("humaneval-20260101T000000Z-%08x", i), Dataset: dataset, Label: fmt.Sprintf("model %d", i),
		SignerKeyID: hex64('a'), RecordSHA256: fmt.Sprintf("%064x", i+1), EnvelopeSHA256: fmt.Sprintf("%064x", i+2),
	}
	if i%2 == 1 {
		e.BundleSHA256 = fmt.Sprintf("%064x", i+3)
	}
	return e
}

func entries(from, to int) []Entry {
	var es []Entry
	for i := from; i < to; i++ {
		es = append(es, entry(i))
	}
	return es
}

// appendTo appends es to the log of home and returns the log and the
// signed checkpoint.
func appendTo(t *testing.T, home string, es []Entry) (*Log, []byte) {
	t.Helper()
	l, err := Open(home, dataset)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Append(context.Background(), es)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return l, a.Signed
}

func verifierOf(t *testing.T, home string) note.Verifier {
	t.Helper()
	k, err := LoadKey(home, false)
	if err != nil {
		t.Fatal(err)
	}
	return k.Verifier
}

func code(err error) exitcode.Code { return exitcode.Of(err) }

func TestEntryEncodingIsCanonical(t *testing.T) {
	for _, i := range []int{0, 1} {
		b, err := entry(i).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseEntry(b)
		if err != nil || got != entry(i) {
			t.Fatalf("ParseEntry(Marshal(%d)) = %+v, %v", i, got, err)
		}
		if !isRecordText(b) {
			t.Errorf("entry %q is not a tlog record text", b)
		}
	}
	good, _ := entry(0).Marshal()
	for name, bad := range map[string][]byte{
		"no final newline": bytes.TrimSuffix(good, []byte("\n")),
		"extra line":       append(bytes.Clone(good), "x y\n"...),
		"double space":     bytes.Replace(good, []byte("label "), []byte("label  "), 1),
		"unquoted label":   bytes.Replace(good, []byte(`"model 0"`), []byte("model 0"), 1),
		"escaped needless": bytes.Replace(good, []byte(`"model 0"`), []byte(`"model\x200"`), 1),
		"lines swapped":    bytes.Replace(bytes.Replace(good, []byte("run "), []byte("XX "), 1), []byte("dataset "), []byte("run "), 1),
		"upper-case hex":   bytes.Replace(good, []byte("signer aaaa"), []byte("signer AAAA"), 1),
		"control char":     bytes.Replace(good, []byte("model 0"), []byte("model\x1b0"), 1),
		"bundle empty":     bytes.Replace(good, []byte("bundle none"), []byte("bundle sha256:"), 1),
		"other header":     bytes.Replace(good, []byte("entry v1"), []byte("entry v2"), 1),
		"too long":         bytes.Repeat([]byte("a"), MaxEntry+1),
	} {
		if _, err := ParseEntry(bad); err == nil {
			t.Errorf("%s: ParseEntry accepted %q", name, bad)
		}
	}
	long := entry(0)
	long.Label = strings.Repeat("x", maxLabel+1)
	if _, err := long.Marshal(); err == nil {
		t.Error("Marshal accepted a label longer than the bound")
	}
	// Whatever a submitter put in a label (runlabel keeps 100 characters)
	// is logged, as one printable line, and read back as it was.
	for _, label := range []string{"tab	and line sep", "trailing space ", "ÿþ not UTF-8", strings.Repeat("😀", 100), `quote " and \ backslash`} {
		e := entry(0)
		e.Label = label
		b, err := e.Marshal()
		if err != nil {
			t.Fatalf("Marshal of label %q: %v", label, err)
		}
		got, err := ParseEntry(b)
		if err != nil || got.Label != label || !isRecordText(b) || len(b) > MaxEntry {
			t.Errorf("label %q: %q, %v", label, b, err)
		}
	}
}

// isRecordText uses tlog's own check of a record's text form.
func isRecordText(b []byte) bool {
	_, err := tlog.FormatRecord(0, b)
	return err == nil
}

// TestAppendVerifyRoundTrip appends past a full tile, verifies a run's
// inclusion and the consistency with the first checkpoint, and compares
// the root hash and proofs with those golang.org/x/mod/sumdb/tlog makes
// from the entries alone.
func TestAppendVerifyRoundTrip(t *testing.T) {
	home := t.TempDir()
	l, first := appendTo(t, home, entries(0, 3))
	a, err := l.Append(context.Background(), entries(0, 300)) // the first 3 are in already
	if err != nil {
		t.Fatal(err)
	}
	if a.Added != 297 || a.Checkpoint.Tree.N != 300 {
		t.Fatalf("Append added %d, size %d; want 297, 300", a.Added, a.Checkpoint.Tree.N)
	}
	for _, p := range []string{"tile/8/0/000", "tile/8/0/001.p/44", "tile/8/1/000.p/1", "tile/8/data/000", "tile/8/data/001.p/44", "tile/8/0/000.p/3", "tile/8/data/000.p/3"} {
		if _, err := os.Stat(filepath.Join(l.dir, p)); err != nil {
			t.Errorf("tile %s: %v", p, err)
		}
	}
	v := verifierOf(t, home)
	rep, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{RunID: entry(260).RunID, Since: first, SinceFrom: "first"})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Size != 300 || rep.EntriesChecked != 300 || len(rep.Run) != 1 || rep.Run[0].Index != 260 || rep.Run[0].Entry != entry(260) || rep.Since == nil || rep.Since.Size != 3 {
		t.Fatalf("report: %+v", rep)
	}

	// The reference: the same tree built from the entries in memory.
	var texts [][]byte
	for _, e := range entries(0, 300) {
		b, _ := e.Marshal()
		texts = append(texts, b)
	}
	hashes, err := storedHashes(texts)
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.TreeHash(300, hashReader(hashes))
	if err != nil || root != rep.RootHash {
		t.Fatalf("root hash %s, the reference %s (%v)", rep.RootHash, root, err)
	}
	proof, err := tlog.ProveRecord(300, 260, hashReader(hashes))
	if err != nil || fmt.Sprint(proof) != fmt.Sprint(rep.Run[0].Proof) {
		t.Fatalf("inclusion proof differs from the reference's (%v)", err)
	}
	if err := tlog.CheckRecord(rep.Run[0].Proof, 300, root, 260, tlog.RecordHash(texts[260])); err != nil {
		t.Fatalf("tlog.CheckRecord of the reported proof: %v", err)
	}
	old, err := tlog.TreeHash(3, hashReader(hashes))
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(rep.Since.Proof, 300, root, 3, old); err != nil || rep.Since.RootHash != old {
		t.Fatalf("tlog.CheckTree of the reported proof: %v", err)
	}

	// A published copy verifies from the folder above its log/.
	out := t.TempDir()
	files, err := l.Publish(context.Background(), filepath.Join(out, "log"))
	if err != nil || files[len(files)-1] != "checkpoint" {
		t.Fatalf("Publish: %v %v", files, err)
	}
	src, err := OpenSource(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), src, v, VerifyOptions{RunID: entry(0).RunID, Since: first}); err != nil {
		t.Fatalf("Verify of the published copy: %v", err)
	}
	// The old checkpoint still verifies against the copy's old tiles.
	old1 := filepath.Join(t.TempDir(), "log")
	os.MkdirAll(old1, 0o755)
	copyTree(t, filepath.Join(out, "log"), old1)
	os.WriteFile(filepath.Join(old1, "checkpoint"), first, 0o644)
	if rep, err := Verify(context.Background(), dirSource(old1), v, VerifyOptions{RunID: entry(2).RunID}); err != nil || rep.Size != 3 {
		t.Fatalf("Verify of the first checkpoint: %v", err)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rewriteTile replaces the entries of data tile rel in dir by what edit
// makes of them.
func rewriteTile(t *testing.T, dir, rel string, edit func([][]byte) [][]byte) {
	t.Helper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	parts := bytes.Split(b, []byte("\n\n"))
	if len(parts[len(parts)-1]) != 0 {
		t.Fatalf("%s does not end in an empty line", rel)
	}
	var recs [][]byte
	for _, p := range parts[:len(parts)-1] {
		recs = append(recs, append(p, '\n'))
	}
	var out []byte
	for _, r := range edit(recs) {
		out = append(append(out, r...), '\n')
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTamperedTilesFail: a published log whose data tile had an entry
// changed, removed or reordered, or whose hash tile was changed, fails
// with exit 4; a missing tile too; a missing checkpoint is exit 3.
func TestTamperedTilesFail(t *testing.T) {
	home := t.TempDir()
	l, _ := appendTo(t, home, entries(0, 5))
	v := verifierOf(t, home)
	const data = "tile/8/data/000.p/5"
	for name, tc := range map[string]struct {
		edit func(dir string)
		want exitcode.Code
	}{
		"entry changed": {func(dir string) {
			rewriteTile(t, dir, data, func(r [][]byte) [][]byte {
				r[2] = bytes.Replace(r[2], []byte("model 2"), []byte("model 9"), 1)
				return r
			})
		}, exitcode.Integrity},
		"entry removed": {func(dir string) {
			rewriteTile(t, dir, data, func(r [][]byte) [][]byte { return append(r[:1], r[2:]...) })
		}, exitcode.Integrity},
		"entries reordered": {func(dir string) {
			rewriteTile(t, dir, data, func(r [][]byte) [][]byte { r[1], r[3] = r[3], r[1]; return r })
		}, exitcode.Integrity},
		"hash tile changed": {func(dir string) {
			p := filepath.Join(dir, "tile/8/0/000.p/5")
			b, _ := os.ReadFile(p)
			b[40] ^= 1
			os.WriteFile(p, b, 0o644)
		}, exitcode.Integrity},
		"hash tile missing":  {func(dir string) { os.Remove(filepath.Join(dir, "tile/8/0/000.p/5")) }, exitcode.Integrity},
		"data tile missing":  {func(dir string) { os.Remove(filepath.Join(dir, data)) }, exitcode.Integrity},
		"checkpoint missing": {func(dir string) { os.Remove(filepath.Join(dir, "checkpoint")) }, exitcode.Precondition},
		"checkpoint edited": {func(dir string) {
			p := filepath.Join(dir, "checkpoint")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("\n5\n"), []byte("\n4\n"), 1), 0o644)
		}, exitcode.Integrity},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := l.Publish(context.Background(), dir); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(context.Background(), dirSource(dir), v, VerifyOptions{}); err != nil {
				t.Fatalf("untouched copy: %v", err)
			}
			tc.edit(dir)
			_, err := Verify(context.Background(), dirSource(dir), v, VerifyOptions{})
			if err == nil || code(err) != tc.want {
				t.Fatalf("Verify = %v (exit %d), want exit %d", err, code(err), tc.want)
			}
		})
	}
}

// rebuilt is a log built from es in a new home signed with the key of
// home: a maintainer rewriting history.
func rebuilt(t *testing.T, home string, es []Entry) *Log {
	t.Helper()
	other := t.TempDir()
	kp := layout.Home(other).BoardLogKey()
	os.MkdirAll(filepath.Dir(kp), 0o700)
	b, err := os.ReadFile(layout.Home(home).BoardLogKey())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(kp, b, 0o600)
	l, _ := appendTo(t, other, es)
	return l
}

// TestRewrittenHistoryFails: a log re-signed by its own key after an
// entry was changed, removed or reordered verifies on its own, but not as
// an extension of a checkpoint a reader kept; nor does a fork of the
// same size, a shorter log, or a checkpoint of another key.
func TestRewrittenHistoryFails(t *testing.T) {
	home := t.TempDir()
	_, kept := appendTo(t, home, entries(0, 5))
	v := verifierOf(t, home)
	changed := entries(0, 7)
	changed[2].Label = "model 2 (better)"
	removed := append(entries(0, 2), entries(3, 7)...)
	reordered := entries(0, 7)
	reordered[1], reordered[3] = reordered[3], reordered[1]
	forked := entries(0, 5)
	forked[4].EnvelopeSHA256 = hex64('f')
	for name, es := range map[string][]Entry{"entry changed": changed, "entry removed": removed, "entries reordered": reordered, "forked": forked, "shorter": entries(0, 4)} {
		t.Run(name, func(t *testing.T) {
			l := rebuilt(t, home, es)
			if _, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{}); err != nil {
				t.Fatalf("the rewritten log on its own: %v", err)
			}
			_, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{Since: kept})
			if code(err) != exitcode.Integrity {
				t.Fatalf("Verify --since the kept checkpoint = %v, want an integrity error", err)
			}
		})
	}
	t.Run("honest extension", func(t *testing.T) {
		l := rebuilt(t, home, entries(0, 9))
		if _, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{Since: kept}); err != nil {
			t.Fatalf("an honest extension: %v", err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		other := t.TempDir()
		l, _ := appendTo(t, other, entries(0, 5))
		if _, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{}); code(err) != exitcode.Integrity {
			t.Fatalf("a log signed by another key = %v, want an integrity error", err)
		}
	})
	t.Run("removed run", func(t *testing.T) {
		l := rebuilt(t, home, removed)
		if _, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{RunID: entry(2).RunID}); code(err) != exitcode.Integrity {
			t.Fatalf("--run of a removed run = %v, want an integrity error", err)
		}
	})
}

// TestAppendRefusesATamperedLocalLog: Append never signs over a log
// changed behind its back.
func TestAppendRefusesATamperedLocalLog(t *testing.T) {
	home := t.TempDir()
	l, _ := appendTo(t, home, entries(0, 4))
	rewriteTile(t, l.dir, "tile/8/data/000.p/4", func(r [][]byte) [][]byte { return append(r[:1], r[2:]...) })
	if _, err := l.Append(context.Background(), entries(4, 5)); code(err) != exitcode.Integrity {
		t.Fatalf("Append to a tampered log = %v, want an integrity error", err)
	}
}

func TestLogKeyMode(t *testing.T) {
	home := t.TempDir()
	k, err := LoadKey(home, true)
	if err != nil {
		t.Fatal(err)
	}
	p := layout.Home(home).BoardLogKey()
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	again, err := LoadKey(home, false)
	if err != nil || again.VerifierKey != k.VerifierKey {
		t.Fatalf("LoadKey again: %v", err)
	}
	if _, err := NewVerifier(k.VerifierKey); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644)
	if _, err := LoadKey(home, false); code(err) != exitcode.Precondition {
		t.Fatalf("a key readable by others: %v", err)
	}
	if _, err := LoadKey(t.TempDir(), false); code(err) != exitcode.Precondition {
		t.Fatalf("no key: %v", err)
	}
}

// TestConcurrentAppends: exports appending at once (each with its own
// open of the lock, as two processes have) lose no entry, and a copy
// taken meanwhile is always of one state.
func TestConcurrentAppends(t *testing.T) {
	home := t.TempDir()
	appendTo(t, home, entries(0, 1))
	v := verifierOf(t, home)
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		go func() {
			l, err := Open(home, dataset)
			if err == nil {
				_, err = l.Append(context.Background(), entries(1+g*20, 21+g*20))
			}
			errs <- err
		}()
		go func() {
			l, err := Open(home, dataset)
			if err == nil {
				dir := t.TempDir()
				if _, err = l.Publish(context.Background(), dir); err == nil {
					_, err = Verify(context.Background(), dirSource(dir), v, VerifyOptions{})
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	l, _ := Open(home, dataset)
	rep, err := Verify(context.Background(), dirSource(l.dir), v, VerifyOptions{})
	if err != nil || rep.Size != 81 {
		t.Fatalf("after four appends of 20: %+v %v", rep, err)
	}
}

// TestLogKeyIsMadeOnce: processes making the key at once end with one
// key, the one every one of them returns.
func TestLogKeyIsMadeOnce(t *testing.T) {
	home := t.TempDir()
	keys := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func() {
			k, err := LoadKey(home, true)
			if err != nil {
				t.Error(err)
				keys <- ""
				return
			}
			keys <- k.VerifierKey
		}()
	}
	first := <-keys
	for i := 1; i < 8; i++ {
		if k := <-keys; k != first {
			t.Errorf("two keys made: %q and %q", first, k)
		}
	}
	names, _ := os.ReadDir(filepath.Dir(layout.Home(home).BoardLogKey()))
	if len(names) != 1 {
		t.Errorf("the keys folder holds %d files, want the key alone", len(names))
	}
}
