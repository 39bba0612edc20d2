// Package runs gives every workload run a folder under REPRO_HOME/runs and
// leaves in it a record that can be verified later: what ran (assets, image,
// harness, limits), where (host facts), the self-check, the results, and the
// SHA-256 of every file the run left. The record is the predicate of an
// in-toto Statement v1 whose subjects are every file of the folder, signed
// with the local run key (internal/keys) as a DSSE envelope.
//
// Files of a run folder:
//
//	record.json        the record (the statement's predicate; a subject)
//	record.dsse.json   DSSE envelope over the in-toto statement
//	...                whatever the workload wrote (results, workspace copy)
//
// Verify re-hashes every file, checks the file set is exactly the signed
// one, and checks the signature against a trust file (internal/trust).
// Export writes a run as a tar bundle that VerifyBundle checks elsewhere.
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"

	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// Schema names the record format; additions keep it, changes bump it.
const Schema = "repro.run/v1"

// Record is the provenance of one run.
type Record struct {
	Schema     string    `json:"schema"`
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Command    []string  `json:"command"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Status is "ok", "negative", "precondition" or "integrity", after the
	// exit code of the command.
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Repro    Tool   `json:"repro"`
	Host     Host   `json:"host"`
	// Assets are the catalog assets the run read, as verified.
	Assets []Asset `json:"assets,omitempty"`
	// Workload-specific sections: image and sandbox facts, harness digest,
	// limits, self-check, summary.
	Image     any `json:"image,omitempty"`
	Sandbox   any `json:"sandbox,omitempty"`
	Limits    any `json:"limits,omitempty"`
	SelfCheck any `json:"self_check,omitempty"`
	Summary   any `json:"summary,omitempty"`
	Extra     any `json:"extra,omitempty"`
	// Subject is Extra's run subject, decoded with the record (see
	// Subject); it is not part of record.json.
	Subject Subject `json:"-"`
	// Files lists every file in the run folder but the record itself.
	Files []File `json:"files"`
	// Tests, when the workload sets it, names the tests the run passed
	// and failed for its Test Result attestation (not in record.json).
	Tests *Tests `json:"-"`
}

// Tool identifies the repro binary.
type Tool struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	// Revision and Modified are the VCS revision the binary was built
	// from and whether its tree had changes, from the build information
	// (empty when it was built without VCS stamping).
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
}

// toolFacts describes this repro binary.
func toolFacts(version string) Tool {
	t := Tool{Version: version, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.Revision = s.Value
			case "vcs.modified":
				t.Modified = s.Value == "true"
			}
		}
	}
	return t
}

// Host describes the machine.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	MemBytes int64  `json:"mem_bytes"`
}

// Asset is a catalog asset as it was verified for the run.
type Asset struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
	// Tree: SHA256 is the asset's tree digest (digest.Tree), not the
	// digest of a file.
	Tree bool `json:"tree,omitempty"`
}

// File is one file of the run folder.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Run is an open run folder.
type Run struct {
	ID      string
	Dir     string
	home    string
	started time.Time
	kind    string
}

var idPattern = regexp.MustCompile(`^[a-z0-9-]{1,40}-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// Create makes a new run folder REPRO_HOME/runs/<kind>-<UTC time>-<random>.
func Create(home, kind string) (*Run, error) {
	now := time.Now().UTC()
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s-%s-%s", kind, now.Format("20060102T150405Z"), hex.EncodeToString(rnd[:]))
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("invalid run kind %q", kind)
	}
	dir := layout.Home(home).Run(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create run folder %s: %v", dir, err)
	}
	return &Run{ID: id, Dir: dir, home: home, started: now, kind: kind}, nil
}

// NewRecord returns a record filled with what the package knows: schema,
// id, kind, command line, start time, repro version and host facts.
func (r *Run) NewRecord(version string) *Record {
	return &Record{
		Schema:    Schema,
		ID:        r.ID,
		Kind:      r.kind,
		Command:   os.Args,
		StartedAt: r.started,
		Repro:     toolFacts(version),
		Host:      HostFacts(),
	}
}

// Open finds an existing run by id (or unique id prefix).
func Open(home, id string) (*Run, error) {
	all, err := List(home)
	if err != nil {
		return nil, err
	}
	var match []string
	for _, r := range all {
		if r == id {
			match = []string{r}
			break
		}
		if strings.HasPrefix(r, id) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 0:
		return nil, exitcode.Errorf(exitcode.Usage, "no run %q (see `repro runs list`)", id)
	case 1:
	default:
		return nil, exitcode.Errorf(exitcode.Usage, "run id %q is ambiguous: %s", id, strings.Join(match, ", "))
	}
	return &Run{ID: match[0], Dir: layout.Home(home).Run(match[0]), home: home}, nil
}

// List returns the ids of all runs, oldest first.
func List(home string) ([]string, error) {
	ents, err := os.ReadDir(layout.Home(home).Runs())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && idPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Slice(ids, func(i, j int) bool { return Before(ids[i], ids[j]) })
	return ids, nil
}

// Before reports whether run a comes before run b in List's order: by the
// time in their ids, then by id.
func Before(a, b string) bool {
	return runTime(a) < runTime(b) || runTime(a) == runTime(b) && a < b
}

// Summary is one line of a list of runs.
type Summary struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Status   string `json:"status"` // "unreadable" when the record cannot be read
	Finished string `json:"finished_at"`
}

// Summaries lists the runs under home, oldest first, from their records.
func Summaries(home string) ([]Summary, error) {
	ids, err := List(home)
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, id := range ids {
		r, err := Open(home, id)
		if err != nil {
			return nil, err
		}
		rec, _, err := r.ReadRecord()
		if err != nil {
			out = append(out, Summary{ID: id, Status: "unreadable"})
			continue
		}
		out = append(out, Summary{ID: id, Kind: rec.Kind, Status: rec.Status, Finished: rec.FinishedAt.Format("2006-01-02 15:04:05Z")})
	}
	return out, nil
}

func runTime(id string) string {
	parts := strings.Split(id, "-")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}

// ReadRecord reads and decodes record.json of a run (bounded).
func (r *Run) ReadRecord() (*Record, []byte, error) {
	b, err := safefile.ReadFile(filepath.Join(r.Dir, recordFile), maxRecordBytes)
	if err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Integrity, "run %s: cannot read its record: %v", r.ID, err)
	}
	rec, err := DecodeRecord(b)
	if err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Integrity, "run %s: %v", r.ID, err)
	}
	return rec, b, nil
}

// ReadRecordOf finds the run id (or unique id prefix) of home, as Open
// does, and returns its record.json as read (bounded, and only if it
// decodes), as ReadRecord does: an unknown or ambiguous id is a usage
// error (exit 2), an unreadable or undecodable record an integrity error
// (exit 4).
func ReadRecordOf(home, id string) ([]byte, error) {
	r, err := Open(home, id)
	if err != nil {
		return nil, err
	}
	_, raw, err := r.ReadRecord()
	return raw, err
}

// ValidID reports whether id has the form of a run id; only such names
// under REPRO_HOME/runs are run folders.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// RecordFile is the name of the record in a run folder.
const RecordFile = recordFile

// RecordPath is the path of the record of run id under home. id must be a
// ValidID.
func RecordPath(home, id string) string {
	return filepath.Join(layout.Home(home).Run(id), recordFile)
}

// MaxRecordBytes bounds a record file; a larger one is not read.
const MaxRecordBytes = maxRecordBytes

// DecodeRecord decodes the bytes of a record.json. It checks only that
// they are a JSON record; Verify decides whether to believe them.
func DecodeRecord(b []byte) (*Record, error) {
	rec, err := decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("record is not valid JSON: %v", err)
	}
	return rec, nil
}

// decodeRecord decodes a record and its run subject, once.
func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := strictjson.DecodeOpen(b, &rec); err != nil {
		return nil, err
	}
	rec.Subject = subjectOf(rec.Extra)
	return &rec, nil
}

func statusOf(code int) string {
	return exitcode.Code(code).String()
}

// EnvelopeFile is the name of the record's DSSE envelope in a run folder.
const EnvelopeFile = envelopeFile
