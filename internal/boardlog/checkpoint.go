package boardlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Height is the height of the log's tiles, as in Go's checksum database:
// a full tile holds 2^8 hashes or entries.
const Height = 8

const (
	// maxCheckpoint bounds a signed checkpoint (a note: three lines and
	// a few signature lines).
	maxCheckpoint = MaxCheckpoint
	// MaxCheckpoint bounds a signed checkpoint read.
	MaxCheckpoint = 16 << 10
	// MaxEntries bounds the entries a log may hold, and so the work a
	// checkpoint from a source can ask of a reader.
	MaxEntries = 1 << 20
	// originPrefix starts the origin line of every board log; the name
	// of the log (its dataset, lower case) follows.
	originPrefix = "repro board "
)

// logName is the form of a log's name: a dataset name in lower case.
var logName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

// Name returns the name of the log of dataset: the dataset in lower case
// (boards match datasets without regard to case). A dataset whose name
// cannot name a folder is an error.
func Name(dataset string) (string, error) {
	n := strings.ToLower(dataset)
	if !logName.MatchString(n) {
		return "", fmt.Errorf("dataset %q cannot name a board log (letters, digits, '.', '_' and '-' only, at most 128)", dataset)
	}
	return n, nil
}

// Checkpoint is a signed statement of a log's size and root hash.
type Checkpoint struct {
	// Origin names the log: "repro board " and the log's name.
	Origin string
	Tree   tlog.Tree
}

// Name is the log's name from the origin line.
func (c Checkpoint) Name() string { return strings.TrimPrefix(c.Origin, originPrefix) }

// formatCheckpoint is the checkpoint's text, the tlog-checkpoint form
// that Go's checksum database signs: the origin, the size in decimal and
// the root hash in base64, each on its own line.
func formatCheckpoint(c Checkpoint) []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", c.Origin, c.Tree.N, c.Tree.Hash)
}

// parseCheckpoint reads a checkpoint's text; only the canonical form of
// a board log's checkpoint is accepted.
func parseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return Checkpoint{}, errors.New("checkpoint is not three lines (origin, size, root hash)")
	}
	c := Checkpoint{Origin: lines[0]}
	if name, ok := strings.CutPrefix(c.Origin, originPrefix); !ok || !logName.MatchString(name) {
		return Checkpoint{}, fmt.Errorf("checkpoint origin %q is not a board log's", truncate(c.Origin, 80))
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("checkpoint size %q is not a decimal number", truncate(lines[1], 40))
	}
	if n > MaxEntries {
		return Checkpoint{}, fmt.Errorf("checkpoint states %d entries, more than the %d a board log may hold", n, MaxEntries)
	}
	h, err := tlog.ParseHash(lines[2])
	if err != nil || h.String() != lines[2] {
		return Checkpoint{}, fmt.Errorf("checkpoint root hash %q is not a base64 SHA-256", truncate(lines[2], 60))
	}
	c.Tree = tlog.Tree{N: n, Hash: h}
	return c, nil
}

// OpenCheckpoint checks a signed checkpoint with the log's verifier and
// returns what it states. A note without a valid signature of v, or one
// that is not a board log's checkpoint, is an error.
func OpenCheckpoint(msg []byte, v note.Verifier) (Checkpoint, error) {
	if len(msg) > maxCheckpoint {
		return Checkpoint{}, fmt.Errorf("checkpoint is longer than %d bytes", maxCheckpoint)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		var unv *note.UnverifiedNoteError
		if errors.As(err, &unv) {
			return Checkpoint{}, fmt.Errorf("checkpoint is not signed by the log key %s+%08x", v.Name(), v.KeyHash())
		}
		return Checkpoint{}, fmt.Errorf("checkpoint: %v", err)
	}
	return parseCheckpoint(n.Text)
}

// signCheckpoint signs c with s.
func signCheckpoint(c Checkpoint, s note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: string(formatCheckpoint(c))}, s)
}

// keyName is the name the log key gives itself in checkpoint signatures.
const keyName = "repro-board"

// NewVerifier reads a log's verifier key, the note verifier key text
// (name+hash+base64 key) that `repro log key` prints.
func NewVerifier(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("log key %q is not a note verifier key (name+hash+key, as `repro log key` prints it): %v", truncate(vkey, 80), err)
	}
	return v, nil
}

// verifierKeyOf derives the verifier key of a note signer key
// (PRIVATE+KEY+name+hash+base64(alg||seed)).
func verifierKeyOf(skey string) (string, error) {
	f := strings.SplitN(skey, "+", 5)
	if len(f) != 5 || f[0] != "PRIVATE" || f[1] != "KEY" {
		return "", errors.New("not a note signer key")
	}
	k, err := base64.StdEncoding.DecodeString(f[4])
	if err != nil || len(k) != 1+ed25519.SeedSize || k[0] != 1 {
		return "", errors.New("not an ed25519 note signer key")
	}
	pub := ed25519.NewKeyFromSeed(k[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(f[2], pub)
}

// truncate cuts s to n bytes for an error message (which quotes it).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// splitDataTile splits the bytes of a data tile into its w entries: each
// entry's text followed by an empty line, as Go's checksum database
// writes its data tiles.
func splitDataTile(data []byte, w int) ([][]byte, error) {
	if len(data) > w*(MaxEntry+1) {
		return nil, fmt.Errorf("data tile is longer than %d entries can be", w)
	}
	out := make([][]byte, 0, w)
	for len(data) > 0 {
		i := bytes.Index(data, []byte("\n\n"))
		if i < 0 {
			return nil, errors.New("data tile does not end in an empty line")
		}
		if len(out) == w {
			return nil, fmt.Errorf("data tile holds more than %d entries", w)
		}
		out = append(out, data[:i+1])
		data = data[i+2:]
	}
	if len(out) != w {
		return nil, fmt.Errorf("data tile holds %d entries, want %d", len(out), w)
	}
	return out, nil
}
