package boardlog

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// VerifyAt verifies the board log at source (a folder or an http(s)
// address, as OpenSource reads them) with the verifier key vkey (as
// NewVerifier reads it), for run (when not "") and against the checkpoint
// at since (when not ""): a checkpoint file, or an older copy of the log,
// a folder or address. See Verify.
//
// No key is exit 3 and a malformed one exit 2; a source or since that
// cannot be read is exit 3; a check that fails is exit 4 (Verify).
func VerifyAt(ctx context.Context, source, vkey, run, since string) (*Report, error) {
	if vkey == "" {
		return nil, exitcode.Errorf(exitcode.Precondition, "log verify needs --key, the log's verifier key: ask the board's maintainer (they print it with `repro log key`)")
	}
	v, err := NewVerifier(vkey)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	src, err := OpenSource(ctx, source)
	if err != nil {
		return nil, err
	}
	o := VerifyOptions{RunID: run}
	if since != "" {
		if o.Since, err = readCheckpoint(ctx, since); err != nil {
			return nil, err
		}
		o.SinceFrom = since
	}
	return Verify(ctx, src, v, o)
}

// readCheckpoint reads the signed checkpoint loc names: a checkpoint file,
// or a board log's folder or address.
func readCheckpoint(ctx context.Context, loc string) ([]byte, error) {
	if fi, err := os.Stat(loc); err == nil && fi.Mode().IsRegular() {
		b, err := safefile.ReadFile(loc, MaxCheckpoint)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "--since %q: %v", loc, err)
		}
		return b, nil
	}
	src, err := OpenSource(ctx, loc)
	if err != nil {
		return nil, err
	}
	b, err := src.Read(ctx, "checkpoint", MaxCheckpoint)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.Errorf(exitcode.Precondition, "--since %q holds no log checkpoint", loc)
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "--since %q: %v", loc, err)
	}
	return b, nil
}
