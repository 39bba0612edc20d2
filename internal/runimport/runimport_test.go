package runimport

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/runs/runstest"
	"github.com/reprolab/repro/internal/tarball/tarballtest"
	"github.com/reprolab/repro/internal/trust"
)

// submission makes a run in a home of its own (the submitter's), exports
// it as a bundle and returns the bundle, a trust file naming the
// submitter's key "lab-a", and the id the run gets when imported
// (runs.ImportedID).
func submission(t *testing.T) (bundle string, tf *trust.File, id string) {
	t.Helper()
	bundle, tf, _, id = submissionIn(t, t.TempDir(), "lab-a")
	return bundle, tf, id
}

// submissionIn is submission from the lab home lab, with the key named
// name; it also returns the id the run's record names.
func submissionIn(t *testing.T, lab, name string) (bundle string, tf *trust.File, orig, id string) {
	t.Helper()
	orig = runstest.HumanEvalRun(t, lab, []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", FailingInput: `[1]`, Reason: "AssertionError"}},
		runstest.HumanEvalOptions{Label: "model-a"})
	return bundleOf(t, lab, orig, name)
}

// bundleOf exports run orig of lab and returns the bundle, a trust file
// naming lab's key name, and the id the run gets when imported.
func bundleOf(t *testing.T, lab, orig, name string) (bundle string, tf *trust.File, _, id string) {
	t.Helper()
	bundle = filepath.Join(t.TempDir(), name+".tar")
	if _, err := runs.Export(lab, orig, bundle); err != nil {
		t.Fatal(err)
	}
	k, err := runs.LocalKey(lab)
	if err != nil {
		t.Fatal(err)
	}
	tf = &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey(name, k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
	id, err = runs.ImportedID(orig, tf.Keys[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return bundle, tf, orig, id
}

// maintainer is a home with a run of its own (so it has its own key and
// trust file).
func maintainer(t *testing.T) string {
	home := t.TempDir()
	runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: "HumanEval/0", Pass: true}}, runstest.HumanEvalOptions{Label: "local"})
	return home
}

// nothingLeft checks that a refused import left no run folder, no import
// record and no staging folder.
func nothingLeft(t *testing.T, home, id string) {
	t.Helper()
	if _, err := os.Lstat(layout.Home(home).Run(id)); err == nil {
		t.Errorf("a refused bundle left run folder %s", id)
	}
	if _, err := os.Lstat(layout.Home(home).ImportRecord(id)); err == nil {
		t.Errorf("a refused bundle left an import record")
	}
	ents, _ := os.ReadDir(layout.Home(home).Imports())
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".staging-") {
			t.Errorf("a staging folder was left: %s", e.Name())
		}
	}
}

func TestImport(t *testing.T) {
	bundle, tf, id := submission(t)
	home := maintainer(t)
	res, err := Import(home, bundle, tf, "lab-a.json")
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != id || res.Key.Name != "lab-a" || res.Already || res.Files != 3 { // the output file and its two standard attestations
		t.Errorf("result %+v", res)
	}
	run, err := runs.Open(home, id)
	if err != nil {
		t.Fatal(err)
	}
	// The run verifies with the key it was imported with, and not with
	// the home's own trust file: the submitter's key is trusted for its
	// runs only.
	it, ok, err := Trust(home, id)
	if err != nil || !ok || it.Keys[0].Name != "lab-a" {
		t.Fatalf("Trust: %v %v %v", it, ok, err)
	}
	if v, err := run.VerifyWith(it); err != nil || v.Key.Name != "lab-a" {
		t.Errorf("imported run does not verify with its import key: %v", err)
	}
	if _, _, err := run.Verify(); exitcode.Of(err) != exitcode.Integrity {
		t.Errorf("imported run verifies with the home's trust file: %v", err)
	}
	if _, err := runstest.IndependentVerify(t, run.Dir, writeKey(t, it)); err != nil {
		t.Errorf("the independent verifier refuses the imported run: %v", err)
	}
	all, _ := runs.List(home)
	for _, other := range all {
		if _, ok, _ := Trust(home, other); ok != (other == id) {
			t.Errorf("run %s: import record %v", other, ok)
		}
	}
	again, err := Import(home, bundle, tf, "lab-a.json")
	if err != nil || !again.Already {
		t.Errorf("importing again: %+v %v", again, err)
	}
	var rec Record
	b, _ := os.ReadFile(layout.Home(home).ImportRecord(id))
	if err := json.Unmarshal(b, &rec); err != nil || rec.RunID != id || len(rec.BundleSHA256) != 64 || rec.TrustFile != "lab-a.json" || !filepath.IsAbs(rec.Bundle) {
		t.Errorf("import record %s: %v", b, err)
	}
}

func writeKey(t *testing.T, tf *trust.File) string {
	p := filepath.Join(t.TempDir(), "key.pub")
	os.WriteFile(p, []byte(tf.Keys[0].PublicKey), 0o644)
	return p
}

// TestImportRefuses: a bundle that does not verify, one signed by a key
// the trust file lacks, and one whose run id another run holds are not
// imported, and leave nothing behind.
func TestImportRefuses(t *testing.T) {
	t.Run("tampered", func(t *testing.T) {
		bundle, tf, id := submission(t)
		rewrite(t, bundle, func(h *tar.Header, data []byte) []byte {
			if h.Name == "run/eval_results.json" {
				return bytes.Replace(data, []byte(`"fail"`), []byte(`"pass"`), 1)
			}
			return data
		})
		home := maintainer(t)
		if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("tampered bundle: %v", err)
		}
		nothingLeft(t, home, id)
	})
	t.Run("untrusted signer", func(t *testing.T) {
		bundle, _, id := submission(t)
		other, _ := keys.Generate()
		tf := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("other", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
		home := maintainer(t)
		if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "not signed by a trusted key") {
			t.Errorf("untrusted signer: %v", err)
		}
		nothingLeft(t, home, id)
	})
	t.Run("id taken", func(t *testing.T) {
		bundle, tf, id := submission(t)
		home := maintainer(t)
		dir := layout.Home(home).Run(id)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "record.json"), []byte(`{"id": "`+id+`"}`), 0o644)
		if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "another run with that id") {
			t.Errorf("id held by another run: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "record.json")); !strings.Contains(string(b), `{"id"`) {
			t.Errorf("the run already there was changed")
		}
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o700) // an empty folder of that name: rename would replace it
		if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("id held by an empty folder: %v", err)
		}
	})
	t.Run("record names no run id", func(t *testing.T) {
		lab := t.TempDir()
		r, err := runs.Create(lab, "humaneval")
		if err != nil {
			t.Fatal(err)
		}
		rec := r.NewRecord("test")
		rec.ID = "../../../escaped"
		if err := r.Finish(rec, 0); err != nil {
			t.Fatal(err)
		}
		bundle := filepath.Join(t.TempDir(), "b.tar")
		if _, err := runs.Export(lab, r.ID, bundle); err != nil {
			t.Fatal(err)
		}
		k, _ := runs.LocalKey(lab)
		tf := &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("lab", k.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}}
		home := maintainer(t)
		if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "not a run id") {
			t.Errorf("record with a path for an id: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(home, "..", "escaped")); err == nil {
			t.Errorf("the import wrote outside the home")
		}
	})
}

// TestBundleChangedAfterItVerified: the bundle is read once, so a bundle
// swapped after it verified (same names and sizes, other bytes) changes
// nothing: the run imported is the run that verified.
func TestBundleChangedAfterItVerified(t *testing.T) {
	bundle, tf, id := submission(t)
	want, err := runs.VerifyBundle(bundle, tf)
	if err != nil {
		t.Fatal(err)
	}
	home := maintainer(t)
	betweenChecks = func(string) {
		rewrite(t, bundle, func(h *tar.Header, d []byte) []byte {
			if h.Name == "run/eval_results.json" {
				return bytes.Replace(d, []byte(`"fail"`), []byte(`"pass"`), 1)
			}
			return d
		})
	}
	defer func() { betweenChecks = func(string) {} }()
	if _, err := Import(home, bundle, tf, "t.json"); err != nil {
		t.Fatalf("import: %v", err)
	}
	r, err := runs.Open(home, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.VerifyWith(tf)
	if err != nil {
		t.Fatalf("the imported run does not verify: %v", err)
	}
	if got.Files["eval_results.json"] != want.Files["eval_results.json"] {
		t.Errorf("imported eval_results.json is %+v, the bundle that verified held %+v", got.Files["eval_results.json"], want.Files["eval_results.json"])
	}
	if _, err := runs.VerifyBundle(bundle, tf); err == nil {
		t.Fatal("the rewritten bundle still verifies: the test changed nothing")
	}
}

// TestStagedRunIsCheckedAgain: the staged run folder is verified as a run
// folder before it moves in; one changed there is refused and nothing is
// imported.
func TestStagedRunIsCheckedAgain(t *testing.T) {
	for name, change := range map[string]func(dir string) error{
		"a changed file": func(dir string) error {
			p := filepath.Join(dir, "eval_results.json")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, bytes.Replace(b, []byte(`"fail"`), []byte(`"pass"`), 1), 0o644)
		},
		"an extra file": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "extra.py"), []byte("x"), 0o644)
		},
		"a missing file": func(dir string) error { return os.Remove(filepath.Join(dir, "eval_results.json")) },
	} {
		t.Run(name, func(t *testing.T) {
			bundle, tf, id := submission(t)
			home := maintainer(t)
			betweenChecks = func(dir string) {
				if err := change(dir); err != nil {
					t.Fatal(err)
				}
			}
			defer func() { betweenChecks = func(string) {} }()
			if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), "does not verify as a run folder") {
				t.Errorf("staged folder with %s: %v", name, err)
			}
			nothingLeft(t, home, id)
		})
	}
}

// TestImportTakesOnlyTheVerifiedFiles: a bundle with more than its record
// names, a path out of its folder, a longer file, a link or a duplicate
// is refused by the one reader that checks it, and nothing is imported.
func TestImportTakesOnlyTheVerifiedFiles(t *testing.T) {
	for name, tc := range map[string]struct {
		entry tar.Header
		data  string
	}{
		"a file the record does not name": {tar.Header{Typeflag: tar.TypeReg, Name: "run/extra.py"}, "x"},
		"a path out of the folder":        {tar.Header{Typeflag: tar.TypeReg, Name: "run/../../x"}, "x"},
		"a larger file":                   {tar.Header{Typeflag: tar.TypeReg, Name: "run/eval_results.json"}, strings.Repeat("x", 1<<16)},
		"a symbolic link":                 {tar.Header{Typeflag: tar.TypeSymlink, Name: "run/eval_results.json", Linkname: "/etc/passwd"}, ""},
		"a duplicate":                     {tar.Header{Typeflag: tar.TypeReg, Name: "run/record.json"}, "{}"},
	} {
		t.Run(name, func(t *testing.T) {
			bundle, tf, id := submission(t)
			if name == "a larger file" {
				rewrite(t, bundle, func(h *tar.Header, d []byte) []byte {
					if h.Name == tc.entry.Name {
						return append(d, tc.data...)
					}
					return d
				})
			} else {
				rewrite(t, bundle, func(_ *tar.Header, d []byte) []byte { return d }, entry{tc.entry, tc.data})
			}
			home := maintainer(t)
			if _, err := Import(home, bundle, tf, "t.json"); exitcode.Of(err) != exitcode.Integrity {
				t.Errorf("bundle with %s: %v", name, err)
			}
			nothingLeft(t, home, id)
			if _, err := os.Lstat(filepath.Join(home, "..", "x")); err == nil {
				t.Errorf("the import wrote outside its home")
			}
		})
	}
}

// TestTamperedImportRecord: an import record that names another key, or
// cannot be read, makes the run fail to verify.
func TestTamperedImportRecord(t *testing.T) {
	bundle, tf, id := submission(t)
	home := maintainer(t)
	if _, err := Import(home, bundle, tf, "t.json"); err != nil {
		t.Fatal(err)
	}
	p := layout.Home(home).ImportRecord(id)
	var rec Record
	b, _ := os.ReadFile(p)
	json.Unmarshal(b, &rec)
	other, _ := keys.Generate()
	tb, _ := json.Marshal(trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey("lab-a", other.PublicKey(), []trust.Purpose{trust.RunRecords}, nil, nil)}})
	rec.Trust = tb
	b, _ = json.Marshal(rec)
	os.WriteFile(p, b, 0o644)
	run, _ := runs.Open(home, id)
	// The key swapped in is not the one the run's id names: the import
	// record is refused, and were it not, the signature would be.
	if it, err := LoadTrust(home, id); exitcode.Of(err) != exitcode.Integrity {
		if _, err := run.VerifyWith(it); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("a run verifies with a key swapped into its import record: %v", err)
		}
	}
	for _, bad := range []string{"{", `{"schema": "repro.import/v1", "run_id": "other"}`, `{"schema": "repro.import/v1", "run_id": "` + id + `", "trust": {"version": 1, "keys": []}}`} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := LoadTrust(home, id); exitcode.Of(err) != exitcode.Integrity {
			t.Errorf("import record %s: %v, want an integrity error", bad, err)
		}
	}
}

// entry is a tar member rewrite appends.
type entry struct {
	hdr  tar.Header
	data string
}

// rewrite rewrites the tar file at p, passing each member's content
// through edit, then appends add.
func rewrite(t *testing.T, p string, edit func(*tar.Header, []byte) []byte, add ...entry) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		data = edit(h, data)
		h.Size = int64(len(data))
		tw.WriteHeader(h)
		tw.Write(data)
	}
	for _, e := range add {
		h := e.hdr
		h.Size, h.Mode = int64(len(e.data)), 0o644
		tw.WriteHeader(&h)
		tw.Write([]byte(e.data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportOfABombIsBounded: a signed bundle with a GiB entry its record
// does not name, a few KB on disk, made import read, hash and write the
// whole entry into its staging folder before it refused the bundle. Now
// the entry is refused from its header: the kernel's count of the bytes
// this process read and wrote stays near the size of the record.
func TestImportOfABombIsBounded(t *testing.T) {
	bundle, tf, id := submission(t)
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tarballtest.ReadGo(raw)
	if err != nil {
		t.Fatal(err)
	}
	var entries []tarballtest.SparseEntry
	for i, f := range files {
		if i == 2 {
			entries = append(entries, tarballtest.SparseEntry{Name: "run/padding.bin", Zeros: 1 << 30})
		}
		entries = append(entries, tarballtest.SparseEntry{Name: f.Name, Data: f.Data})
	}
	bomb := filepath.Join(t.TempDir(), "bomb.tar")
	tarballtest.WriteSparse(t, bomb, entries)
	home := maintainer(t)
	r0, w0 := tarballtest.ProcIO(t)
	_, err = Import(home, bomb, tf, "t.json")
	r1, w1 := tarballtest.ProcIO(t)
	if exitcode.Of(err) != exitcode.Integrity || !strings.Contains(err.Error(), `run/padding.bin: file not in the signed record (refused before reading it)`) {
		t.Fatalf("a bundle with a GiB entry its record does not name: %v", err)
	}
	t.Logf("refused after reading %d bytes and writing %d", r1-r0, w1-w0)
	if r1-r0 > 4<<20 || w1-w0 > 1<<20 {
		t.Fatalf("refusing the bundle read %d bytes and wrote %d", r1-r0, w1-w0)
	}
	nothingLeft(t, home, id)
}

// TestImportIDsBelongToSigners: lab B learns the id of lab A's run, signs
// a run of its own whose record names that id and imports it first; lab
// A's genuine bundle is still imported, under an id of its own, and each
// run verifies with its own signer's key only. The same bundle imported
// again is "already here".
func TestImportIDsBelongToSigners(t *testing.T) {
	genuine, tfA, orig, idA := submissionIn(t, t.TempDir(), "lab-a")
	labB := t.TempDir()
	squat := runstest.HumanEvalRun(t, labB, []runstest.Sample{{Task: "HumanEval/0", Pass: true}, {Task: "HumanEval/1", Pass: true}}, runstest.HumanEvalOptions{Label: "model-a"})
	r, err := runs.Open(labB, squat)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := r.ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	rec.ID = orig // lab A's run id, in a record lab B signs
	if err := r.Finish(rec, 0); err != nil {
		t.Fatal(err)
	}
	squatBundle, tfB, _, _ := bundleOf(t, labB, squat, "lab-b")
	idB, _ := runs.ImportedID(orig, tfB.Keys[0].ID)
	tf := &trust.File{Version: trust.Version, Keys: []trust.Key{tfA.Keys[0], tfB.Keys[0]}}
	home := maintainer(t)
	first, err := Import(home, squatBundle, tf, "t.json")
	if err != nil || first.RunID != idB || first.OriginalID != orig || first.Key.Name != "lab-b" {
		t.Fatalf("lab B's import: %+v %v", first, err)
	}
	second, err := Import(home, genuine, tf, "t.json")
	if err != nil || second.RunID != idA || second.OriginalID != orig || second.Key.Name != "lab-a" || second.Already {
		t.Fatalf("lab A's genuine bundle after lab B's: %+v %v", second, err)
	}
	if idA == idB {
		t.Fatalf("both runs have id %s", idA)
	}
	for id, name := range map[string]string{idA: "lab-a", idB: "lab-b"} {
		run, err := runs.Open(home, id)
		if err != nil {
			t.Fatal(err)
		}
		it, err := LoadTrust(home, id)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := run.VerifyWith(it); err != nil || v.Key.Name != name || v.Record.ID != orig || RecordID(home, id) != orig {
			t.Errorf("run %s: %v %v", id, v, err)
		}
	}
	if again, err := Import(home, genuine, tf, "t.json"); err != nil || !again.Already || again.RunID != idA {
		t.Errorf("lab A's bundle again: %+v %v", again, err)
	}
	// A folder of an imported run's form without its import record names
	// the id it must hold: itself.
	if RecordID(home, "humaneval-0123456789abcdef-20261201T225716Z-cd830285") != "humaneval-0123456789abcdef-20261201T225716Z-cd830285" {
		t.Errorf("RecordID of a run that was not imported")
	}
}
