// Package catalog is repro's compiled-in list of upstream assets and their
// pins: URLs, size and SHA-256 for files, a tree digest for source trees.
//
// The catalog is embedded at build time (entries/*.json). No flag,
// environment variable or file replaces it at run time: the only way to
// change a pin is a reviewed commit. Tests build catalogs of their own with
// [Parse] or [New] and hand them to the store through its Go API.
//
// An entry is either pinned, and then every byte that repro uses under its
// id is checked against the pin, or unpinned (an upstream that publishes no
// digest, such as NVIDIA's EDM files), and then every command that would use
// it fails closed with [ErrUnpinned].
package catalog

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/strictjson"
)

// Kind says what an entry is.
type Kind string

// The kinds of entry.
const (
	Dataset      Kind = "dataset"
	Checkpoint   Kind = "checkpoint"
	Detector     Kind = "detector"
	FIDReference Kind = "fid-reference"
	SourceTree   Kind = "source-tree"
	Image        Kind = "image"
	External     Kind = "external" // licensed or cluster-side data repro never downloads
)

var kinds = map[Kind]bool{Dataset: true, Checkpoint: true, Detector: true, FIDReference: true, SourceTree: true, Image: true, External: true}

// Pin status of an entry.
const (
	Pinned   = "pinned"
	Unpinned = "unpinned"
)

// Entry is one catalog asset.
type Entry struct {
	ID          string `json:"id"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description"`
	// URLs are tried in order; the first is the canonical upstream.
	URLs []string `json:"urls,omitempty"`
	// Filename is the upstream file name, used for mirrors (MIRROR/<filename>).
	Filename string `json:"filename,omitempty"`
	// Size and SHA256 pin a file; TreeDigest pins a source tree.
	Size       int64          `json:"size,omitempty"`
	SHA256     *digest.SHA256 `json:"sha256,omitempty"`
	TreeDigest *digest.SHA256 `json:"tree_digest,omitempty"`
	License    string         `json:"license"`
	// Pin is "pinned" or "unpinned".
	Pin   string `json:"pin"`
	Notes string `json:"notes,omitempty"`
	// Facts are further reviewed facts about the bytes (decompressed
	// digests, upstream commits, digest of an image).
	Facts map[string]string `json:"facts,omitempty"`
}

// IsPinned reports whether the entry carries a pin.
func (e Entry) IsPinned() bool { return e.Pin == Pinned }

// ErrUnpinned is the cause of every refusal to use an unpinned entry.
var ErrUnpinned = errors.New("catalog entry is unpinned")

// UnpinnedError says that an entry cannot be used until a reviewer pins it.
type UnpinnedError struct{ ID string }

func (e *UnpinnedError) Error() string {
	return fmt.Sprintf("catalog entry %s is unpinned: its upstream publishes no size or digest, so repro refuses to use it; "+
		"a reviewer must download it once, check it, run `repro catalog review %s --file FILE` and commit the printed entry", e.ID, e.ID)
}

func (e *UnpinnedError) Is(target error) bool { return target == ErrUnpinned }

// RequirePinned returns an exitcode.Precondition error unless e is pinned.
func (e Entry) RequirePinned() error {
	if !e.IsPinned() {
		return exitcode.New(exitcode.Precondition, &UnpinnedError{ID: e.ID})
	}
	return nil
}

// Catalog is an immutable, validated set of entries.
type Catalog struct {
	byID map[string]Entry
	ids  []string
}

//go:embed entries/*.json
var embedded embed.FS

var defaultCatalog = func() *Catalog {
	c, err := loadFS(embedded, "entries")
	if err != nil {
		panic("embedded catalog is invalid: " + err.Error())
	}
	return c
}()

// Default returns the compiled-in catalog.
func Default() *Catalog { return defaultCatalog }

func loadFS(fsys fs.FS, dir string) (*Catalog, error) {
	names, err := fs.Glob(fsys, dir+"/*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var all []Entry
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		es, err := parseEntries(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(n), err)
		}
		all = append(all, es...)
	}
	return New(all)
}

// MaxCatalogBytes bounds the size of a catalog document accepted by Parse.
const MaxCatalogBytes = 4 << 20

type document struct {
	Entries []Entry `json:"entries"`
}

// Parse reads one catalog document ({"entries": [...]}) strictly: unknown
// fields, trailing data and invalid entries are errors.
func Parse(b []byte) (*Catalog, error) {
	es, err := parseEntries(b)
	if err != nil {
		return nil, err
	}
	return New(es)
}

func parseEntries(b []byte) ([]Entry, error) {
	if len(b) > MaxCatalogBytes {
		return nil, fmt.Errorf("catalog document is %d bytes, over the limit of %d", len(b), MaxCatalogBytes)
	}
	var doc document
	if err := strictjson.Decode(b, &doc); err != nil {
		return nil, fmt.Errorf("invalid catalog document: %v", err)
	}
	return doc.Entries, nil
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,99}$`)

// New validates entries and builds a catalog from them.
func New(entries []Entry) (*Catalog, error) {
	c := &Catalog{byID: make(map[string]Entry, len(entries))}
	for i, e := range entries {
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("entry %d (%q): %w", i, e.ID, err)
		}
		if _, dup := c.byID[e.ID]; dup {
			return nil, fmt.Errorf("entry %d: duplicate id %q", i, e.ID)
		}
		c.byID[e.ID] = e
		c.ids = append(c.ids, e.ID)
	}
	slices.SortFunc(c.ids, naturalCompare)
	return c, nil
}

func (e Entry) validate() error {
	if !idPattern.MatchString(e.ID) {
		return errors.New("id must be 1-100 characters of a-z, 0-9, '.' and '-', starting with a letter or digit")
	}
	if !kinds[e.Kind] {
		return fmt.Errorf("unknown kind %q", e.Kind)
	}
	if strings.TrimSpace(e.Description) == "" {
		return errors.New("missing description")
	}
	if strings.TrimSpace(e.License) == "" {
		return errors.New("missing license")
	}
	for _, u := range e.URLs {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "https" || p.Host == "" || p.User != nil {
			return fmt.Errorf("url %q: upstream URLs must be absolute https URLs without credentials", u)
		}
	}
	if e.Filename != "" && (e.Filename != path.Base(e.Filename) || strings.HasPrefix(e.Filename, ".") || strings.ContainsAny(e.Filename, "/\\\x00")) {
		return fmt.Errorf("filename %q must be a plain file name", e.Filename)
	}
	if e.Size < 0 {
		return errors.New("negative size")
	}
	switch e.Pin {
	case Pinned:
		if e.Kind == SourceTree {
			if e.TreeDigest == nil || e.TreeDigest.IsZero() {
				return errors.New("a pinned source tree needs tree_digest")
			}
			if e.SHA256 != nil || e.Size != 0 {
				return errors.New("a source tree is pinned by tree_digest only")
			}
			break
		}
		if e.Kind == External || e.Kind == Image {
			if e.SHA256 == nil || e.SHA256.IsZero() {
				return errors.New("a pinned entry needs sha256")
			}
			break
		}
		if e.SHA256 == nil || e.SHA256.IsZero() || e.Size <= 0 {
			return errors.New("a pinned file needs size and sha256")
		}
		if len(e.URLs) == 0 {
			return errors.New("a pinned file needs at least one url")
		}
	case Unpinned:
		if e.SHA256 != nil || e.TreeDigest != nil || e.Size != 0 {
			return errors.New("an unpinned entry must carry no size or digest")
		}
	default:
		return fmt.Errorf("pin must be %q or %q, not %q", Pinned, Unpinned, e.Pin)
	}
	return nil
}

// NotFoundError reports an id the catalog does not have.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no catalog entry %q (see `repro catalog list`)", e.ID)
}

// Lookup returns the entry with the given id.
func (c *Catalog) Lookup(id string) (Entry, error) {
	e, ok := c.byID[id]
	if !ok {
		return Entry{}, exitcode.New(exitcode.Usage, &NotFoundError{ID: id})
	}
	return e, nil
}

// Entries returns every entry in the natural order of ids (day-2 before
// day-10).
func (c *Catalog) Entries() []Entry {
	out := make([]Entry, 0, len(c.ids))
	for _, id := range c.ids {
		out = append(out, c.byID[id])
	}
	return out
}

// Marshal writes the catalog as one canonical document (entries in the
// order of Entries), the form Parse reads.
func (c *Catalog) Marshal() ([]byte, error) {
	return json.MarshalIndent(document{Entries: c.Entries()}, "", "  ")
}
