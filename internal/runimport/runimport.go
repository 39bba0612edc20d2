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
// An imported run is kept under an id of its own, runs.ImportedID: the id
// its record names with the first 16 hex digits of its signer's key id
// before the time (humaneval-d7ae11cb0b116572-20261201T225716Z-cd830285),
// so that no signer can take the id of another's run, whatever id its
// record names; Import prints it, and `repro runs show/verify/export`
// take it (or a unique prefix) like any run id.
//
// The trusted key that signed the run is kept in its import record,
// REPRO_HOME/imports/<id>.json. Trust returns it as a one-key trust file,
// and later checks of the run (report, serve, runs verify) use it, so a
// key accepted for an import is trusted for the runs imported with it,
// never for the home's own runs. The import record is as much a part of
// the maintainer's trust as REPRO_HOME/trust.json is.
package runimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	Schema string `json:"schema"`
	// RunID is the run's id in this REPRO_HOME (runs.ImportedID);
	// OriginalID the id its record names (empty in import records made
	// before runs were kept under ids of their own: then RunID).
	RunID        string    `json:"run_id"`
	OriginalID   string    `json:"original_id,omitempty"`
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
	// RunID is the run's id in this REPRO_HOME, OriginalID the id its
	// record names.
	RunID      string `json:"id"`
	OriginalID string `json:"original_id"`
	Kind       string `json:"kind"`
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

// betweenChecks lets a test change the staged run folder (or the
// bundle) after the bundle verified.
var betweenChecks = func(string) {}

// Import adds the run in the evidence bundle at bundle to home, checked
// against t (read from trustPath, named in the import record). The bundle
// is read once, by the bundle reader that checks it, and the staged run
// folder is checked again before it moves in. A bundle that does not
// verify, a run id held by another run, and a staged folder that does not
// verify are exitcode.Integrity errors; an
// unreadable bundle path is a usage error. Nothing is left in home unless
// the run was imported.
func Import(home, bundle string, t *trust.File, trustPath string) (*Result, error) {
	return ImportContext(context.Background(), home, bundle, t, trustPath)
}

// ImportContext is Import that stops within one read (at most 1 MiB) once
// ctx is done (Ctrl-C, SIGTERM), with a runs.Interrupted error, leaving
// nothing in home.
func ImportContext(ctx context.Context, home, bundle string, t *trust.File, trustPath string) (*Result, error) {
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
	// One pass over the bundle: the bytes that verify are the bytes that
	// are kept, so a bundle changed afterwards changes nothing here.
	extracted := filepath.Join(staging, "bundle")
	v, err := runs.ExtractBundleContext(ctx, bundle, t, extracted)
	if err != nil {
		return nil, err
	}
	orig := v.Record.ID
	if !runs.ValidID(orig) {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: its record names run %q, which is not a run id", bundle, orig)
	}
	id, err := runs.ImportedID(orig, v.Key.ID)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "bundle %q: %v", bundle, err)
	}
	res := &Result{RunID: id, OriginalID: orig, Kind: v.Record.Kind, Files: len(v.Record.Files)}
	res.Key.Name, res.Key.ID = v.Key.Name, v.Key.ID
	dir := layout.Home(staging).Run(id)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(extracted, bundleRunDir), dir); err != nil {
		return nil, fmt.Errorf("cannot stage run %s of bundle %q: %v", id, bundle, err)
	}
	betweenChecks(dir)
	// The staged folder is checked again as a run folder, the way every
	// later runs verify will read it.
	staged, err := runs.Open(staging, id)
	if err != nil {
		return nil, err
	}
	v2, err := staged.VerifyWithContext(ctx, t)
	if ctx.Err() != nil {
		return nil, runs.Interrupted(ctx, fmt.Sprintf("bundle %q", bundle))
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s of bundle %q does not verify as a run folder: %v", id, bundle, err)
	}
	if v2.Record.ID != orig || v2.Key == nil || v2.Key.ID != v.Key.ID {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s of bundle %q does not verify as a run folder: it holds another run or another signature", id, bundle)
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
	rec, err := importRecord(id, orig, bundle, v.BundleSHA256, trustPath, v2.Key)
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

// bundleRunDir is the folder of an evidence bundle that holds the run.
const bundleRunDir = "run"

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

// importRecord is the import record of run id, keeping key for run
// records only.
func importRecord(id, orig, bundle string, sum digest.SHA256, trustPath string, key *trust.Key) ([]byte, error) {
	k := trust.NewKey(key.Name, key.Public(), []trust.Purpose{trust.RunRecords}, key.NotBefore, key.NotAfter)
	tb, err := json.Marshal(trust.File{Version: trust.Version, Keys: []trust.Key{k}})
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(bundle)
	if err != nil {
		abs = bundle
	}
	b, err := json.MarshalIndent(Record{Schema: Schema, RunID: id, OriginalID: orig, Bundle: abs, BundleSHA256: sum.Hex(), TrustFile: trustPath,
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
	t, raw, _, ok, err = readImport(home, id)
	return t, raw, ok, err
}

// readImport reads the import record of run id: its key as a trust file
// and that file's bytes, and the run id the run's record must name.
func readImport(home, id string) (t *trust.File, raw []byte, orig string, ok bool, err error) {
	rec, p, ok, err := readRecord(home, id)
	if !ok || err != nil {
		return nil, nil, "", ok, err
	}
	if t, err = trust.Parse(rec.Trust); err != nil {
		return nil, nil, "", true, fmt.Errorf("import record %q: %v", p, err)
	}
	if len(t.Keys) != 1 || len(t.For(trust.RunRecords)) != 1 {
		return nil, nil, "", true, fmt.Errorf("import record %q does not name one key for run records", p)
	}
	orig = rec.OriginalID
	if orig == "" {
		orig = id
	}
	if o, k, imported := runs.SplitImportedID(id); orig != id && (!imported || o != orig || !strings.HasPrefix(t.Keys[0].ID, k)) {
		return nil, nil, "", true, fmt.Errorf("import record %q names run %q signed by key %s, which is not what run id %s carries", p, orig, t.Keys[0].ID, id)
	}
	return t, rec.Trust, orig, true, nil
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

// BundleSHA256 returns the hex SHA-256 of the bundle run id of home was
// imported from; ok is false for a run that was not imported. An import
// record that cannot be read is an error.
func BundleSHA256(home, id string) (sum string, ok bool, err error) {
	rec, _, ok, err := readRecord(home, id)
	if !ok || err != nil {
		return "", ok, err
	}
	return rec.BundleSHA256, true, nil
}

// readRecord reads and checks the import record of run id of home and
// returns it with its path; ok is false for a run that was not imported.
func readRecord(home, id string) (rec *Record, p string, ok bool, err error) {
	if !runs.ValidID(id) {
		return nil, "", false, nil
	}
	p = layout.Home(home).ImportRecord(id)
	b, err := safefile.ReadFile(p, maxRecordFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, p, false, nil
	}
	if err != nil {
		return nil, p, true, fmt.Errorf("import record %q: %v", p, err)
	}
	rec = new(Record)
	if err := strictjson.Decode(b, rec); err != nil {
		return nil, p, true, fmt.Errorf("import record %q: %v", p, err)
	}
	if rec.Schema != Schema || rec.RunID != id {
		return nil, p, true, fmt.Errorf("import record %q is not the import record of run %s", p, id)
	}
	return rec, p, true, nil
}

// RecordID is the run id the record of run id of home must name: the id
// its import record names for an imported run (whose id carries its
// signer's key id, runs.ImportedID), else id itself. A run kept under an
// imported run's form of id without an import record, or whose import
// record cannot be read, must name id itself (and so does not verify).
func RecordID(home, id string) string {
	_, _, orig, ok, err := readImport(home, id)
	if !ok || err != nil {
		return id
	}
	return orig
}
