package digest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

func TestParse(t *testing.T) {
	h := strings.Repeat("0f", 32)
	for _, s := range []string{h, "sha256:" + h} {
		d, err := Parse(s)
		if err != nil || d.Hex() != h || d.String() != "sha256:"+h {
			t.Fatalf("Parse(%q) = %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"", h[:63], h + "0", strings.ToUpper(h), strings.Replace(h, "0", "g", 1), "md5:" + h} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestVerifier(t *testing.T) {
	data := []byte("hello, verified world")
	good := Of(data)
	read := func(r io.Reader, size int64, want SHA256) error {
		_, err := io.ReadAll(NewVerifier(r, "x", size, want))
		return err
	}
	if err := read(bytes.NewReader(data), int64(len(data)), good); err != nil {
		t.Fatal(err)
	}
	if err := read(iotest.OneByteReader(bytes.NewReader(data)), int64(len(data)), good); err != nil {
		t.Fatal(err)
	}
	var me *MismatchError
	if err := read(bytes.NewReader(data[:5]), int64(len(data)), good); !errors.As(err, &me) || me.GotSize != 5 {
		t.Fatalf("short: %v", err)
	}
	if err := read(bytes.NewReader(append(data, '!')), int64(len(data)), good); !errors.As(err, &me) || !strings.Contains(err.Error(), "got more") {
		t.Fatalf("long: %v", err)
	}
	bad := bytes.Clone(data)
	bad[0] ^= 1
	if err := read(bytes.NewReader(bad), int64(len(data)), good); !errors.As(err, &me) || me.GotDigest != Of(bad) {
		t.Fatalf("wrong bytes: %v", err)
	}
}

func TestVerifierNeverReturnsPastPin(t *testing.T) {
	data := bytes.Repeat([]byte("a"), 100)
	v := NewVerifier(bytes.NewReader(append(data, bytes.Repeat([]byte("b"), 1000)...)), "x", 100, Of(data))
	got, err := io.ReadAll(v)
	if err == nil || len(got) > 100 {
		t.Fatalf("read %d bytes, err %v", len(got), err)
	}
}

func TestTree(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ignored"), 0o644)
	os.WriteFile(filepath.Join(dir, "a", "b", "f.py"), []byte("print(1)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("a/b/f.py", filepath.Join(dir, "link"))
	m, err := Tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "repro-tree v1\n" +
		"100644 " + Of([]byte("print(1)\n")).Hex() + " a/b/f.py\n" +
		"120000 " + Of([]byte("a/b/f.py")).Hex() + " link\n" +
		"100755 " + Of([]byte("#!/bin/sh\n")).Hex() + " run.sh\n"
	if string(m.Marshal()) != want {
		t.Fatalf("manifest:\n%s\nwant:\n%s", m.Marshal(), want)
	}
	d1 := m.Digest()
	// Changing content, mode or adding a file changes the digest.
	for _, change := range []func(){
		func() { os.WriteFile(filepath.Join(dir, "a", "b", "f.py"), []byte("print(2)\n"), 0o644) },
		func() { os.Chmod(filepath.Join(dir, "a", "b", "f.py"), 0o755) },
		func() { os.WriteFile(filepath.Join(dir, "new"), nil, 0o644) },
	} {
		change()
		m2, err := Tree(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m2.Digest() == d1 {
			t.Fatal("digest unchanged after a change")
		}
		d1 = m2.Digest()
	}
	back, err := ParseManifest(m.Marshal())
	if err != nil || back.Digest() != m.Digest() {
		t.Fatalf("ParseManifest round trip: %v", err)
	}
	// Folder lists the .git folder's files too: the tree's, "new" and .git/HEAD.
	f, err := Folder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != len(m)+2 || f[0].Path != ".git/HEAD" {
		t.Fatalf("Folder lists %+v, want the tree's files and .git/HEAD", f)
	}
}

func TestParseManifestRejects(t *testing.T) {
	h := strings.Repeat("a", 64)
	for name, s := range map[string]string{
		"no header":   "100644 " + h + " a\n",
		"unsorted":    "repro-tree v1\n100644 " + h + " b\n100644 " + h + " a\n",
		"duplicate":   "repro-tree v1\n100644 " + h + " a\n100644 " + h + " a\n",
		"dotdot":      "repro-tree v1\n100644 " + h + " ../a\n",
		"absolute":    "repro-tree v1\n100644 " + h + " /a\n",
		"mode":        "repro-tree v1\n100600 " + h + " a\n",
		"no newline":  "repro-tree v1\n100644 " + h + " a",
		"bad hex":     "repro-tree v1\n100644 " + strings.Repeat("z", 64) + " a\n",
		"control":     "repro-tree v1\n100644 " + h + " a\tb\n",
		"empty line":  "repro-tree v1\n\n",
		"double dash": "repro-tree v1\n100644 " + h + " a//b\n",
	} {
		if _, err := ParseManifest([]byte(s)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	h := strings.Repeat("a", 64)
	f.Add([]byte("repro-tree v1\n"))
	f.Add([]byte("repro-tree v1\n100644 " + h + " a/b.py\n120000 " + h + " c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if !bytes.Equal(m.Marshal(), data) {
			t.Fatalf("manifest is not canonical:\n%q\n%q", data, m.Marshal())
		}
	})
}

func TestHashAndWriter(t *testing.T) {
	data := []byte("the quick brown fox")
	h := NewHash()
	h.Write(data[:4])
	h.Write(data[4:])
	if h.Digest() != Of(data) {
		t.Errorf("Hash.Digest() = %s; want %s", h.Digest(), Of(data))
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write(data)
	if d, n := w.Sum(); d != Of(data) || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("Writer.Sum() = %s, %d (passed on %q); want %s, %d", d, n, buf.Bytes(), Of(data), len(data))
	}
}

// TestNewHMAC: RFC 4231 test case 2, and Reset starts over under the key.
func TestNewHMAC(t *testing.T) {
	h := NewHMAC([]byte("Jefe"))
	for range 2 {
		h.Write([]byte("what do ya want for nothing?"))
		if got := h.Digest().Hex(); got != "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
			t.Fatalf("HMAC-SHA256 %s", got)
		}
		h.Reset()
	}
}

// TestFolderExcept: the files named are neither listed nor read (a FIFO
// among them would block or fail a read), at the top of the folder only;
// the rest is Folder's manifest.
func TestFolderExcept(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"a.txt": "a", "record.json": "{}", "sub/record.json": "x"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := FolderExcept(context.Background(), dir, "record.json", "pipe")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m {
		got = append(got, f.Path)
	}
	if strings.Join(got, " ") != "a.txt sub/record.json" || m[0].SHA256 != Of([]byte("a")) {
		t.Errorf("FolderExcept listed %v", got)
	}
	if _, err := FolderContext(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "pipe") {
		t.Errorf("FolderContext of a folder with a FIFO: %v", err)
	}
}
