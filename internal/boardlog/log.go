package boardlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sys/unix"
)

// Log is the log of one dataset's board under a REPRO_HOME.
type Log struct {
	home layout.Home
	name string
	dir  string
}

// Open returns the log of dataset's board under home (which need not
// exist yet).
func Open(home, dataset string) (*Log, error) {
	name, err := Name(dataset)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	dir, err := layout.Home(home).BoardLog(name)
	if err != nil {
		return nil, err
	}
	return &Log{home: layout.Home(home), name: name, dir: dir}, nil
}

// Name is the log's name (its dataset in lower case).
func (l *Log) Name() string { return l.name }

// Appended is what Append did.
type Appended struct {
	// Added counts the entries appended; the others were in the log
	// already.
	Added int
	// Checkpoint is the log's checkpoint after the append; Signed its
	// signed form.
	Checkpoint Checkpoint
	Signed     []byte
	// VerifierKey is the log key's verifier key.
	VerifierKey string
}

// Append appends to the log, in order, every entry of es not in it yet
// (an entry is in it when an entry with the same encoding is), writes the
// new tiles and then a new checkpoint signed with home's log key (made on
// first use). The log on disk is checked against its own checkpoint
// first: a log changed behind its back is an integrity error, never
// signed over. An entry of another dataset is an error.
func (l *Log) Append(ctx context.Context, es []Entry) (*Appended, error) {
	unlock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	key, err := LoadKey(string(l.home), true)
	if err != nil {
		return nil, err
	}
	var texts [][]byte
	var hashes []tlog.Hash
	cp := Checkpoint{Origin: originPrefix + l.name}
	raw, err := safefile.ReadFile(filepath.Join(l.dir, "checkpoint"), maxCheckpoint)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("board log %s: %v", l.dir, err)
	default:
		lv, err := openView(ctx, dirSource(l.dir), key.Verifier)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "board log %s does not check out against the log key; restore it from a published copy: %v", l.dir, err)
		}
		if texts, _, err = lv.entries(ctx); err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "board log %s does not check out against its checkpoint; restore it from a published copy: %v", l.dir, err)
		}
		cp = lv.cp
		if hashes, err = storedHashes(texts); err != nil {
			return nil, err
		}
	}
	have := map[string]bool{}
	for _, t := range texts {
		have[string(t)] = true
	}
	old := int64(len(texts))
	for _, e := range es {
		if strings.ToLower(e.Dataset) != l.name {
			return nil, fmt.Errorf("entry of run %s is of dataset %q, not of log %q", e.RunID, e.Dataset, l.name)
		}
		text, err := e.Marshal()
		if err != nil {
			return nil, err
		}
		if have[string(text)] {
			continue
		}
		if int64(len(texts)) >= MaxEntries {
			return nil, fmt.Errorf("board log %s is full (%d entries)", l.dir, MaxEntries)
		}
		have[string(text)] = true
		more, err := tlog.StoredHashes(int64(len(texts)), text, hashReader(hashes))
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, more...)
		texts = append(texts, text)
	}
	out := &Appended{Added: len(texts) - int(old), VerifierKey: key.VerifierKey}
	n := int64(len(texts))
	if n == old {
		if n == 0 {
			return out, nil
		}
		out.Checkpoint, out.Signed = cp, raw
		return out, nil
	}
	for _, t := range tlog.NewTiles(Height, old, n) {
		data, err := tlog.ReadTileData(t, hashReader(hashes))
		if err != nil {
			return nil, err
		}
		if err := l.writeFile(t.Path(), data); err != nil {
			return nil, err
		}
		if t.L == 0 {
			var d bytes.Buffer
			for _, text := range texts[t.N<<Height : t.N<<Height+int64(t.W)] {
				d.Write(text)
				d.WriteByte('\n')
			}
			dt := tlog.Tile{H: Height, L: -1, N: t.N, W: t.W}
			if err := l.writeFile(dt.Path(), d.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	root, err := tlog.TreeHash(n, hashReader(hashes))
	if err != nil {
		return nil, err
	}
	cp.Tree = tlog.Tree{N: n, Hash: root}
	signed, err := signCheckpoint(cp, key.Signer)
	if err != nil {
		return nil, err
	}
	if err := l.writeFile("checkpoint", signed); err != nil {
		return nil, err
	}
	out.Checkpoint, out.Signed = cp, signed
	return out, nil
}

// storedHashes computes every stored hash of a log of texts, in storage
// order.
func storedHashes(texts [][]byte) ([]tlog.Hash, error) {
	var hashes []tlog.Hash
	for i, t := range texts {
		more, err := tlog.StoredHashes(int64(i), t, hashReader(hashes))
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, more...)
	}
	return hashes, nil
}

// hashReader reads stored hashes from memory.
func hashReader(hashes []tlog.Hash) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(hashes)) {
				return nil, fmt.Errorf("stored hash %d is not in the log", x)
			}
			out[i] = hashes[x]
		}
		return out, nil
	})
}

// writeFile writes the log file rel atomically.
func (l *Log) writeFile(rel string, data []byte) error {
	p := filepath.Join(l.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("cannot create the folder of %s: %v", p, err)
	}
	return atomicfile.WriteFile(p, data, 0o644)
}

// lock takes the log's lock, so that two exports never append at once.
func (l *Log) lock(ctx context.Context) (func(), error) {
	p := l.home.Lock("boardlog-" + l.name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open lock %s: %w", p, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ReadFile returns the log file rel ("checkpoint" or a tile path of the
// log's height) for serving; any other path is an error wrapping
// fs.ErrNotExist.
func (l *Log) ReadFile(rel string) ([]byte, error) {
	max, ok := publishedSize(rel)
	if !ok {
		return nil, fmt.Errorf("%q: %w", rel, fs.ErrNotExist)
	}
	return safefile.ReadFile(filepath.Join(l.dir, filepath.FromSlash(rel)), max)
}

// publishedSize reports whether rel is the path of a file of a board
// log and the most bytes that file may have.
func publishedSize(rel string) (int64, bool) {
	if rel == "checkpoint" {
		return maxCheckpoint, true
	}
	t, err := tlog.ParseTilePath(rel)
	if err != nil || t.H != Height {
		return 0, false
	}
	if t.L == -1 {
		return int64(t.W) * (MaxEntry + 1), true
	}
	return int64(t.W) * tlog.HashSize, true
}

// Publish copies the log (its tiles, then its checkpoint) into the
// folder dir, each file written atomically, under the log's lock so that
// the copy is of one state, and returns the paths written
// (slash-separated, relative to dir). Files of dir from an earlier copy
// stay: readers of an older checkpoint need its tiles.
func (l *Log) Publish(ctx context.Context, dir string) ([]string, error) {
	unlock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var rels []string
	root := filepath.Join(l.dir, "tile")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(l.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, ok := publishedSize(rel); !ok || !d.Type().IsRegular() {
			return nil // a temporary file of an interrupted write, or a stranger
		}
		rels = append(rels, rel)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing logged yet
	}
	if err != nil {
		return nil, fmt.Errorf("board log %s: %v", l.dir, err)
	}
	rels = append(rels, "checkpoint")
	for _, rel := range rels {
		b, err := l.ReadFile(rel)
		if err != nil {
			return nil, fmt.Errorf("board log %s: %v", l.dir, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("cannot create %s: %v", filepath.Dir(p), err)
		}
		if err := atomicfile.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	return rels, nil
}
