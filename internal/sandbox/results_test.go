package sandbox

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
)

type tarEntry struct {
	name, link string
	typ        byte
	body       string
}

func makeTar(t testing.TB, entries ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return buf.Bytes()
}

func TestReadResults(t *testing.T) {
	arch := makeTar(t,
		tarEntry{name: "results/", typ: tar.TypeDir},
		tarEntry{name: "results/ok.json", typ: tar.TypeReg, body: `{"a":1}`},
		tarEntry{name: "results/eval_results.json", typ: tar.TypeSymlink, link: "/etc/shadow"},
		tarEntry{name: "results/fifo", typ: tar.TypeFifo},
		tarEntry{name: "results/dev", typ: tar.TypeChar},
		tarEntry{name: "results/hard", typ: tar.TypeLink, link: "results/ok.json"},
		tarEntry{name: "results/escape", typ: tar.TypeLink, link: "etc/shadow"},
		tarEntry{name: "results/sub/", typ: tar.TypeDir},
		tarEntry{name: "results/sub/x", typ: tar.TypeReg, body: "x"},
		tarEntry{name: "results/../x", typ: tar.TypeReg, body: "x"},
		tarEntry{name: "/abs", typ: tar.TypeReg, body: "x"},
		tarEntry{name: "other/x", typ: tar.TypeReg, body: "x"},
	)
	res, err := readResults(bytes.NewReader(arch), 1024, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 3 || string(res.Files["ok.json"]) != `{"a":1}` || string(res.Files["hard"]) != `{"a":1}` || string(res.Files["sub/x"]) != "x" {
		t.Errorf("files %q", res.Files)
	}
	for _, want := range []string{"eval_results.json: not a regular file (symlink)", "fifo: not a regular file (FIFO)", "dev: not a regular file", "escape: hard link", `"results/../x"`, `"/abs"`, `"other/x"`} {
		found := false
		for _, r := range res.Rejected {
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("%q not rejected: %q", want, res.Rejected)
		}
	}
}

func TestReadResultsCaps(t *testing.T) {
	big := makeTar(t, tarEntry{name: "results/a", typ: tar.TypeReg, body: strings.Repeat("x", 600)},
		tarEntry{name: "results/b", typ: tar.TypeReg, body: strings.Repeat("y", 600)})
	res, err := readResults(bytes.NewReader(big), 1000, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || len(res.Rejected) != 1 {
		t.Errorf("total cap not kept: %d files, rejected %q", len(res.Files), res.Rejected)
	}
	var many []tarEntry
	for i := 0; i < 40; i++ {
		many = append(many, tarEntry{name: "results/f" + strings.Repeat("x", i), typ: tar.TypeReg})
	}
	if _, err := readResults(bytes.NewReader(makeTar(t, many...)), 1000, 32); err == nil {
		t.Error("entry cap not kept")
	}
	// A header claiming a huge file must not allocate it.
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	tw.WriteHeader(&tar.Header{Name: "results/huge", Typeflag: tar.TypeReg, Size: 1 << 40, Mode: 0o644})
	if res, err = readResults(bytes.NewReader(hdr.Bytes()), 1000, 32); err == nil {
		t.Errorf("a truncated archive with a 1 TiB header was accepted: %+v", res)
	}
	if _, err := readResults(bytes.NewReader(make([]byte, 1<<20)), 1000, 32); err != nil {
		// a zero-filled stream is an empty archive for archive/tar
		t.Logf("zero stream: %v", err)
	}
	if _, err := readResults(strings.NewReader(strings.Repeat("garbage", 100000)), 1000, 32); err == nil {
		t.Error("garbage accepted")
	}
}

func FuzzReadResults(f *testing.F) {
	f.Add(makeTar(f, tarEntry{name: "results/", typ: tar.TypeDir}, tarEntry{name: "results/ok", typ: tar.TypeReg, body: "{}"}))
	f.Add(makeTar(f, tarEntry{name: "results/l", typ: tar.TypeSymlink, link: "/etc/shadow"}, tarEntry{name: "results/h", typ: tar.TypeLink, link: "results/l"}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := readResults(bytes.NewReader(b), 4096, 16)
		if err != nil {
			return
		}
		total := 0
		for name, content := range res.Files {
			if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") && strings.Contains("/"+name+"/", "/../") {
				t.Fatalf("bad name %q accepted", name)
			}
			total += len(content)
		}
		if total > 4096 || len(res.Files) > 17 {
			t.Fatalf("caps broken: %d bytes, %d files", total, len(res.Files))
		}
	})
}

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	var in []byte
	in = append(in, frame(1, "out1 ")...)
	in = append(in, frame(2, "err1")...)
	in = append(in, frame(1, "out2")...)
	in = append(in, frame(3, "system")...)
	var out, errb bytes.Buffer
	if err := demux(bytes.NewReader(in), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "out1 out2" || errb.String() != "err1" {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	bad := frame(1, "x")
	bad[0] = 9
	if err := demux(bytes.NewReader(bad), io.Discard, io.Discard); err == nil {
		t.Error("unknown stream accepted")
	}
	huge := []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if err := demux(bytes.NewReader(huge), io.Discard, io.Discard); err == nil {
		t.Error("4 GiB frame accepted")
	}
	if err := demux(bytes.NewReader(frame(1, "truncated")[:10]), io.Discard, io.Discard); err == nil {
		t.Error("truncated frame accepted")
	}
}

func FuzzDemux(f *testing.F) {
	f.Add(append(frame(1, "out"), frame(2, "err")...))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 5, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, errb := newCapBuffer(64, true), newCapBuffer(64, true)
		demux(bytes.NewReader(b), out, errb)
		if len(out.bytes()) > 64 || len(errb.bytes()) > 64 {
			t.Fatal("cap broken")
		}
	})
}

func TestCapBuffer(t *testing.T) {
	b := newCapBuffer(10, false)
	b.Write([]byte("hello "))
	b.Write([]byte("world, and more"))
	if !b.capHit() {
		t.Error("cap not reported")
	}
	b.close()
	got, _ := io.ReadAll(b)
	if string(got) != "hello worl" {
		t.Errorf("read %q", got)
	}
	k := newCapBuffer(100, true)
	k.Write([]byte("abc"))
	io.ReadAll(io.LimitReader(k, 2))
	if string(k.bytes()) != "abc" || k.capHit() {
		t.Errorf("keep mode lost data: %q", k.bytes())
	}
}
