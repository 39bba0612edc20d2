package boardlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// maxHashTile and maxDataTile bound the tiles a reader accepts.
const (
	maxHashTile = (1 << Height) * tlog.HashSize
	maxDataTile = (1 << Height) * (MaxEntry + 1)
)

// tileReader reads hash tiles from a source for tlog.TileHashReader,
// which checks every tile it is given against the signed tree; the
// bytes are kept (unchecked) so that a tile is downloaded once.
type tileReader struct {
	ctx   context.Context
	src   Source
	cache map[tlog.Tile][]byte
}

func (r *tileReader) Height() int { return Height }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		if b, ok := r.cache[t]; ok {
			out[i] = b
			continue
		}
		if t.H != Height || t.L < 0 || t.W < 1 || t.W > 1<<Height {
			return nil, fmt.Errorf("tile %s is not a tile of a board log", t.Path())
		}
		want := t.W * tlog.HashSize
		b, err := r.src.Read(r.ctx, t.Path(), int64(want))
		if err != nil {
			return nil, fmt.Errorf("tile %s: %w", t.Path(), err)
		}
		if len(b) != want {
			return nil, fmt.Errorf("tile %s is %d bytes, want %d", t.Path(), len(b), want)
		}
		r.cache[t] = b
		out[i] = b
	}
	return out, nil
}

func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// view is a log as one signed checkpoint states it, read from a source:
// every hash its reader returns is proven to be in that tree.
type view struct {
	src Source
	cp  Checkpoint
	hr  tlog.HashReader
}

// openView reads and checks the checkpoint of src with v. No checkpoint
// at all is a precondition error; one that does not verify an integrity
// error.
func openView(ctx context.Context, src Source, v note.Verifier) (*view, error) {
	raw, err := src.Read(ctx, "checkpoint", maxCheckpoint)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.Errorf(exitcode.Precondition, "no log checkpoint at %s: name the folder or address of a board exported by `repro report --leaderboard` (its log/ folder) or served by `repro serve` (/board/log/DATASET)", src)
	}
	if err != nil {
		return nil, classify(fmt.Errorf("log checkpoint at %s: %w", src, err))
	}
	cp, err := OpenCheckpoint(raw, v)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "log checkpoint at %s: %v", src, err)
	}
	tr := &tileReader{ctx: ctx, src: src, cache: map[tlog.Tile][]byte{}}
	return &view{src: src, cp: cp, hr: tlog.TileHashReader(cp.Tree, tr)}, nil
}

// entries reads every entry of the view's tree from its data tiles and
// checks each against its leaf hash in the signed tree: an entry changed,
// removed, added or moved makes this fail. It returns the entries' texts
// and their parsed form, in log order.
func (lv *view) entries(ctx context.Context) ([][]byte, []Entry, error) {
	n := lv.cp.Tree.N
	texts := make([][]byte, 0, n)
	entries := make([]Entry, 0, n)
	for start := int64(0); start < n; start += 1 << Height {
		w := int(min(n-start, 1<<Height))
		t := tlog.Tile{H: Height, L: -1, N: start >> Height, W: w}
		data, err := lv.src.Read(ctx, t.Path(), maxDataTile)
		if err != nil {
			return nil, nil, fmt.Errorf("data tile %s: %w", t.Path(), err)
		}
		recs, err := splitDataTile(data, w)
		if err != nil {
			return nil, nil, fmt.Errorf("data tile %s: %v", t.Path(), err)
		}
		idx := make([]int64, w)
		for i := range idx {
			idx[i] = tlog.StoredHashIndex(0, start+int64(i))
		}
		leaves, err := lv.hr.ReadHashes(idx)
		if err != nil {
			return nil, nil, fmt.Errorf("hash tiles for entries %d to %d: %w", start, start+int64(w)-1, err)
		}
		for i, text := range recs {
			if tlog.RecordHash(text) != leaves[i] {
				return nil, nil, fmt.Errorf("entry %d in data tile %s is not the entry the checkpoint's tree holds there", start+int64(i), t.Path())
			}
			e, err := ParseEntry(text)
			if err != nil {
				return nil, nil, fmt.Errorf("entry %d: %v", start+int64(i), err)
			}
			if strings.ToLower(e.Dataset) != lv.cp.Name() {
				return nil, nil, fmt.Errorf("entry %d (run %s) is of dataset %q, not of this log's %q", start+int64(i), e.RunID, e.Dataset, lv.cp.Name())
			}
			texts = append(texts, text)
			entries = append(entries, e)
		}
	}
	return texts, entries, nil
}

// classify gives err its exit code: a download that failed for a reason
// of its own is a precondition (the log could not be read); anything the
// source sent that does not check out is an integrity failure.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*exitcode.Error](err); ok {
		return err
	}
	if _, ok := errors.AsType[*transportError](err); ok {
		return exitcode.New(exitcode.Precondition, err)
	}
	return exitcode.New(exitcode.Integrity, err)
}
