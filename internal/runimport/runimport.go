// Package runimport adds runs scored elsewhere to a REPRO_HOME, so that a
// leaderboard can show submitted runs beside local ones, with who signed
// each.
//
// Import takes an evidence bundle (`repro runs export`) and a trust file
// the maintainer chose. The bundle is checked exactly as `repro runs
// verify --bundle` checks it (runs.VerifyBundle); then the run's files
// (only those its verified record names, at most their recorded sizes)
// are unpacked into a staging folder under REPRO_HOME/imports, the staged
// folder is checked again as a run folder (runs.VerifyWith, the same
// trust file, the same signing key), and only then is it moved, whole,
// into REPRO_HOME/runs/<id>. A bundle that changes between the two checks
// thus cannot bring in anything the second did not verify.
//
// The trusted key that signed the run is kept in its import record,
// REPRO_HOME/imports/<id>.json. Trust returns it as a one-key trust file,
// and later checks of the run (report, serve, runs verify) use it, so a
// key accepted for an import is trusted for the runs imported with it,
// never for the home's own runs. The import record is as much a part of
// the maintainer's trust as REPRO_HOME/trust.json is.
package runimport

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"golang.org/x/sys/unix"
)

// Schema names the format of an import record.
const Schema = "repro.import/v1"

// maxRecordFile bounds an import record read.
const maxRecordFile = 1 << 20

// Record is an import record: which bundle a run came from and the key it
// was accepted with.
type Record struct {
	Schema       string    `json:"schema"`
	RunID        string    `json:"run_id"`
	Bundle       string    `json:"bundle"`
	BundleSHA256 string    `json:"bundle_sha256"`
	TrustFile    string    `json:"trust_file"`
	ImportedAt   time.Time `json:"imported_at"`
	// Trust is a trust file holding only the key that signed the run, as
	// the maintainer's trust file listed it (for run records).
	Trust json.RawMessage `json:"trust"`
}

// Result is what Import did with one bundle.
type Result struct {
	RunID string `json:"id"`
	Kind  string `json:"kind"`
	// Key is the trusted key that signed the run.
	Key struct {
		Name string `json:"name"`
		ID   string `json:"key_id"`
	} `json:"key"`
	Files int `json:"files"`
	// Already: the same run (the same record.json) was in REPRO_HOME;
	// nothing changed.
	Already bool `json:"already"`
}

// betweenChecks lets a test change the bundle after its first check.
var betweenChecks = func(string) {}

// Import adds the run in the evidence bundle at bundle to home, checked
// against t (read from trustPath, named in the import record). A bundle
// that does not verify, a run id held by another run, and any change of
// the bundle between the checks are exitcode.Integrity errors; an
// unreadable bundle path is a usage error. Nothing is left in home unless
// the run was imported.
func Import(home, bundle string, t *trust.File, trustPath string) (*Result, error) {
	v, err := runs.VerifyBundle(bundle, t)
	if err != nil {
		return nil, err
	}
	betweenChecks(bundle)
	id := v.Record.ID
	if !runs.ValidID(id) {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: its record names run %q, which is not a run id", bundle, id)
	}
	res := &Result{RunID: id, Kind: v.Record.Kind, Files: len(v.Record.Files)}
	res.Key.Name, res.Key.ID = v.Key.Name, v.Key.ID
	h := layout.Home(home)
	if err := os.MkdirAll(h.Imports(), 0o700); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create %q: %v", h.Imports(), err)
	}
	if err := os.MkdirAll(h.Runs(), 0o700); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create %q: %v", h.Runs(), err)
	}
	staging, err := os.MkdirTemp(h.Imports(), ".staging-")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create a staging folder in %q: %v", h.Imports(), err)
	}
	defer os.RemoveAll(staging)
	dir := layout.Home(staging).Run(id)
	sum, err := unpack(bundle, dir, v.Record)
	if err != nil {
		return nil, err
	}
	staged, err := runs.Open(staging, id)
	if err != nil {
		return nil, err
	}
	v2, err := staged.VerifyWith(t)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q changed while it was imported: %v", bundle, err)
	}
	if v2.Record.ID != id || v2.Key == nil || v2.Key.ID != v.Key.ID {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q changed while it was imported: it now holds another run or another signature", bundle)
	}
	stagedRecord, err := safefile.ReadFile(runs.RecordPath(staging, id), runs.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	if have, err := safefile.ReadFile(runs.RecordPath(home, id), runs.MaxRecordBytes); err == nil {
		if digest.Of(have) == digest.Of(stagedRecord) {
			res.Already = true
			return res, nil
		}
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q holds run %s, but another run with that id is in %q; not importing it", bundle, id, h.Runs())
	} else if _, serr := os.Lstat(h.Run(id)); serr == nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q holds run %s, but %q exists and is not that run; not importing it", bundle, id, h.Run(id))
	}
	rec, err := importRecord(id, bundle, sum, trustPath, v2.Key)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(h.ImportRecord(id), rec, 0o644); err != nil {
		return nil, fmt.Errorf("cannot write the import record of run %s: %w", id, err)
	}
	// The run folder appears whole, or not at all, and never over another.
	if err := moveNew(dir, h.Run(id)); err != nil {
		os.Remove(h.ImportRecord(id))
		return nil, fmt.Errorf("cannot move run %s into %q: %v", id, h.Runs(), err)
	}
	if err := atomicfile.SyncDir(h.Runs()); err != nil {
		return nil, err
	}
	return res, nil
}

// unpack writes the run files of the bundle at p into dir: record.json,
// its envelope, and the files rec names, each at most its recorded size;
// other bundle entries (signer.pub, the image's SBOM and scan) are passed
// over, and an entry under run/ that rec does not name, a duplicate, or
// anything but a regular file is refused. It returns the SHA-256 of the
// bundle as read.
func unpack(p, dir string, rec *runs.Record) (digest.SHA256, error) {
	want := map[string]int64{runs.RecordFile: runs.MaxRecordBytes, envelopeFile: 2 * runs.MaxRecordBytes}
	for _, f := range rec.Files {
		want[f.Path] = f.Size
	}
	f, err := safefile.OpenNamed(p)
	if err != nil {
		return digest.SHA256{}, exitcode.Errorf(exitcode.Usage, "cannot read bundle %q: %v", p, err)
	}
	defer f.Close()
	bad := func(format string, args ...any) (digest.SHA256, error) {
		return digest.SHA256{}, exitcode.Errorf(exitcode.Integrity, "bundle %q changed while it was imported: "+format, append([]any{p}, args...)...)
	}
	dr := digest.NewReader(f)
	tr := tar.NewReader(dr)
	seen := map[string]bool{}
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bad("not a readable tar file: %v", err)
		}
		if hd.Typeflag == tar.TypeDir {
			continue
		}
		rel, inRun := strings.CutPrefix(hd.Name, "run/")
		if !inRun {
			continue
		}
		max, ok := want[rel]
		switch {
		case hd.Typeflag != tar.TypeReg:
			return bad("entry %q is not a regular file", hd.Name)
		case !ok || !local(rel):
			return bad("entry %q is not a file of the verified record", hd.Name)
		case seen[rel]:
			return bad("entry %q appears twice", hd.Name)
		case hd.Size < 0 || hd.Size > max:
			return bad("entry %q is %d bytes, the record names %d", hd.Name, hd.Size, max)
		}
		seen[rel] = true
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), tr, hd.Size); err != nil {
			return digest.SHA256{}, fmt.Errorf("cannot unpack %q of bundle %q: %w", hd.Name, p, err)
		}
	}
	if _, err := io.Copy(io.Discard, dr); err != nil {
		return bad("%v", err)
	}
	sum, _ := dr.Sum()
	return sum, nil
}

// moveNew renames the folder from to to, which must not exist; where the
// file system cannot rename without replacing, it checks first.
func moveNew(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if _, err := os.Lstat(to); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%q exists", to)
	}
	return os.Rename(from, to)
}

// envelopeFile is the name of a run's signature envelope.
const envelopeFile = "record.dsse.json"

// local reports whether rel is a clean relative slash path that stays in
// its folder.
func local(rel string) bool {
	return rel != "" && path.Clean(rel) == rel && filepath.IsLocal(filepath.FromSlash(rel)) && !strings.Contains(rel, `\`)
}

// writeFile creates p (a new file, in folders it makes) with exactly n
// bytes from r, synced.
func writeFile(p string, r io.Reader, n int64) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if got, err := io.CopyN(f, r, n); err != nil || got != n {
		f.Close()
		return fmt.Errorf("truncated (%d of %d bytes): %v", got, n, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// importRecord is the import record of run id, keeping key for run
// records only.
func importRecord(id, bundle string, sum digest.SHA256, trustPath string, key *trust.Key) ([]byte, error) {
	k := trust.NewKey(key.Name, key.Public(), []trust.Purpose{trust.RunRecords}, key.NotBefore, key.NotAfter)
	tb, err := json.Marshal(trust.File{Version: trust.Version, Keys: []trust.Key{k}})
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(bundle)
	if err != nil {
		abs = bundle
	}
	b, err := json.MarshalIndent(Record{Schema: Schema, RunID: id, Bundle: abs, BundleSHA256: sum.Hex(), TrustFile: trustPath,
		ImportedAt: time.Now().UTC(), Trust: tb}, "", "  ")
	return append(b, '\n'), err
}

// Trust returns the trust file that checks run id of home when the run
// was imported: the key its import record names. ok is false for a run
// that was not imported (no import record). An import record that cannot
// be read or does not hold a valid key is an error: such a run does not
// verify.
func Trust(home, id string) (t *trust.File, ok bool, err error) {
	t, _, ok, err = trustOf(home, id)
	return t, ok, err
}

// trustOf is Trust that also returns the trust file's bytes as the import
// record holds them.
func trustOf(home, id string) (t *trust.File, raw []byte, ok bool, err error) {
	if !runs.ValidID(id) {
		return nil, nil, false, nil
	}
	p := layout.Home(home).ImportRecord(id)
	b, err := safefile.ReadFile(p, maxRecordFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, true, fmt.Errorf("import record %q: %v", p, err)
	}
	var rec Record
	if err := strictjson.Decode(b, &rec); err != nil {
		return nil, nil, true, fmt.Errorf("import record %q: %v", p, err)
	}
	if rec.Schema != Schema || rec.RunID != id {
		return nil, nil, true, fmt.Errorf("import record %q is not the import record of run %s", p, id)
	}
	if t, err = trust.Parse(rec.Trust); err != nil {
		return nil, nil, true, fmt.Errorf("import record %q: %v", p, err)
	}
	if len(t.Keys) != 1 || len(t.For(trust.RunRecords)) != 1 {
		return nil, nil, true, fmt.Errorf("import record %q does not name one key for run records", p)
	}
	return t, rec.Trust, true, nil
}

// LoadTrust is the trust file that checks run id of home: its import
// record's key when it was imported, else home's trust file (see
// runs.LoadTrust).
func LoadTrust(home, id string) (*trust.File, error) {
	t, _, err := LoadTrustBytes(home, id)
	return t, err
}

// LoadTrustBytes is LoadTrust that also returns the trust file's bytes
// (the import record's one-key trust file for an imported run).
func LoadTrustBytes(home, id string) (*trust.File, []byte, error) {
	t, raw, ok, err := trustOf(home, id)
	if ok || err != nil {
		if err != nil {
			return nil, nil, exitcode.New(exitcode.Integrity, err)
		}
		return t, raw, nil
	}
	return runs.LoadTrustBytes(home, "")
}
