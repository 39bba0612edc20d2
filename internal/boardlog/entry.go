// Package boardlog keeps the history of a leaderboard as an append-only
// transparency log in the tiled format of Go's checksum database: every
// run a board accepts becomes one entry, the entries are the leaves of a
// Merkle tree (golang.org/x/mod/sumdb/tlog), the tree is published as
// tiles (tile/H/L/NNN for hashes, tile/H/data/NNN for the entries) and a
// checkpoint that states its size and root hash, signed with the log key
// as a note (golang.org/x/mod/sumdb/note).
//
// A reader who holds the log's verifier key checks, from a folder or an
// http(s) address, that a run is in the log (an inclusion proof) and that
// a newer checkpoint extends an older one (a consistency proof), so a board
// whose history was rewritten (an entry changed, removed or reordered)
// fails the check. Everything read from a log is untrusted: every read is
// bounded, entries must be in their one canonical encoding, and every
// tile is checked against the signed checkpoint before it is believed.
//
// One log per dataset lives under REPRO_HOME (see internal/layout):
//
//	boardlog/<dataset>/checkpoint        the signed checkpoint (a note)
//	boardlog/<dataset>/tile/8/L/NNN...   hash tiles
//	boardlog/<dataset>/tile/8/data/NNN.. entry tiles
//	keys/board-log.key                   the log key (note signer key, 0600)
package boardlog

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// entryHeader is the first line of every entry; a change of format gets
// another.
const entryHeader = "repro board entry v1"

// Bounds of an entry and its fields.
const (
	// MaxEntry bounds one entry's encoding in bytes.
	MaxEntry = 2048
	// maxText bounds a dataset; maxLabel a label (runlabel's 100
	// characters are at most 400 bytes).
	maxText  = 256
	maxLabel = 512
)

// Entry is what the log says of one run the board accepted: which run,
// who signed it, on which dataset and under which label, and the SHA-256
// of the evidence it was accepted on (the record, its DSSE envelope and,
// for an imported run, the bundle it came in).
type Entry struct {
	RunID   string `json:"run_id"`
	Dataset string `json:"dataset"`
	Label   string `json:"label"`
	// SignerKeyID is the hex SHA-256 of the DER SubjectPublicKeyInfo of
	// the key whose signature on the record verified (internal/keys).
	SignerKeyID string `json:"signer_key_id"`
	// RecordSHA256 and EnvelopeSHA256 are the hex SHA-256 of the run's
	// record.json and record.dsse.json.
	RecordSHA256   string `json:"record_sha256"`
	EnvelopeSHA256 string `json:"envelope_sha256"`
	// BundleSHA256 is the hex SHA-256 of the evidence bundle an imported
	// run came in; "" for a run made where the board is.
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
}

var (
	runIDForm = regexp.MustCompile(`^[a-z0-9-]{1,40}-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)
	hexForm   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// validText reports whether s may stand on one line of an entry:
// non-empty, valid UTF-8, at most maxText bytes, no control characters,
// no leading or trailing space.
func validText(s string) bool {
	if s == "" || len(s) > maxText || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

// Check reports the first field of e that cannot be logged.
func (e Entry) Check() error {
	switch {
	case !runIDForm.MatchString(e.RunID):
		return fmt.Errorf("entry: run id %q is not a run id", e.RunID)
	case !validText(e.Dataset):
		return fmt.Errorf("entry of run %s: dataset %q is empty, too long or holds control characters", e.RunID, e.Dataset)
	case e.Label == "" || len(e.Label) > maxLabel:
		return fmt.Errorf("entry of run %s: label %q is empty or longer than %d bytes", e.RunID, truncate(e.Label, 80), maxLabel)
	case !hexForm.MatchString(e.SignerKeyID):
		return fmt.Errorf("entry of run %s: signer key id %q is not 64 lower-case hex digits", e.RunID, e.SignerKeyID)
	case !hexForm.MatchString(e.RecordSHA256):
		return fmt.Errorf("entry of run %s: record digest %q is not 64 lower-case hex digits", e.RunID, e.RecordSHA256)
	case !hexForm.MatchString(e.EnvelopeSHA256):
		return fmt.Errorf("entry of run %s: envelope digest %q is not 64 lower-case hex digits", e.RunID, e.EnvelopeSHA256)
	case e.BundleSHA256 != "" && !hexForm.MatchString(e.BundleSHA256):
		return fmt.Errorf("entry of run %s: bundle digest %q is not 64 lower-case hex digits", e.RunID, e.BundleSHA256)
	}
	return nil
}

// Marshal returns e's one canonical encoding: fixed lines in a fixed
// order, each "name value", ending in a newline, with no blank line (the
// record text form of golang.org/x/mod/sumdb/tlog). The label, which a
// submitter chose, is written as a Go string literal in ASCII
// (strconv.QuoteToASCII), so that any label stays one printable line:
//
//	repro board entry v1
//	run <run id>
//	dataset <dataset>
//	label "<label>"
//	signer <key id>
//	record sha256:<hex>
//	envelope sha256:<hex>
//	bundle sha256:<hex> | bundle none
func (e Entry) Marshal() ([]byte, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	bundle := "none"
	if e.BundleSHA256 != "" {
		bundle = "sha256:" + e.BundleSHA256
	}
	b := fmt.Appendf(nil, "%s\nrun %s\ndataset %s\nlabel %s\nsigner %s\nrecord sha256:%s\nenvelope sha256:%s\nbundle %s\n",
		entryHeader, e.RunID, e.Dataset, strconv.QuoteToASCII(e.Label), e.SignerKeyID, e.RecordSHA256, e.EnvelopeSHA256, bundle)
	if len(b) > MaxEntry {
		return nil, fmt.Errorf("entry of run %s is %d bytes, more than %d", e.RunID, len(b), MaxEntry)
	}
	return b, nil
}

// ParseEntry reads an entry; anything but the canonical encoding of a
// valid entry (another order, extra space or lines, a missing newline, an
// over-long field) is an error, so that one entry has one encoding and
// thus one leaf hash.
func ParseEntry(b []byte) (Entry, error) {
	if len(b) > MaxEntry {
		return Entry{}, fmt.Errorf("entry is longer than %d bytes", MaxEntry)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return Entry{}, fmt.Errorf("entry does not end in a newline")
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	names := []string{"run", "dataset", "label", "signer", "record", "envelope", "bundle"}
	if len(lines) != 1+len(names) || lines[0] != entryHeader {
		return Entry{}, fmt.Errorf("entry is not a %q entry of %d lines", entryHeader, 1+len(names))
	}
	vals := make([]string, len(names))
	for i, n := range names {
		v, ok := strings.CutPrefix(lines[i+1], n+" ")
		if !ok {
			return Entry{}, fmt.Errorf("entry line %d is not %q", i+2, n)
		}
		vals[i] = v
	}
	label, err := strconv.Unquote(vals[2])
	if err != nil || !strings.HasPrefix(vals[2], `"`) {
		return Entry{}, fmt.Errorf("entry label %q is not a quoted string", truncate(vals[2], 80))
	}
	e := Entry{RunID: vals[0], Dataset: vals[1], Label: label, SignerKeyID: vals[3]}
	var ok bool
	if e.RecordSHA256, ok = strings.CutPrefix(vals[4], "sha256:"); !ok {
		return Entry{}, fmt.Errorf("entry record digest %q is not sha256:<hex>", vals[4])
	}
	if e.EnvelopeSHA256, ok = strings.CutPrefix(vals[5], "sha256:"); !ok {
		return Entry{}, fmt.Errorf("entry envelope digest %q is not sha256:<hex>", vals[5])
	}
	if vals[6] != "none" {
		if e.BundleSHA256, ok = strings.CutPrefix(vals[6], "sha256:"); !ok || e.BundleSHA256 == "" {
			return Entry{}, fmt.Errorf("entry bundle digest %q is not sha256:<hex> or none", vals[6])
		}
	}
	again, err := e.Marshal()
	if err != nil {
		return Entry{}, err
	}
	if !bytes.Equal(again, b) {
		return Entry{}, fmt.Errorf("entry is not in its canonical encoding")
	}
	return e, nil
}
