// Package store keeps upstream assets as verified, content-addressed blobs
// under REPRO_HOME and hands them out only as verified bytes.
//
// Layout:
//
//	REPRO_HOME/blobs/sha256/<hex>   read-only blobs, named by their digest
//	REPRO_HOME/refs/<id>.json       which catalog id was stored, from where, when
//	REPRO_HOME/tmp/                 partial downloads (resumable)
//	REPRO_HOME/locks/               one lock file per digest
//	REPRO_HOME/quarantine/          corrupt blobs moved aside by verify
//	REPRO_HOME/state/<name>/        folders owned by other packages (caches)
//
// Every blob enters the store through the same path (fetch, mirror or
// import): bytes are hashed while written to a temporary file, size and
// SHA-256 are checked against the catalog pin, the file is synced, hashed
// again from disk, made read-only and renamed into place, and the folder is
// synced. Nothing is ever trusted by its name or size alone: every open
// re-hashes the bytes it hands out.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
	"golang.org/x/sys/unix"
)

// Store is an opened REPRO_HOME with the catalog whose pins it enforces.
type Store struct {
	home string
	dir  layout.Home
	cat  *catalog.Catalog
}

// Open creates the store layout under home if needed. cat is the catalog
// whose pins the store enforces: catalog.Default() everywhere but in tests.
func Open(home string, cat *catalog.Catalog) (*Store, error) {
	if cat == nil {
		return nil, errors.New("store: nil catalog")
	}
	for _, d := range layout.Home(home).StoreFolders() {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "cannot create store folder %q: %v", d, err)
		}
	}
	return &Store{home: home, dir: layout.Home(home), cat: cat}, nil
}

// OpenExisting opens the store under home for reading, without creating
// anything: a home whose store folders are not all there is an
// exitcode.Precondition error.
func OpenExisting(home string, cat *catalog.Catalog) (*Store, error) {
	if cat == nil {
		return nil, errors.New("store: nil catalog")
	}
	for _, d := range layout.Home(home).StoreFolders() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, exitcode.Errorf(exitcode.Precondition, "no store in %q (nothing fetched yet)", home)
		}
	}
	return &Store{home: home, dir: layout.Home(home), cat: cat}, nil
}

// Home returns the store's root folder.
func (s *Store) Home() string { return s.home }

// Catalog returns the catalog the store enforces.
func (s *Store) Catalog() *catalog.Catalog { return s.cat }

// StateDir returns (and creates) REPRO_HOME/state/<name>, a folder another
// package owns for its own files, such as caches.
func (s *Store) StateDir(name string) (string, error) {
	d, err := s.dir.State(name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	return d, nil
}

func (s *Store) blobPath(d digest.SHA256) string {
	return s.dir.Blob(d.Hex())
}

func (s *Store) refPath(id string) string { return s.dir.Ref(id) }

// Ref records that a catalog id is in the store.
type Ref struct {
	ID       string        `json:"id"`
	SHA256   digest.SHA256 `json:"sha256"`
	Size     int64         `json:"size"`
	Source   string        `json:"source"`
	StoredAt time.Time     `json:"stored_at"`
}

func (s *Store) writeRef(r Ref) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(s.refPath(r.ID), append(b, '\n'), 0o600)
}

// Refs lists the ids recorded in the store, sorted.
func (s *Store) Refs() ([]Ref, error) {
	ents, err := os.ReadDir(s.dir.Refs())
	if err != nil {
		return nil, err
	}
	var out []Ref
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || filepath.Ext(name) != ".json" {
			continue
		}
		b, err := safefile.ReadFile(filepath.Join(s.dir.Refs(), name), 64<<10)
		if err != nil {
			return nil, err
		}
		var r Ref
		if err := strictjson.DecodeOpen(b, &r); err != nil {
			return nil, fmt.Errorf("store ref %s is corrupt: %v", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// pinnedFile returns the entry for id if it is a pinned, storable file.
func (s *Store) pinnedFile(id string) (catalog.Entry, error) {
	e, err := s.cat.Lookup(id)
	if err != nil {
		return e, err
	}
	switch e.Kind {
	case catalog.SourceTree:
		return e, exitcode.Errorf(exitcode.Precondition, "%s is a source tree pinned by its tree digest; it is not stored as a file: give its folder to the command that uses it", id)
	case catalog.External:
		return e, exitcode.Errorf(exitcode.Precondition, "%s is external data that repro never downloads (licensed or cluster-side); see `repro catalog show %s`", id, id)
	case catalog.Image:
		return e, exitcode.Errorf(exitcode.Precondition, "%s is a container image; images are built or pulled by digest, not stored as files", id)
	}
	if err := e.RequirePinned(); err != nil {
		return e, err
	}
	return e, nil
}

// NotStoredError says that a pinned asset has not been fetched yet.
type NotStoredError struct{ ID string }

func (e *NotStoredError) Error() string {
	return fmt.Sprintf("asset %s is not in the store: run `repro fetch %s` (or `repro fetch %s --from FILE` for a copy you already have)", e.ID, e.ID, e.ID)
}

// OpenVerified opens the stored blob of id and hashes it through the very
// descriptor it returns, immediately before returning it rewound to offset
// 0. A missing blob is an exitcode.Precondition error; bytes that differ
// from the pin are an exitcode.Integrity error naming expected and actual
// digest. When ctx is done the read stops with ctx's error. The caller
// closes the file.
//
// The check proves what the descriptor held when it was hashed. Use
// OpenSealed where nothing may change the bytes afterwards.
func (s *Store) OpenVerified(ctx context.Context, id string) (*os.File, error) {
	e, err := s.pinnedFile(id)
	if err != nil {
		return nil, err
	}
	f, err := s.openBlob(e)
	if err != nil {
		return nil, err
	}
	got, n, err := digest.ReaderFrom(contextReader{ctx, f})
	if err == nil {
		err = checkPin(e, got, n)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (s *Store) openBlob(e catalog.Entry) (*os.File, error) {
	f, err := os.OpenFile(s.blobPath(*e.SHA256), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.New(exitcode.Precondition, &NotStoredError{ID: e.ID})
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "asset %s: cannot open its blob: %v", e.ID, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, exitcode.Errorf(exitcode.Integrity, "asset %s: its blob is not a regular file", e.ID)
	}
	return f, nil
}

func checkPin(e catalog.Entry, got digest.SHA256, n int64) error {
	if n != e.Size || got != *e.SHA256 {
		me := &digest.MismatchError{What: "asset " + e.ID, WantSize: e.Size, GotSize: n, WantDigest: *e.SHA256}
		if n == e.Size {
			me.GotDigest = got
		}
		return exitcode.New(exitcode.Integrity, fmt.Errorf("%w (run `repro verify %s`)", me, e.ID))
	}
	return nil
}
