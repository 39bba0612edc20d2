package runindex

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
)

// Statuses of runs whose record says nothing: StatusIncomplete for a
// folder without record.json (the run is in progress, or ended without
// writing it), StatusUnreadable for a record that cannot be read or
// decoded, or that names another run.
const (
	StatusIncomplete = "incomplete"
	StatusUnreadable = "unreadable"
)

// Bounds on what one record may put into the index; a record is untrusted
// input, and past these the rest is left out.
const (
	maxField  = 200 // bytes of a kind, status, input name or problem
	maxInputs = 256 // inputs of one run
)

// Entry is what the index holds about one run, all of it taken from the
// run's record.json: the record's own claims, which only `repro runs
// verify` proves.
type Entry struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Status   string    `json:"status"`
	ExitCode int       `json:"exit_code"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at,omitzero"`
	// RecordSHA256 is the SHA-256 of record.json as indexed; empty when
	// there is none.
	RecordSHA256 string `json:"record_sha256"`
	// Problem says why the record is unreadable.
	Problem string  `json:"problem,omitempty"`
	Inputs  []Input `json:"inputs"`
	// Label, Model and Sampling are what the record says the run scored
	// (see internal/runlabel); empty for runs that name nothing.
	Label    string             `json:"label,omitempty"`
	Model    string             `json:"model,omitempty"`
	Sampling *runlabel.Sampling `json:"sampling,omitempty"`
	// Dataset is what the run ran on, as runs.Record.Dataset names it; it
	// is not part of the entry's JSON (`repro runs list --json`).
	Dataset string `json:"-"`
}

// Input is one input a run read: a catalog asset (role "asset", named by
// its catalog id) or a samples file (role "samples").
type Input struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// entryOf derives the entry of run id from the bytes of its record.json.
// raw is untrusted: whatever it holds, the result is an entry with bounded
// fields; a record that cannot be decoded or names another run gives an
// entry of status "unreadable".
func entryOf(id string, raw []byte) Entry {
	e := Entry{ID: id, Kind: clip(kindOf(id)), Status: StatusUnreadable, Started: idTime(id), Inputs: []Input{}}
	if raw == nil {
		e.Problem = "no readable record.json"
		return e
	}
	if len(raw) == 0 {
		e.Problem = "record.json is empty"
		return e
	}
	e.RecordSHA256 = digest.Of(raw).Hex()
	rec, err := runs.DecodeRecord(raw)
	if err != nil {
		e.Problem = clip(err.Error())
		return e
	}
	if orig, _, imported := runs.SplitImportedID(id); rec.ID != id && !(imported && rec.ID == orig) {
		e.Problem = clip("the record names run " + quote(rec.ID))
		return e
	}
	if rec.Kind != "" {
		e.Kind = clip(rec.Kind)
	}
	e.Status, e.ExitCode = clip(rec.Status), rec.ExitCode
	if e.Status == "" || e.Status == StatusUnreadable || e.Status == StatusIncomplete {
		e.Status = "unknown"
	}
	if !rec.StartedAt.IsZero() {
		e.Started = rec.StartedAt.UTC()
	}
	if !rec.FinishedAt.IsZero() {
		e.Finished = rec.FinishedAt.UTC()
	}
	for _, a := range rec.Assets {
		e.addInput("asset", a.ID, a.SHA256)
	}
	e.Dataset = clip(rec.Dataset())
	subject := rec.Subject
	e.Label, e.Model, e.Sampling = subject.Label, subject.Model, subject.Sampling
	if s := subject.Samples; s != nil && s.SHA256 != "" {
		e.addInput("samples", "samples", s.SHA256)
	}
	return e
}

func (e *Entry) addInput(role, name, sha string) {
	if len(e.Inputs) >= maxInputs {
		return
	}
	d, err := digest.Parse(strings.ToLower(sha))
	if err != nil {
		sha = ""
	} else {
		sha = d.Hex()
	}
	e.Inputs = append(e.Inputs, Input{Role: role, Name: clip(name), SHA256: sha})
}

// kindOf is the kind part of a run id: all but its time and random parts.
func kindOf(id string) string {
	parts := strings.Split(id, "-")
	if len(parts) < 3 {
		return ""
	}
	return strings.Join(parts[:len(parts)-2], "-")
}

// idTime is the creation time a run id carries (zero if it has none).
func idTime(id string) time.Time {
	parts := strings.Split(id, "-")
	if len(parts) < 3 {
		return time.Time{}
	}
	t, err := time.Parse("20060102T150405Z", parts[len(parts)-2])
	if err != nil {
		return time.Time{}
	}
	return t
}

// clip bounds s to maxField bytes of valid UTF-8.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxField {
		return s
	}
	s = s[:maxField]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func quote(s string) string {
	if len(s) > maxField {
		s = s[:maxField]
	}
	return `"` + strings.ToValidUTF8(s, "\uFFFD") + `"`
}
