package handoff

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"golang.org/x/sys/unix"
)

// Trust on first use for files whose upstream publishes only an MD5 (the
// DLRM checkpoint). MD5 no longer resists a deliberate collision, so the
// first time such a file passes its MD5 check repro records its SHA-256
// and size in REPRO_HOME/state/handoff/first-use.json, and from then on
// refuses any file under that id whose SHA-256 or size differs, whatever
// its MD5. To accept a different file after review, delete its entry from
// that file (or the file) and verify again.

const (
	firstUseName   = "first-use.json"
	firstUseLock   = "first-use.lock"
	firstUseFormat = "repro-first-use v1"
	maxFirstUse    = 1 << 20
)

// FirstUse is the record made the first time a file was verified.
type FirstUse struct {
	ID            string    `json:"id"`
	SHA256        string    `json:"sha256"`
	Size          int64     `json:"size"`
	MD5           string    `json:"md5"`
	FirstVerified time.Time `json:"first_verified"`
	Path          string    `json:"path"`
	Host          string    `json:"host"`
}

type firstUseDoc struct {
	Format  string              `json:"format"`
	Entries map[string]FirstUse `json:"entries"`
}

// firstUse checks sum against the record for id in dir, or records it if
// there is none. It returns the record in force and whether sum matches
// it. The read-modify-write holds an exclusive lock on dir's lock file.
func firstUse(dir string, rec FirstUse) (FirstUse, bool, error) {
	if dir == "" {
		return FirstUse{}, false, errors.New("no state folder for first-use records")
	}
	lf, err := os.OpenFile(filepath.Join(dir, firstUseLock), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return FirstUse{}, false, err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return FirstUse{}, false, err
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)

	doc, err := readFirstUse(dir)
	if err != nil {
		return FirstUse{}, false, err
	}
	if old, ok := doc.Entries[rec.ID]; ok {
		return old, old.SHA256 == rec.SHA256 && old.Size == rec.Size, nil
	}
	doc.Entries[rec.ID] = rec
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return FirstUse{}, false, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, firstUseName), append(b, '\n'), 0o600); err != nil {
		return FirstUse{}, false, err
	}
	return rec, true, nil
}

func readFirstUse(dir string) (*firstUseDoc, error) {
	name := filepath.Join(dir, firstUseName)
	b, err := safefile.ReadFile(name, maxFirstUse)
	if errors.Is(err, os.ErrNotExist) {
		return &firstUseDoc{Format: firstUseFormat, Entries: map[string]FirstUse{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc firstUseDoc
	if err := strictjson.Decode(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %v; move it aside only after review, since it holds the digests recorded at first use", name, err)
	}
	if doc.Format != firstUseFormat {
		return nil, fmt.Errorf("%s is corrupt or of another format; move it aside only after review", name)
	}
	if doc.Entries == nil {
		doc.Entries = map[string]FirstUse{}
	}
	return &doc, nil
}
