package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeJournal(t *testing.T, n int) (string, []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := Create(p, map[string]string{"kind": "header"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Add(map[string]int{"verdict": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// read is what a Scan hands over, collected, with the scan's Summary.
type read struct {
	Entries []Entry
	*Summary
}

func (c *read) add(e Entry) error {
	c.Entries = append(c.Entries, e)
	return nil
}

func collect(r io.Reader) (*read, error) {
	c := &read{}
	s, err := Scan(r, c.add)
	c.Summary = s
	return c, err
}

func collectFile(t *testing.T, path string) *read {
	t.Helper()
	c := &read{}
	s, err := ScanFile(path, c.add)
	if err != nil {
		t.Fatal(err)
	}
	c.Summary = s
	return c
}

func TestRoundTripAndContinue(t *testing.T) {
	p, _ := writeJournal(t, 100)
	c := collectFile(t, p)
	if len(c.Entries) != 101 || c.Torn {
		t.Fatalf("read %d entries, torn %v; want 101, false", len(c.Entries), c.Torn)
	}
	q := filepath.Join(t.TempDir(), "next.jsonl")
	w, err := Continue(q, p, collectFile(t, p).Summary, map[string]string{"kind": "resume"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(map[string]int{"verdict": 100}); err != nil {
		t.Fatal(err)
	}
	head, n := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := collectFile(t, q)
	if len(c2.Entries) != 103 || n != 103 || c2.Head != head {
		t.Fatalf("continued journal: %d entries, head %s; writer says %d, %s", len(c2.Entries), c2.Head, n, head)
	}
	if c2.Entries[100].Hash != c.Head {
		t.Fatal("the continued journal does not keep the first one's chain")
	}
	if _, err := Continue(q, p, collectFile(t, p).Summary, nil); err == nil {
		t.Fatal("Continue wrote over an existing journal")
	}
}

// TestContinueWhatWasRead: Continue copies the chain its caller read,
// byte for byte and without a torn tail, and refuses, leaving no file,
// a journal that changed since it was read.
func TestContinueWhatWasRead(t *testing.T) {
	p, b := writeJournal(t, 5)
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	if err := os.WriteFile(torn, append(append([]byte{}, b...), `{"seq":6,"pr`...), 0o644); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "next.jsonl")
	w, err := Continue(q, torn, collectFile(t, torn).Summary, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, _ := os.ReadFile(q); !bytes.Equal(got, b) {
		t.Fatalf("continued journal is not the chain read, byte for byte:\n%s", got)
	}

	read := collectFile(t, p).Summary
	longer, _ := writeJournal(t, 6)
	shorter, _ := writeJournal(t, 4)
	// Another chain as long as the one read: another header.
	other := filepath.Join(t.TempDir(), "other.jsonl")
	w, err = Create(other, map[string]string{"kind": "another header"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		w.Add(map[string]int{"verdict": i})
	}
	w.Close()
	// The one read, with a line changed: no chain.
	tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := os.WriteFile(tampered, bytes.Replace(b, []byte(`"verdict":3`), []byte(`"verdict":4`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, from := range map[string]string{"longer": longer, "shorter": shorter, "another chain": other, "tampered": tampered, "gone": filepath.Join(t.TempDir(), "none")} {
		q := filepath.Join(t.TempDir(), "next.jsonl")
		if _, err := Continue(q, from, read, map[string]string{"kind": "resume"}); err == nil {
			t.Errorf("%s: Continue took a journal other than the one read", name)
		}
		if _, err := os.Stat(q); !os.IsNotExist(err) {
			t.Errorf("%s: a refused Continue left %s (%v)", name, q, err)
		}
	}
	if w, err := Continue(filepath.Join(t.TempDir(), "next.jsonl"), p, read, nil); err != nil {
		t.Fatalf("the journal read does not continue: %v", err)
	} else {
		w.Close()
	}
}

// TestTornTail: a write cut at any byte leaves a journal that reads as
// its whole lines.
func TestTornTail(t *testing.T) {
	_, b := writeJournal(t, 5)
	lines := bytes.Count(b, []byte{'\n'})
	for cut := 0; cut <= len(b); cut++ {
		c, err := collect(bytes.NewReader(b[:cut]))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		whole := bytes.Count(b[:cut], []byte{'\n'})
		if len(c.Entries) != whole || c.Torn != (cut > 0 && b[cut-1] != '\n') || int(c.Valid) != bytes.LastIndexByte(b[:cut], '\n')+1 {
			t.Fatalf("cut at %d: %d entries (torn %v, valid %d), want %d of %d", cut, len(c.Entries), c.Torn, c.Valid, whole, lines)
		}
	}
}

// TestTamperedEntries: a changed, removed, swapped or inserted line
// breaks the chain.
func TestTamperedEntries(t *testing.T) {
	_, b := writeJournal(t, 4)
	ls := strings.SplitAfter(string(b), "\n")
	ls = ls[:len(ls)-1]
	var first Entry
	if err := json.Unmarshal([]byte(ls[0]), &first); err != nil {
		t.Fatal(err)
	}
	// A body not as json.Marshal writes it, hashed as it stands: the chain
	// holds, the line is not the writer's.
	hashedAsIs := func(body string) string {
		return fmt.Sprintf(`{"seq":1,"prev":%q,"body":%s,"hash":%q}`+"\n", first.Hash, body, Hash(1, first.Hash, []byte(body)))
	}
	cases := map[string][]string{
		"body not compact":  {ls[0], hashedAsIs(`{ "verdict":1}`)},
		"body with < as is": {ls[0], hashedAsIs(`{"verdict":"<"}`)},
		"changed body":      append(append([]string{}, ls[:2]...), append([]string{strings.Replace(ls[2], `"verdict":1`, `"verdict":7`, 1)}, ls[3:]...)...),
		"removed":           append(append([]string{}, ls[:2]...), ls[3:]...),
		"swapped":           {ls[0], ls[2], ls[1], ls[3], ls[4]},
		"duplicated":        {ls[0], ls[1], ls[1], ls[2]},
		"unknown key":       {strings.Replace(ls[0], `{"seq"`, `{"x":1,"seq"`, 1)},
		"not JSON":          {ls[0], "garbage\n"},
		// The chain holds where only the line's form differs, since
		// the hash covers seq, prev and body: still not a line the
		// writer writes.
		"keys reordered":    {ls[0], reorder(t, ls[1])},
		"space after colon": {ls[0], strings.Replace(ls[1], `"seq":1`, `"seq": 1`, 1)},
		"carriage return":   {ls[0], strings.TrimSuffix(ls[1], "\n") + "\r\n"},
		"escaped key":       {ls[0], strings.Replace(ls[1], `"seq"`, `"\u0073eq"`, 1)},
		"number as 1.0":     {ls[0], strings.Replace(ls[1], `"seq":1`, `"seq":1.0`, 1)},
	}
	for name, c := range cases {
		if _, err := collect(strings.NewReader(strings.Join(c, ""))); err == nil {
			t.Errorf("%s: the journal was accepted", name)
		}
	}
}

// reorder writes entry line l with its keys in another order (hash, body,
// prev, seq), its chain unchanged.
func reorder(t *testing.T, l string) string {
	t.Helper()
	var e Entry
	if err := json.Unmarshal([]byte(l), &e); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"hash":%q,"body":%s,"prev":%q,"seq":%d}`+"\n", e.Hash, e.Body, e.Prev, e.Seq)
}

// TestScanStops: an error of the caller's stops a scan at that entry and
// names its line.
func TestScanStops(t *testing.T) {
	_, b := writeJournal(t, 5)
	stop := errors.New("enough")
	n := 0
	_, err := Scan(bytes.NewReader(b), func(e Entry) error {
		if n++; e.Seq == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 4 || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("Scan stopped after %d entries with %v; want line 4's error after 4", n, err)
	}
}

func FuzzRead(f *testing.F) {
	_, b := func() (string, []byte) {
		d := f.TempDir()
		p := filepath.Join(d, "j.jsonl")
		w, err := Create(p, "h")
		if err != nil {
			f.Fatal(err)
		}
		w.Add(1)
		w.Close()
		b, _ := os.ReadFile(p)
		return p, b
	}()
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := collect(bytes.NewReader(in))
		if err != nil {
			return
		}
		// The summary says what Scan handed over: its length and head, and
		// a torn tail exactly where bytes follow the valid prefix.
		head := ""
		if len(c.Entries) > 0 {
			head = c.Entries[len(c.Entries)-1].Hash
		}
		if c.Summary.Entries != len(c.Entries) || c.Head != head || c.Torn != (int(c.Valid) < len(in)) {
			t.Fatalf("Scan %+v handed over %d entries ending at %s, of %d bytes", c.Summary, len(c.Entries), head, len(in))
		}
		// What reads is what the writer writes, byte for byte: the
		// entries read, marshalled again, are the valid prefix.
		var back []byte
		for _, e := range c.Entries {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			back = append(append(back, b...), '\n')
		}
		if !bytes.Equal(back, in[:c.Valid]) {
			t.Fatalf("Scan accepted lines the writer would not write:\n%q\nwriter's form:\n%q", in[:c.Valid], back)
		}
		// And it continues into a journal that holds those entries, and
		// reads the same.
		d := t.TempDir()
		from, q := filepath.Join(d, "from.jsonl"), filepath.Join(d, "j.jsonl")
		if err := os.WriteFile(from, in, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := Continue(q, from, c.Summary, nil)
		if err != nil {
			t.Fatalf("entries that read do not continue: %v", err)
		}
		w.Close()
		if got, err := os.ReadFile(q); err != nil || !bytes.Equal(got, back) {
			t.Fatalf("continued journal is not the chain read in the writer's form: %v", err)
		}
		c2 := collectFile(t, q)
		if len(c2.Entries) != len(c.Entries) || c2.Head != c.Head || c2.Torn {
			t.Fatalf("continued journal reads differently: %+v", c2.Summary)
		}
	})
}

// TestFormat: a journal made from the format's definition alone (the
// hash formula in the package comment) reads.
func TestFormat(t *testing.T) {
	c := collectFile(t, filepath.Join("testdata", "format.jsonl"))
	if len(c.Entries) != 3 || c.Torn || string(c.Entries[2].Body) != `{"verdict":1}` {
		t.Fatalf("read %+v", c)
	}
}

// TestHeldWhileWritten: a journal is held from Create to Close, in this
// process and as another process sees it, and free after Close.
func TestHeldWhileWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := Create(p, map[string]string{"type": "header"})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := Held(p); err != nil || !held {
		t.Errorf("Held while a writer is open: %v, %v", held, err)
	}
	if out, err := exec.Command("flock", "--nonblock", "--shared", p, "true").CombinedOutput(); err == nil {
		t.Errorf("another process took the journal's lock while its writer was open (%s)", out)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if held, err := Held(p); err != nil || held {
		t.Errorf("Held after Close: %v, %v", held, err)
	}
	if out, err := exec.Command("flock", "--nonblock", "--shared", p, "true").CombinedOutput(); err != nil {
		t.Errorf("another process could not lock the closed journal: %v (%s)", err, out)
	}
}
