package reproduce

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"github.com/reprolab/repro/internal/trust"
)

// Reproduction is a reproduction of a submission as a board shows it:
// read from a reproduction run that verified against the local run key.
type Reproduction struct {
	RunID      string    `json:"run_id"`
	FinishedAt time.Time `json:"finished_at"`
	// Verdicts, Agree and Differences are as in the run's OutputFile.
	Verdicts    int       `json:"verdicts"`
	Agree       int       `json:"agree"`
	Agrees      bool      `json:"agrees"`
	Differences []Verdict `json:"differences"`
	// DatasetDifference names a difference of the dataset itself.
	DatasetDifference string     `json:"dataset_difference,omitempty"`
	Submission        Submission `json:"submission"`
}

// maxShown is how many differences Text names.
const maxShown = 3

// Text is the reproduction in a line: "re-executed: 3 of 3 verdicts
// agree", or the tally and the first differences, each with both
// measurements where it is a time-limit case.
func (r *Reproduction) Text() string {
	if r.Agrees {
		return fmt.Sprintf("re-executed: %d of %d verdicts agree", r.Agree, r.Verdicts)
	}
	s := fmt.Sprintf("re-executed: %d of %d verdicts agree", r.Agree, r.Verdicts)
	var parts []string
	if r.DatasetDifference != "" {
		parts = append(parts, r.DatasetDifference)
	}
	for i, d := range r.Differences {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(r.Differences)-maxShown))
			break
		}
		parts = append(parts, d.String())
	}
	if len(parts) > 0 {
		s += "; differs: " + strings.Join(parts, "; ")
	}
	return s
}

// maxOutputFile bounds a reproduction's OutputFile read (one line per
// verdict of a run whose samples file is at most 64 MiB).
const maxOutputFile = 256 << 20

// Latest returns the newest reproduction of run submissionRunID made on
// this machine: a run of kind Kind under home, not imported, that
// verifies against home's own run key (keys/run-signing.pub; one made
// under a key rotated out since does not count), that completed its
// comparison, and whose submission is the run of that id in home (the
// same record.json, and, for an imported run, signed by the key it was
// imported with). A reproduction that does not verify is passed over.
// It returns nil, nil when there is none.
func Latest(home, submissionRunID string) (*Reproduction, error) {
	return LatestOf(home, submissionRunID, "")
}

// LatestOf is Latest for a run whose record.json the caller has just read
// (the board, which verifies it): recordSHA256 is the SHA-256 of those
// bytes, so that the record is not read again. An empty recordSHA256
// reads it, as Latest does.
func LatestOf(home, submissionRunID, recordSHA256 string) (*Reproduction, error) {
	if !runs.ValidID(submissionRunID) {
		return nil, nil
	}
	local, err := localTrust(home)
	if err != nil || local == nil {
		return nil, err
	}
	want, err := submissionFacts(home, submissionRunID, recordSHA256)
	if err != nil {
		return nil, err
	}
	ids, err := runs.List(home)
	if err != nil {
		return nil, err
	}
	// Newest first, by the finish time the records state (only a run
	// that verifies against the local key counts, so none can claim one
	// to hide another).
	type candidate struct {
		id       string
		finished time.Time
	}
	var cands []candidate
	for _, id := range ids {
		if !strings.HasPrefix(id, Kind+"-") {
			continue
		}
		if fin, ok := names(home, id, want); ok {
			cands = append(cands, candidate{id, fin})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].finished.Equal(cands[j].finished) {
			return cands[i].finished.After(cands[j].finished)
		}
		return cands[i].id > cands[j].id
	})
	for _, c := range cands {
		if r, err := read(home, c.id, want, local); err == nil {
			return r, nil
		}
	}
	return nil, nil
}

// submitted is what a reproduction must name of the run in home.
type submitted struct {
	id           string
	recordSHA256 string // "" when home has no run of that id
	keyID        string // "" unless the run was imported
}

// matches reports whether s is the submission: the run's record.json
// and, for an imported run, the key it was imported with; by its id only
// where home has no such run. The folder's name is not compared, so a
// run keeps its reproductions whatever folder holds it.
func (w submitted) matches(s Submission) bool {
	if w.recordSHA256 == "" {
		return s.RunID == w.id
	}
	return s.RecordSHA256 == w.recordSHA256 && (w.keyID == "" || s.SignerKeyID == w.keyID)
}

func submissionFacts(home, id, recordSHA256 string) (submitted, error) {
	s := submitted{id: id, recordSHA256: recordSHA256}
	if s.recordSHA256 == "" {
		b, err := safefile.ReadFile(runs.RecordPath(home, id), runs.MaxRecordBytes)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return s, nil
		case err != nil:
			return s, err
		}
		s.recordSHA256 = digest.Of(b).Hex()
	}
	t, ok, err := runimport.Trust(home, id)
	if err != nil {
		return s, err
	}
	if ok {
		s.keyID = t.Keys[0].ID
	}
	return s, nil
}

// LocalKeyID is the key id of home's own run key, "" when it has none
// or it cannot be read.
func LocalKeyID(home string) string {
	t, err := localTrust(home)
	if err != nil || t == nil {
		return ""
	}
	return t.Keys[0].ID
}

// localTrust is a trust file of home's own run key alone; nil when home
// has none.
func localTrust(home string) (*trust.File, error) {
	b, err := safefile.ReadFile(runs.LocalPublicKeyPath(home), 1<<16)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pub, err := keys.ParsePublic(b)
	if err != nil {
		return nil, fmt.Errorf("the local run key %q: %v", runs.LocalPublicKeyPath(home), err)
	}
	return &trust.File{Version: trust.Version, Keys: []trust.Key{trust.NewKey(runs.LocalKeyName, pub, []trust.Purpose{trust.RunRecords}, nil, nil)}}, nil
}

// names reports whether run id of home is, by its record (not yet
// verified), a reproduction of sub, and when it finished.
func names(home, id string, sub submitted) (time.Time, bool) {
	r, err := runs.Open(home, id)
	if err != nil || r.ID != id {
		return time.Time{}, false
	}
	rec, _, err := r.ReadRecord()
	if err != nil || rec.Kind != Kind || rec.ID != id {
		return time.Time{}, false
	}
	var head struct {
		Reproduction *struct {
			Submission Submission `json:"submission"`
		} `json:"reproduction"`
	}
	raw, err := jsonOf(rec.Extra)
	if err != nil || strictjson.DecodeOpen(raw, &head) != nil || head.Reproduction == nil || !sub.matches(head.Reproduction.Submission) {
		return time.Time{}, false
	}
	return rec.FinishedAt, true
}

// read reads reproduction run id of home when it is a reproduction of
// sub that verifies against local and completed its comparison.
func read(home, id string, sub submitted, local *trust.File) (*Reproduction, error) {
	r, err := runs.Open(home, id)
	if err != nil || r.ID != id {
		return nil, errNotReproduction
	}
	if _, imported, err := runimport.Trust(home, id); err != nil || imported {
		return nil, errNotReproduction
	}
	v, err := r.VerifyWith(local)
	if err != nil || v.Record.ID != id || (v.Record.Status != "ok" && v.Record.Status != "negative") {
		return nil, errNotReproduction
	}
	f, ok := v.Files[OutputFile]
	if !ok {
		return nil, errNotReproduction
	}
	b, err := safefile.ReadFile(filepath.Join(r.Dir, OutputFile), maxOutputFile)
	if err != nil || digest.Of(b).Hex() != f.SHA256 {
		return nil, errNotReproduction
	}
	var res Result
	if err := strictjson.DecodeOpen(b, &res); err != nil || res.Schema != Schema || res.RunID != id || !sub.matches(res.Submission) {
		return nil, errNotReproduction
	}
	// The outcome is what the comparison says, whatever the file claims.
	agrees := res.Comparison.Agrees()
	if agrees != (v.Record.Status == "ok") {
		return nil, errNotReproduction
	}
	return &Reproduction{RunID: id, FinishedAt: v.Record.FinishedAt, Verdicts: res.Verdicts, Agree: res.Agree, Agrees: agrees,
		Differences: res.Differences, DatasetDifference: res.Dataset, Submission: res.Submission}, nil
}

// errNotReproduction marks a run that is not a verified reproduction of
// the run asked about.
var errNotReproduction = errors.New("not a verified reproduction of that run")
