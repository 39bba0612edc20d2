package boardlog

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"golang.org/x/mod/sumdb/note"
)

// maxKeyFile bounds a log key file; a note signer key is under 100 bytes.
const maxKeyFile = 4 << 10

// Key is the log key of a REPRO_HOME: the note signer that signs its
// boards' checkpoints and the verifier key a reader checks them with.
type Key struct {
	Signer note.Signer
	// VerifierKey is the text (name+hash+base64 key) a reader passes to
	// `repro log verify --key`.
	VerifierKey string
	Verifier    note.Verifier
}

// LoadKey reads the log key of home (layout's BoardLogKey), which must be
// a regular file of mode 0600 or narrower; with create, a missing key is
// made. A missing key without create is a precondition error.
func LoadKey(home string, create bool) (*Key, error) {
	p := layout.Home(home).BoardLogKey()
	f, err := safefile.OpenRegular(p)
	if errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil, exitcode.Errorf(exitcode.Precondition, "no board log key at %s: `repro report --leaderboard` makes it with the first export", p)
		}
		if err := newKey(p); err != nil {
			return nil, err
		}
		return LoadKey(home, false)
	}
	if err != nil {
		return nil, fmt.Errorf("board log key %s: %v", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, exitcode.Errorf(exitcode.Precondition, "board log key %q has mode %04o; it must be 0600 or narrower (chmod 600 %q)", p, fi.Mode().Perm(), p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("board log key %s is larger than %d bytes", p, maxKeyFile)
	}
	return keyOf(strings.TrimSpace(string(b)), p)
}

// newKey makes a log key at p, never replacing one: the key is written
// atomically under a name of its own, then linked to p, which fails if
// another process made p meanwhile (its key is then the one kept).
func newKey(p string) error {
	skey, _, err := note.GenerateKey(rand.Reader, keyName)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("cannot create the folder of the board log key: %v", err)
	}
	var r [8]byte
	rand.Read(r[:])
	tmp := fmt.Sprintf("%s.%x.new", p, r)
	if err := atomicfile.WriteFile(tmp, []byte(skey+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot put the board log key in place: %v", err)
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

func keyOf(skey, p string) (*Key, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("board log key %s is not a note signer key: %v", p, err)
	}
	vkey, err := verifierKeyOf(skey)
	if err != nil {
		return nil, fmt.Errorf("board log key %s: %v", p, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	return &Key{Signer: s, VerifierKey: vkey, Verifier: v}, nil
}
