package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/journal"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

const (
	recordFile     = "record.json"
	envelopeFile   = "record.dsse.json"
	maxRecordBytes = 64 << 20
)

// Finish completes rec (finish time, status, the digest of every file in
// the run folder), writes the run's standard attestations (SLSA provenance
// and test result, see ProvenanceFile), record.json and the DSSE envelope
// of its in-toto statement (see PayloadType), all signed with home's run
// key, atomically. exitCode is the code the command exits with.
func (r *Run) Finish(rec *Record, exitCode int) error {
	rec.FinishedAt = time.Now().UTC()
	rec.ExitCode = exitCode
	rec.Status = statusOf(exitCode)
	files, err := folderFiles(context.Background(), r.Dir)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	k, err := LocalKey(r.home)
	if err != nil {
		return fmt.Errorf("run %s: cannot load the run key: %w", r.ID, err)
	}
	files = outputsOf(files)
	att, err := r.writeAttestations(k, rec, files)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	files = append(files, att...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	rec.Files = files
	recordJSON, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	recordJSON = append(recordJSON, '\n')
	payload, err := newStatement(recordJSON, files)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	envBytes, err := signEnvelope(k, PayloadType, payload)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(r.Dir, recordFile), recordJSON, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(r.Dir, envelopeFile), envBytes, 0o644)
}

// folderFiles hashes every regular file under dir except the record files,
// a .git folder's files included (a run folder is not a source tree).
// Anything that is not a regular file or folder is an error.
func folderFiles(ctx context.Context, dir string) ([]File, error) {
	// The record files are read on their own (once: VerifyWithContext),
	// never hashed here.
	m, err := digest.FolderExcept(ctx, dir, recordFile, envelopeFile)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, f := range m {
		if f.Mode == digest.ModeSymlink {
			return nil, fmt.Errorf("run folder holds a symbolic link %s", f.Path)
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: f.Path, SHA256: f.SHA256.Hex(), Size: fi.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Problem is one way a run folder differs from its record.
type Problem struct {
	Path string `json:"path,omitempty"`
	What string `json:"what"`
}

// Verification is the outcome of checking a run against its signed record.
type Verification struct {
	// Record is the run's record (authenticated when Problems is empty).
	Record   *Record
	Problems []Problem
	// Legacy: the record was signed before records became in-toto
	// statements (LegacyPayloadType).
	Legacy bool
	// Key is the trusted key whose signature verified, nil if none.
	Key *trust.Key
	// Attestations are the run's standard attestations that verified
	// (none for runs recorded before they existed).
	Attestations []Attestation
	// Files are the run's files as checked (but record.json and its
	// envelope); RecordSHA256 and EnvelopeSHA256 are the digests of
	// record.json and its envelope.
	Files          map[string]File
	RecordSHA256   string
	EnvelopeSHA256 string
	// BundleSHA256 is the digest of an evidence bundle's bytes as they
	// were read and checked (zero for a run folder).
	BundleSHA256 digest.SHA256
}

// Verify checks the run against its signed record with home's trust file
// (see VerifyWith). A missing trust file is an exitcode.Precondition error.
func (r *Run) Verify() (*Record, []Problem, error) {
	rec, _, err := r.ReadRecord()
	if err != nil {
		return nil, nil, err
	}
	t, err := LoadTrust(r.home, "")
	if err != nil {
		return rec, []Problem{{What: err.Error()}}, err
	}
	v, err := r.VerifyWith(t)
	if v == nil {
		return nil, nil, err
	}
	return v.Record, v.Problems, err
}

// VerifyWith checks that the envelope carries a signature by a key t
// trusts for run records at the signing time the record states, that its
// in-toto statement names record.json and every other file of the run
// folder with the digests they have now and no others, and that
// record.json holds the signed predicate. The error is an
// exitcode.Integrity error naming every problem when there is any.
func (r *Run) VerifyWith(t *trust.File) (*Verification, error) {
	return r.VerifyWithContext(context.Background(), t)
}

// VerifyWithContext is VerifyWith that stops within one read of a file
// (at most 1 MiB) once ctx is done (Ctrl-C, SIGTERM), with an
// Interrupted error and no verification.
func (r *Run) VerifyWithContext(ctx context.Context, t *trust.File) (*Verification, error) {
	recordJSON, err := safefile.ReadFile(filepath.Join(r.Dir, recordFile), maxRecordBytes)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "run %s: cannot read its record: %v", r.ID, err)
	}
	ev := evidence{name: "run " + r.ID, record: recordJSON}
	ev.envelope, ev.envelopeErr = safefile.ReadFile(filepath.Join(r.Dir, envelopeFile), 2*maxRecordBytes)
	files, err := folderFiles(ctx, r.Dir)
	if ctx.Err() != nil {
		return nil, Interrupted(ctx, "run "+r.ID)
	}
	if err != nil {
		ev.problems = append(ev.problems, Problem{What: err.Error()})
	}
	ev.files = map[string]File{}
	for _, f := range files {
		ev.files[f.Path] = f
	}
	ev.attestations = map[string][]byte{}
	for _, n := range []string{ProvenanceFile, TestResultFile} {
		if b, err := safefile.ReadFile(filepath.Join(r.Dir, n), maxRecordBytes); err == nil {
			ev.attestations[n] = b
		}
	}
	if _, ok := ev.files[JournalFile]; ok {
		ev.problems = append(ev.problems, checkJournal(filepath.Join(r.Dir, JournalFile), recordJSON)...)
	}
	return ev.check(t)
}

// Interrupted is the error of a check of what (a run or a bundle) that
// ctx ended before it was done (a signal): exit 1, nothing verified.
func Interrupted(ctx context.Context, what string) error {
	return exitcode.Errorf(exitcode.Negative, "interrupted (%v) while checking %s: nothing verified, nothing written", context.Cause(ctx), what)
}

// JournalFile is the name of a run's verdict journal (internal/journal),
// which a workload that resumes keeps in its folder.
const JournalFile = "journal.jsonl"

// checkJournal checks a run's journal: an intact chain to its last line,
// whose head and length are those the record states (extra.journal), when
// it states them. It holds one entry at a time.
func checkJournal(path string, recordJSON []byte) []Problem {
	c, err := journal.ScanFile(path, func(journal.Entry) error { return nil })
	if err != nil {
		return []Problem{{Path: JournalFile, What: err.Error()}}
	}
	if c.Torn {
		return []Problem{{Path: JournalFile, What: "the last entry is incomplete"}}
	}
	var rec struct {
		Extra struct {
			Journal *struct {
				Head    string `json:"head_sha256"`
				Entries int    `json:"entries"`
			} `json:"journal"`
		} `json:"extra"`
	}
	if err := strictjson.DecodeOpen(recordJSON, &rec); err != nil || rec.Extra.Journal == nil {
		return nil
	}
	if j := rec.Extra.Journal; j.Head != c.Head || j.Entries != c.Entries {
		return []Problem{{Path: JournalFile, What: fmt.Sprintf("the chain ends at entry %d with %.16s, the record says %d and %.16s", c.Entries, c.Head, j.Entries, j.Head)}}
	}
	return nil
}

// evidence is what a run's check reads, from a run folder or a bundle.
type evidence struct {
	name        string // "run <id>" or "bundle <path>", for messages
	record      []byte
	envelope    []byte
	envelopeErr error
	// files are the run's files other than record.json and its envelope.
	files    map[string]File
	problems []Problem // found while gathering
	// attestations holds the bytes of the standard attestation files
	// present (ProvenanceFile, TestResultFile).
	attestations map[string][]byte
}

func (ev *evidence) check(t *trust.File) (*Verification, error) {
	rec, err := decodeRecord(ev.record)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "%s: record is not valid JSON: %v", ev.name, err)
	}
	v := &Verification{Record: rec, Problems: ev.problems, Files: ev.files, RecordSHA256: digest.Of(ev.record).Hex()}
	if ev.envelope != nil {
		v.EnvelopeSHA256 = digest.Of(ev.envelope).Hex()
	}
	// want maps each file the signed payload names (but the record) to
	// its digest; nil when nothing could be authenticated.
	var want map[string]File
	switch env, payload, err := ev.decodeEnvelope(); {
	case err != nil:
		v.add(envelopeFile, "%v", err)
	case env.PayloadType == PayloadType:
		st, err := parseStatement(payload)
		if err != nil {
			v.add(envelopeFile, "%v", err)
			break
		}
		signedAt, err := predicateTime(st.predicate)
		if err != nil {
			v.add(envelopeFile, "%v", err)
			break
		}
		if v.Key, err = verifyTrusted(t, env, trust.RunRecords, signedAt); err != nil {
			v.add(envelopeFile, "%v", err)
			break
		}
		if h := st.subjects[recordFile]; h != digest.Of(ev.record).Hex() {
			v.add(recordFile, "differs from the signed statement: signed sha256 %s, now %s", h, digest.Of(ev.record).Hex())
		} else if !st.samePredicate(ev.record) {
			v.add(recordFile, "differs from the signed predicate")
		}
		want = map[string]File{}
		for _, n := range st.names() {
			if n != recordFile {
				want[n] = File{Path: n, SHA256: st.subjects[n], Size: -1}
			}
		}
		if _, ok := st.subjects[recordFile]; !ok {
			v.add(recordFile, "the signed statement does not name record.json")
		}
		v.checkAttestations(t, attestationCheck{record: rec, signed: st.subjects, read: func(n string) []byte { return ev.attestations[n] }, at: signedAt})
	case env.PayloadType == LegacyPayloadType:
		v.Legacy = true
		if !bytes.Equal(payload, ev.record) {
			v.add(recordFile, "differs from the signed payload")
			break
		}
		if v.Key, err = verifyTrusted(t, env, trust.RunRecords, rec.FinishedAt); err != nil {
			v.add(envelopeFile, "%v", err)
			break
		}
		want = map[string]File{}
		for _, f := range rec.Files {
			want[f.Path] = f
		}
	default:
		v.add(envelopeFile, "signature envelope has payload type %q, want %q", env.PayloadType, PayloadType)
	}
	if want != nil {
		for _, p := range sortedPaths(ev.files) {
			f := ev.files[p]
			w, ok := want[p]
			switch {
			case !ok:
				v.add(p, "file not in the signed record")
			case w.SHA256 != f.SHA256 || w.Size >= 0 && w.Size != f.Size:
				v.add(p, "content changed: signed sha256 %s, now %s (%d bytes)", w.SHA256, f.SHA256, f.Size)
			}
			delete(want, p)
		}
		for p := range want {
			v.add(p, "signed file is missing")
		}
	}
	return v, v.verdict(ev.name)
}

// add records a problem with the file at path.
func (v *Verification) add(path, format string, args ...any) {
	v.Problems = append(v.Problems, Problem{Path: path, What: fmt.Sprintf(format, args...)})
}

// verdict sorts v.Problems by path and returns nil when there are none,
// else an exitcode.Integrity error that names the evidence (name) and
// lists every problem.
func (v *Verification) verdict(name string) error {
	sort.SliceStable(v.Problems, func(i, j int) bool { return v.Problems[i].Path < v.Problems[j].Path })
	if len(v.Problems) == 0 {
		return nil
	}
	var parts []string
	for _, p := range v.Problems {
		parts = append(parts, strings.TrimPrefix(p.Path+": "+p.What, ": "))
	}
	return exitcode.Errorf(exitcode.Integrity, "%s does not match its signed record: %s", name, strings.Join(parts, "; "))
}

func (ev *evidence) decodeEnvelope() (*dsse.Envelope, []byte, error) {
	if ev.envelopeErr != nil {
		return nil, nil, fmt.Errorf("missing or unreadable signature envelope: %v", ev.envelopeErr)
	}
	if ev.envelope == nil {
		return nil, nil, errors.New("missing signature envelope")
	}
	return decodeEnvelope(ev.envelope, "")
}

// predicateTime is the signing time a run statement states: the record's
// finished_at.
func predicateTime(pred map[string]any) (time.Time, error) {
	s, _ := pred["finished_at"].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("the signed record has no valid finished_at: %q", s)
	}
	return t, nil
}

func sortedPaths(m map[string]File) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
