package pickle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// TestScanAndConvertFile checks the exit codes ScanFile and ConvertFile
// give what they refuse: a folder or FIFO is exit 2, a missing file 3, a
// file over MaxInputSize or not a pickle 4, a file the profile rejects 1
// (convert writes nothing; scan gives these two as the report's verdict); a missing output folder is exit 3 before the
// input is read; a clean snapshot is scanned clean and converted.
func TestScanAndConvertFile(t *testing.T) {
	dir := t.TempDir()
	edm, err := LookupProfile(ProfileEDMCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := LookupProfile(ProfileTorchStateDict)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join("..", "..", "cmd", "repro", "testdata", "pickle", "snapshot.pkl")
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pkl")
	huge := filepath.Join(dir, "huge.pkl")
	if err := os.WriteFile(junk, []byte("\x03junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxInputSize+1); err != nil { // sparse
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		p    *Profile
		code exitcode.Code
		want string
	}{
		{"a folder", dir, edm, exitcode.Usage, ""},
		{"a FIFO", fifo, edm, exitcode.Usage, ""},
		{"missing", filepath.Join(dir, "nope"), edm, exitcode.Precondition, "cannot open"},
		{"over the limit", huge, edm, exitcode.Integrity, "exceed the limit"},
		{"not a pickle", junk, edm, exitcode.Integrity, "junk.pkl"},
	} {
		rep, serr := ScanFile(c.path, c.p)
		if serr == nil { // a malformed file is the report's verdict
			serr = rep.VerdictError(c.path)
		}
		_, cerr := ConvertFile(c.path, c.p, out)
		for what, err := range map[string]error{"scan": serr, "convert": cerr} {
			if exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v (exit %d), want exit %d naming %q", what, c.name, err, exitcode.Of(err), c.code, c.want)
			}
		}
	}

	rep, err := ScanFile(snapshot, edm)
	if err != nil || rep.Verdict != Clean || rep.VerdictError(snapshot) != nil {
		t.Fatalf("clean snapshot: %v, %+v", err, rep)
	}
	rep, err = ScanFile(snapshot, sd)
	if err != nil || rep.Verdict != Rejected || exitcode.Of(rep.VerdictError(snapshot)) != exitcode.Negative {
		t.Errorf("snapshot against %s: %v, verdict %s, %v", ProfileTorchStateDict, err, rep.Verdict, rep.VerdictError(snapshot))
	}
	if _, err := ConvertFile(snapshot, sd, out); exitcode.Of(err) != exitcode.Negative {
		t.Errorf("convert of a rejected file: %v (exit %d), want exit 1", err, exitcode.Of(err))
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("a rejected file wrote %d files", len(ents))
	}
	if _, err := ConvertFile(filepath.Join(dir, "nope"), edm, filepath.Join(dir, "nodir")); exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "output folder") {
		t.Errorf("a missing output folder: %v", err)
	}
	if _, err := ConvertFile(snapshot, edm, junk); exitcode.Of(err) != exitcode.Precondition || !strings.Contains(err.Error(), "output folder") {
		t.Errorf("an output file: %v", err)
	}
	w, err := ConvertFile(snapshot, edm, out)
	if err != nil || w.Tensors == 0 {
		t.Fatalf("convert: %v %+v", err, w)
	}
	if _, err := os.Stat(filepath.Join(out, "model.safetensors")); err != nil {
		t.Error(err)
	}
	junkRep := ScanBytes([]byte("\x03junk"), edm)
	if exitcode.Of(junkRep.VerdictError("x")) != exitcode.Integrity {
		t.Errorf("a malformed report's verdict: %v", junkRep.VerdictError("x"))
	}
}
