package runs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/tarball"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
	"github.com/reprolab/repro/internal/trust"
)

// TestSmuggledBundleIsRefused is the attack of a PAX record
// GNU.sparse.realsize without a sparse map: Go's archive/tar ignores it
// and stops at the first end marker, GNU tar takes it as the first
// entry's length and then extracts entries appended after the marker. The
// control shows GNU tar unpacking a forged results.json from the bundle;
// repro must refuse the bundle, naming the record.
func TestSmuggledBundleIsRefused(t *testing.T) {
	bundle, trustPath := exportedBundle(t)
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"pass":0}`)
	var evil []tarballtest.File
	for _, f := range files {
		if f.Name == "run/results.json" {
			f.Data = forged
		}
		evil = append(evil, f)
	}
	attack := filepath.Join(t.TempDir(), "attack.tar")
	if err := os.WriteFile(attack, tarballtest.Smuggle(files, evil), 0o644); err != nil {
		t.Fatal(err)
	}
	gnu := tarballtest.Tools(t)[0]
	got, err := gnu.Unpack(t, attack)
	if err != nil || string(got["run/results.json"]) != string(forged) {
		t.Fatalf("control: GNU tar does not unpack the forged results.json (%v, %q): the attack is not what it claims", err, got["run/results.json"])
	}
	tf, err := trust.Load(trustPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyBundle(attack, tf)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "GNU.sparse.realsize") {
		t.Fatalf("a bundle that GNU tar unpacks to a forged results.json: %v, want exit 4 naming GNU.sparse.realsize", err)
	}
}

// variedRun is a finished run whose files have every shape the tar form
// encodes differently: a nested folder, a long and a non-ASCII name, an
// empty file, a .git folder, data across block boundaries.
func variedRun(t *testing.T) (string, *Run) {
	t.Helper()
	home := t.TempDir()
	r, err := Create(home, "humaneval")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"eval_results.json":                       `{"pass":1}`,
		"workspace/samples.jsonl":                 "x\n",
		"workspace/" + strings.Repeat("long", 40): "a name past 100 bytes",
		"harness/résumé.py":                       "print(1)\n",
		"empty":                                   "",
		".git/HEAD":                               "ref: refs/heads/main\n",
		"blocks":                                  strings.Repeat("b", 1537),
	} {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finish(r.NewRecord("test"), 0); err != nil {
		t.Fatal(err)
	}
	return home, r
}

// readFolder returns the regular files under dir by slash path.
func readFolder(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			t.Errorf("%s is not a regular file", p)
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExtractBundleWritesTheVerifiedBytes: --extract leaves the run's
// files, signer.pub and nothing else, byte for byte the run folder's; a
// bundle that does not verify leaves nothing.
func TestExtractBundleWritesTheVerifiedBytes(t *testing.T) {
	home, r := variedRun(t)
	bundle := filepath.Join(t.TempDir(), "run.tar")
	if _, err := Export(home, r.ID, bundle); err != nil {
		t.Fatal(err)
	}
	tf, err := LoadTrust(home, "")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	v, err := ExtractBundle(bundle, tf, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := readFolder(t, dir)
	want := readFolder(t, r.Dir)
	for n, b := range want {
		if !bytes.Equal(got["run/"+n], b) {
			t.Errorf("run/%s: extracted %.40q, the run folder holds %.40q", n, got["run/"+n], b)
		}
		delete(got, "run/"+n)
	}
	if pub := got[bundlePub]; len(pub) == 0 || len(got) != 1 {
		t.Errorf("extracted besides the run folder: %v", slices.Collect(maps.Keys(got)))
	}
	if len(v.Record.Files) != len(want)-2 {
		t.Errorf("verification lists %d files", len(v.Record.Files))
	}
	// An empty folder may be the target; a non-empty one may not.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := ExtractBundle(bundle, tf, empty); err != nil {
		t.Fatalf("into an empty folder: %v", err)
	}
	if _, err := ExtractBundle(bundle, tf, dir); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("into a folder that holds files: %v, want exit 2", err)
	}

	raw, _ := os.ReadFile(bundle)
	files, _ := tarballtest.ReadGo(raw)
	var evil []tarballtest.File
	for _, f := range files {
		if f.Name == "run/eval_results.json" {
			f.Data = []byte(`{"pass":0}`)
		}
		evil = append(evil, f)
	}
	tampered := slices.Clone(raw)
	for i := range tampered {
		if bytes.HasPrefix(tampered[i:], []byte(`{"pass":1}`)) {
			tampered[i+9] = '2'
		}
	}
	for name, b := range map[string][]byte{"smuggled": tarballtest.Smuggle(files, evil), "tampered": tampered} {
		p := filepath.Join(t.TempDir(), name+".tar")
		os.WriteFile(p, b, 0o644)
		out := filepath.Join(parent, name)
		if _, err := ExtractBundle(p, tf, out); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("%s bundle: %v, want exit 4", name, err)
		}
		if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s bundle: %s exists after a refusal", name, out)
		}
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 2 {
		t.Errorf("the parent folder holds %d entries, want out and empty only", len(ents))
	}
}

// TestAcceptedBundlesUnpackAlike is the differential test of bundles:
// every bundle 'runs verify --bundle' accepts (repro's exports of varied
// runs, and mutants of them) unpacks with GNU tar, bsdtar and Python's
// tarfile to exactly the bytes ExtractBundle wrote, which are the bytes
// repro verified.
func TestAcceptedBundlesUnpackAlike(t *testing.T) {
	tarballtest.Tools(t)
	corpus := map[string][]byte{}
	var trustFiles []*trust.File
	for i, mk := range []func(*testing.T) (string, *Run){finishedRun, variedRun} {
		home, r := mk(t)
		p := filepath.Join(t.TempDir(), "run.tar")
		if _, err := Export(home, r.ID, p); err != nil {
			t.Fatal(err)
		}
		tf, err := LoadTrust(home, "")
		if err != nil {
			t.Fatal(err)
		}
		trustFiles = append(trustFiles, tf)
		raw, _ := os.ReadFile(p)
		corpus[fmt.Sprintf("%d/export", i)] = raw
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		for j, m := range tarballtest.Mutants(rng, raw, 150) {
			corpus[fmt.Sprintf("%d/mutant-%d", i, j)] = m
		}
		// Mutants that still verify: another modification time in one
		// header (checksum fixed), or a record of zero padding.
		for j, off := range headerOffsets(t, raw) {
			m := slices.Clone(raw)
			copy(m[off+136:], fmt.Sprintf("%011o\x00", rng.Int64N(1<<33)))
			tarballtest.Checksum(m[off : off+512])
			corpus[fmt.Sprintf("%d/mtime-%d", i, j)] = m
		}
		corpus[fmt.Sprintf("%d/padded", i)] = append(slices.Clone(raw), make([]byte, 10240)...)
	}
	dir := t.TempDir()
	accepted := 0
	for name, b := range corpus {
		p := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".tar")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tf := trustFiles[name[0]-'0']
		out := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".d")
		if _, err := ExtractBundle(p, tf, out); err != nil {
			if strings.HasSuffix(name, "/export") {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		accepted++
		tarballtest.Agree(t, p, readFolder(t, out))
	}
	if accepted < 12 {
		t.Fatalf("only %d bundles verify: the differential needs more", accepted)
	}
	t.Logf("%d of %d bundles verify, each unpacked alike by GNU tar, bsdtar and Python's tarfile", accepted, len(corpus))
}

// headerOffsets are the offsets of the ustar header blocks of archive.
func headerOffsets(t *testing.T, archive []byte) []int {
	t.Helper()
	r := tarball.NewReader(bytes.NewReader(archive), bundleLimits)
	var out []int
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int(r.Offset())-512)
	}
}

// TestSparseBundleIsRefusedUnread: a bundle whose results.json is a PAX
// sparse entry of 1 GiB of holes in a few KB. Go's archive/tar expands
// the holes, so the old reader hashed 1 GiB of zeros (and 64 GiB an
// entry at its bound) before anything else; the entry is now refused
// from its header, naming the sparse record.
func TestSparseBundleIsRefusedUnread(t *testing.T) {
	bundle, trustPath := exportedBundle(t)
	raw, _ := os.ReadFile(bundle)
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, f := range files {
		if f.Name == "run/results.json" {
			b = append(b, tarballtest.PAX('x', "GNU.sparse.major=1", "GNU.sparse.minor=0", "GNU.sparse.name="+f.Name, "GNU.sparse.realsize=1073741824")...)
			// the map block, then the one byte of data after the hole
			b = append(b, tarballtest.Block("run/GNUSparseFile.0/results.json", '0', 513)...)
			b = append(b, tarballtest.Pad([]byte("1\n1073741823\n1\n"))...)
			b = append(b, tarballtest.Pad([]byte("}"))...)
			continue
		}
		b = append(b, tarballtest.Entry(f.Name, f.Data)...)
	}
	p := filepath.Join(t.TempDir(), "sparse.tar")
	os.WriteFile(p, append(b, tarballtest.End()...), 0o644)
	tf, err := trust.Load(trustPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyBundle(p, tf)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "PAX record GNU.sparse.") {
		t.Fatalf("a sparse bundle: %v, want exit 4 naming its sparse record", err)
	}
}

// TestBundleBombIsRefusedUnread: a signed bundle with a GiB entry, a few
// KB on disk, made the old reader read, hash and write the whole entry
// before it refused the bundle (64 GiB an entry at its bound). Each entry
// is now refused from its header: one the signed record does not name,
// one larger than the record states, and any bundle whose record is not
// first (or whose record does not verify). The bytes read and written
// are measured by the kernel's count for this process.
func TestBundleBombIsRefusedUnread(t *testing.T) {
	bundle, trustPath := exportedBundle(t)
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := trust.Load(trustPath)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := keys.Generate()
	untrusted := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("other", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	const huge = 1 << 30
	with := func(edit func(es []tarballtest.SparseEntry) []tarballtest.SparseEntry) []tarballtest.SparseEntry {
		var es []tarballtest.SparseEntry
		for _, f := range files {
			es = append(es, tarballtest.SparseEntry{Name: f.Name, Data: f.Data})
		}
		return edit(es)
	}
	for _, tc := range []struct {
		name, want string
		trust      *trust.File
		entries    []tarballtest.SparseEntry
	}{
		{"an entry the record does not name", `run/padding.bin: file not in the signed record (refused before reading it)`, tf, with(func(es []tarballtest.SparseEntry) []tarballtest.SparseEntry {
			return slices.Insert(es, 2, tarballtest.SparseEntry{Name: "run/padding.bin", Zeros: huge})
		})},
		{"a named entry larger than the record says", `"run/results.json" is 1073741824 bytes, more than the`, tf, with(func(es []tarballtest.SparseEntry) []tarballtest.SparseEntry {
			for i := range es {
				if es[i].Name == "run/results.json" {
					es[i] = tarballtest.SparseEntry{Name: es[i].Name, Zeros: huge}
				}
			}
			return es
		})},
		{"the record after the entries", `entry "run/padding.bin" comes where run/record.json must`, tf, with(func(es []tarballtest.SparseEntry) []tarballtest.SparseEntry {
			return append([]tarballtest.SparseEntry{{Name: "run/padding.bin", Zeros: huge}}, es...)
		})},
		{"a record no trusted key signed", "not read past its record", untrusted, with(func(es []tarballtest.SparseEntry) []tarballtest.SparseEntry {
			return slices.Insert(es, 2, tarballtest.SparseEntry{Name: "run/padding.bin", Zeros: huge})
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bomb.tar")
			tarballtest.WriteSparse(t, p, tc.entries)
			fi, err := os.Stat(p)
			if err != nil || fi.Size() < huge {
				t.Fatalf("the bomb is not what it claims: %v %v", fi.Size(), err)
			}
			out := filepath.Join(t.TempDir(), "extracted")
			r0, w0 := tarballtest.ProcIO(t)
			_, err = ExtractBundle(p, tc.trust, out)
			r1, w1 := tarballtest.ProcIO(t)
			if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("a bundle of a %d-byte entry: %v, want exit 4 naming %q", int64(huge), err, tc.want)
			}
			// The record and envelope, a few blocks, and one buffer of
			// read-ahead (1 MiB) are read; nothing of the entry is written.
			read, written := r1-r0, w1-w0
			t.Logf("refused after reading %d bytes and writing %d", read, written)
			if read > 4<<20 || written > 1<<20 {
				t.Fatalf("refusing a bundle of a %d-byte entry read %d bytes and wrote %d", int64(huge), read, written)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the refused bundle left %s: %v", out, err)
			}
		})
	}
}
