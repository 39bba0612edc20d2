package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
)

// VerifyResult is the outcome of re-hashing one stored asset.
type VerifyResult struct {
	ID          string        `json:"id"`
	SHA256      digest.SHA256 `json:"sha256"`
	Size        int64         `json:"size"`
	OK          bool          `json:"ok"`
	Quarantined string        `json:"quarantined,omitempty"`
	Error       string        `json:"error,omitempty"`
}

// Verify re-hashes the stored blobs of ids (every stored id when ids is
// empty). A corrupt blob is moved to REPRO_HOME/quarantine, its ref is
// removed, and it is reported; nothing is deleted. The returned error is an
// exitcode.Integrity error when any blob was corrupt. When ctx is done it
// stops between reads and returns ctx's error, quarantining nothing more.
func (s *Store) Verify(ctx context.Context, ids []string) ([]VerifyResult, error) {
	if len(ids) == 0 {
		refs, err := s.Refs()
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			ids = append(ids, r.ID)
		}
	}
	var out []VerifyResult
	var bad []string
	for _, id := range ids {
		e, err := s.pinnedFile(id)
		if err != nil {
			return out, err
		}
		r := VerifyResult{ID: id, SHA256: *e.SHA256, Size: e.Size}
		err = s.verifyBlob(ctx, e)
		switch {
		case err == nil:
			r.OK = true
		case ctx.Err() != nil:
			return out, ctx.Err()
		case exitcode.Of(err) == exitcode.Precondition:
			return out, err
		default:
			bad = append(bad, id)
			r.Error = err.Error()
			q, qerr := s.quarantine(e)
			if qerr != nil {
				r.Error += "; " + qerr.Error()
			}
			r.Quarantined = q
		}
		out = append(out, r)
	}
	if len(bad) > 0 {
		return out, exitcode.Errorf(exitcode.Integrity, "%d of %d stored assets are corrupt and were quarantined (%s); fetch them again with `repro fetch`", len(bad), len(out), strings.Join(bad, ", "))
	}
	return out, nil
}

func (s *Store) verifyBlob(ctx context.Context, e catalog.Entry) error {
	f, err := s.openBlob(e)
	if err != nil {
		return err
	}
	defer f.Close()
	got, n, err := digest.ReaderFrom(contextReader{ctx, f})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return exitcode.Errorf(exitcode.Integrity, "asset %s: failed to read its blob: %v", e.ID, err)
	}
	return checkPin(e, got, n)
}

// contextReader ends a long read with ctx's error once ctx is done.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// quarantine moves a corrupt blob aside and drops its ref. It returns the
// new path.
func (s *Store) quarantine(e catalog.Entry) (string, error) {
	src := s.blobPath(*e.SHA256)
	dst := s.dir.Quarantined(e.SHA256.Hex(), time.Now().UnixNano())
	if err := os.Rename(src, dst); err != nil {
		return "", fmt.Errorf("asset %s: failed to quarantine corrupt blob: %w", e.ID, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(src)); err != nil {
		return dst, err
	}
	if err := os.Remove(s.refPath(e.ID)); err != nil && !os.IsNotExist(err) {
		return dst, err
	}
	return dst, nil
}
