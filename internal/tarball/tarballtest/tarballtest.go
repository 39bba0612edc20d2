// Package tarballtest builds hostile tar files block by block and unpacks
// tar files with the reference tools (GNU tar, bsdtar, Python's tarfile),
// for the tests of every package that reads archives.
package tarballtest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/testenv"
)

// File is one regular file of an archive.
type File struct {
	Name string
	Data []byte
}

// Mtime is the modification time the raw builders write (2023-11-14).
const Mtime = 1700000000

// Block is a raw 512-byte tar header: a ustar block of the POSIX form
// (magic "ustar\x00", version "00") with mode 0644, owner 0, modification
// time Mtime and its checksum computed, as Go's archive/tar writes it.
func Block(name string, typeflag byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], fmt.Sprintf("%011o\x00", Mtime))
	b[156] = typeflag
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	copy(b[329:337], "0000000\x00")
	copy(b[337:345], "0000000\x00")
	return Checksum(b)
}

// Checksum sets the checksum field of header block b (as writers do: six
// octal digits, NUL, space) and returns b.
func Checksum(b []byte) []byte {
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b[:512] {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// Pad returns data padded with zeros to a whole number of blocks.
func Pad(data []byte) []byte {
	return append(slices.Clone(data), make([]byte, (512-len(data)%512)%512)...)
}

// PAX is an extended header of type typeflag ('x' for the next entry, 'g'
// global) holding records, in order, as "key=value" pairs.
func PAX(typeflag byte, records ...string) []byte {
	var body []byte
	for _, r := range records {
		// "%d %s\n": the length counts itself.
		n := len(r) + 3
		for len(fmt.Sprintf("%d %s\n", n, r)) != n {
			n++
		}
		body = fmt.Appendf(body, "%d %s\n", n, r)
	}
	return append(Block("PaxHeaders.0/x", typeflag, int64(len(body))), Pad(body)...)
}

// Entry is a regular file entry in the raw form: its header block, then
// its data padded.
func Entry(name string, data []byte) []byte {
	return append(Block(name, '0', int64(len(data))), Pad(data)...)
}

// End is the end-of-archive marker: two zero blocks.
func End() []byte { return make([]byte, 1024) }

// Smuggle is the attack of a PAX record GNU.sparse.realsize without a
// sparse map: it writes files (each as Entry) and the end marker, but the
// first entry carries GNU.sparse.realsize spanning everything up to that
// marker, and after it come forged (then another marker). Go's
// archive/tar and Python's tarfile ignore the record and stop at the
// first marker, so they read files; GNU tar takes the record as the
// first entry's length and reads forged, which should repeat the first
// file so that it is not left as garbage.
func Smuggle(files, forged []File) []byte {
	var rest []byte
	for _, f := range files[1:] {
		rest = append(rest, Entry(f.Name, f.Data)...)
	}
	rest = append(rest, End()...)
	first := files[0]
	realsize := len(Pad(first.Data)) + len(rest)
	out := PAX('x', fmt.Sprintf("GNU.sparse.realsize=%d", realsize))
	out = append(out, Entry(first.Name, first.Data)...)
	out = append(out, rest...)
	for _, f := range forged {
		out = append(out, Entry(f.Name, f.Data)...)
	}
	return append(out, End()...)
}

// Mutants returns n archives made from base by one random change each:
// a byte flipped or set, header bytes changed with the checksum fixed so
// that the reader looks further, a cut, a block inserted, repeated or
// removed, or bytes appended.
func Mutants(rng *rand.Rand, base []byte, n int) [][]byte {
	var out [][]byte
	for range n {
		b := bytes.Clone(base)
		blocks := len(b) / 512
		blk := rng.IntN(max(blocks, 1)) * 512
		switch rng.IntN(8) {
		case 0:
			b[rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
		case 1:
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		case 2, 3:
			// a header field changed and the checksum recomputed
			if blk+512 <= len(b) {
				off := blk + rng.IntN(512)
				const chars = "0123456789abcdefxyz/.\x00 "
				b[off] = chars[rng.IntN(len(chars))]
				Checksum(b[blk : blk+512])
			}
		case 4:
			b = b[:rng.IntN(len(b))]
		case 5:
			if blk+512 <= len(b) {
				b = append(b[:blk:blk], append(bytes.Clone(b[blk:blk+512]), b[blk:]...)...)
			}
		case 6:
			if blk+512 <= len(b) {
				b = append(b[:blk:blk], b[blk+512:]...)
			}
		case 7:
			b = append(b, Entry("extra", []byte("appended"))...)
		}
		out = append(out, b)
	}
	return out
}

// ReadGo reads every regular file of archive with Go's archive/tar, the
// reader repro's earlier code used, in order; an entry of more than 16
// MiB (a sparse file's holes count) is an error.
func ReadGo(archive []byte) ([]File, error) {
	tr := tar.NewReader(bytes.NewReader(archive))
	var out []File
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b, err := io.ReadAll(io.LimitReader(tr, 16<<20+1))
		if err != nil {
			return out, err
		}
		if len(b) > 16<<20 {
			return out, fmt.Errorf("entry %q: more than 16 MiB", h.Name)
		}
		if h.Typeflag == tar.TypeReg {
			out = append(out, File{h.Name, b})
		}
	}
}

// Tool is a reference unpacker.
type Tool struct {
	Name string
	// Unpack returns the files archive unpacks to, by name; anything else
	// it makes (a link, a device, an empty folder no file needs) or a
	// failure is an error.
	Unpack func(t testing.TB, archive string) (map[string][]byte, error)
}

// pythonLister lists a tar file with Python's tarfile (the stdlib reader
// pip, setuptools and many CI scripts use): every member, its type, and
// the bytes extractfile returns, as JSON.
const pythonLister = `
import base64, json, sys, tarfile
out = []
with tarfile.open(sys.argv[1], "r:") as tf:
    for m in tf:
        d = None
        if m.isreg():
            d = base64.b64encode(tf.extractfile(m).read()).decode()
        out.append({"name": m.name, "type": m.type.decode("latin-1"), "data": d})
print(json.dumps(out))
`

// Tools returns GNU tar, bsdtar and Python's tarfile, failing or skipping
// t (testenv.Missing) when one is missing.
func Tools(t testing.TB) []Tool {
	t.Helper()
	gnu, err := exec.LookPath("tar")
	if err == nil {
		if out, _ := exec.Command(gnu, "--version").Output(); !bytes.Contains(out, []byte("GNU tar")) {
			err = fmt.Errorf("%s is not GNU tar", gnu)
		}
	}
	if err != nil {
		testenv.Missing(t, "GNU tar", "apt-get install tar")
	}
	bsd, err := exec.LookPath("bsdtar")
	if err != nil {
		testenv.Missing(t, "bsdtar", "apt-get install libarchive-tools (scripts/deps.sh)")
	}
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		py, err = exec.LookPath("python3")
	}
	if err != nil {
		testenv.Missing(t, "python3", "apt-get install python3")
	}
	extract := func(prog string, args ...string) func(t testing.TB, archive string) (map[string][]byte, error) {
		return func(t testing.TB, archive string) (map[string][]byte, error) {
			dir := t.TempDir()
			cmd := exec.Command(prog, append(args, "-x", "-f", archive, "-C", dir)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("%v: %s", err, out)
			}
			return readTree(dir)
		}
	}
	return []Tool{
		{"GNU tar", extract(gnu, "--no-same-owner")},
		{"bsdtar", extract(bsd)},
		{"Python tarfile", func(t testing.TB, archive string) (map[string][]byte, error) {
			out, err := exec.Command(py, "-c", pythonLister, archive).Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				return nil, fmt.Errorf("%v: %s", err, stderr)
			}
			var members []struct {
				Name string `json:"name"`
				Type string `json:"type"`
				Data []byte `json:"data"`
			}
			if err := strictjson.DecodeOpen(out, &members); err != nil {
				return nil, err
			}
			files := map[string][]byte{}
			for _, m := range members {
				if m.Type != "0" {
					return nil, fmt.Errorf("member %q has type %q", m.Name, m.Type)
				}
				if _, dup := files[m.Name]; dup {
					return nil, fmt.Errorf("member %q appears twice", m.Name)
				}
				files[m.Name] = m.Data
				if m.Data == nil {
					files[m.Name] = []byte{}
				}
			}
			return files, nil
		}},
	}
}

// readTree returns the regular files under dir by slash path; a link, a
// device or a folder that holds no file is an error.
func readTree(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 && rel != "." {
				return fmt.Errorf("empty folder %q", rel)
			}
			return nil
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			files[rel] = b
			return err
		default:
			return fmt.Errorf("%q is a %v, not a regular file", rel, d.Type())
		}
	})
	return files, err
}

// Agree unpacks archive (a file) with every tool and requires each to give
// exactly want: the same names, the same bytes, nothing else.
func Agree(t testing.TB, archive string, want map[string][]byte) {
	t.Helper()
	for _, tool := range Tools(t) {
		got, err := tool.Unpack(t, archive)
		if err != nil {
			t.Errorf("%s: repro accepts %s, %s does not unpack it: %v", filepath.Base(archive), filepath.Base(archive), tool.Name, err)
			continue
		}
		if diff := Diff(want, got); diff != "" {
			t.Errorf("%s: %s unpacks other bytes than repro read: %s", filepath.Base(archive), tool.Name, diff)
		}
	}
}

// Diff describes how got differs from want ("" when equal).
func Diff(want, got map[string][]byte) string {
	var d []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[n]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%q missing", n))
		case !bytes.Equal(g, want[n]):
			d = append(d, fmt.Sprintf("%q is %.40q, want %.40q", n, g, want[n]))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			d = append(d, fmt.Sprintf("extra %q", n))
		}
	}
	return strings.Join(d, "; ")
}

// SparseEntry is an entry of WriteSparse: Data, or when Data is nil,
// Zeros zero bytes.
type SparseEntry struct {
	Name  string
	Data  []byte
	Zeros int64
}

// WriteSparse writes entries as an archive in repro's form (Go's PAX
// headers, as internal/tarball writes them) at p, a sparse file whose
// zero entries are holes: a bundle of gigabytes in a few KB of disk,
// written in no time.
func WriteSparse(t testing.TB, p string, entries []SparseEntry) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var off int64
	for _, e := range entries {
		size := int64(len(e.Data))
		if e.Data == nil {
			size = e.Zeros
		}
		var hdr bytes.Buffer
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Name, Size: size, Mode: 0o644, ModTime: time.Unix(Mtime, 0).UTC(), Format: tar.FormatPAX}
		if err := tar.NewWriter(&hdr).WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(append(hdr.Bytes(), e.Data...), off); err != nil {
			t.Fatal(err)
		}
		off += int64(hdr.Len()) + size
		off += (BlockSize - off%BlockSize) % BlockSize // zero padding: a hole
	}
	// The end marker: two zero blocks, a hole too.
	if err := f.Truncate(off + 2*BlockSize); err != nil {
		t.Fatal(err)
	}
}

// BlockSize is the tar block size.
const BlockSize = 512

// ProcIO returns the bytes this process has read and written through
// system calls so far (rchar and wchar of /proc/self/io): a test measures
// what a call read and wrote by the difference.
func ProcIO(t testing.TB) (read, written int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "rchar":
			read = n
		case "wchar":
			written = n
		}
	}
	return read, written
}
