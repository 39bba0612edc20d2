package runindex

import (
	"context"
	"fmt"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runlabel"
)

// ListRequest is what `repro runs list` asks for: a Filter, and the
// filter values still as the text the command line gave ("" for none).
type ListRequest struct {
	Filter Filter
	// Digest is parsed by ParseDigestPrefix into Filter.Digest.
	Digest string
	// Since and Until are parsed by ParseDate into Filter.Since and
	// Filter.Until (Until's day included).
	Since, Until string
	// Sampling is parsed by runlabel.ParseSampling into Filter.Sampling.
	Sampling string
}

// ListHome returns the runs of home that req selects, newest first, as
// Index.List does. A negative limit, or a digest prefix, date or sampling
// that does not parse, is a usage error (exit 2), checked in that order
// before anything is read. When the index cannot be opened or queried,
// ListHome says so through warn and lists through an index built in memory
// from the folders (OpenFromFolders): the index is a cache, and the folders
// can still be listed. warn also receives what Open and List report.
func ListHome(ctx context.Context, home string, req ListRequest, warn func(string)) ([]Entry, error) {
	f := req.Filter
	if f.Limit < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "--limit %d: give 0 (all runs) or more", f.Limit)
	}
	var err error
	if req.Digest != "" {
		if f.Digest, err = ParseDigestPrefix(req.Digest); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--digest: %v", err)
		}
	}
	if req.Since != "" {
		if f.Since, err = ParseDate(req.Since, false); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--since: %v", err)
		}
	}
	if req.Until != "" {
		if f.Until, err = ParseDate(req.Until, true); err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "--until: %v", err)
		}
	}
	if f.Sampling, err = runlabel.ParseSampling(req.Sampling); err != nil {
		return nil, err
	}
	return queryHome(ctx, home, warn, func(ix *Index) ([]Entry, error) { return ix.List(ctx, f) })
}

// EntriesHome returns the runs of home that f selects, newest first, as
// the index holds them (Index.Entries: their records are not read again),
// for a caller that verifies every run it uses itself and so reads each
// record once. When the index cannot be opened or queried it falls back
// to an index built in memory from the folders, as ListHome does, and
// warn receives the same reports.
func EntriesHome(ctx context.Context, home string, f Filter, warn func(string)) ([]Entry, error) {
	return queryHome(ctx, home, warn, func(ix *Index) ([]Entry, error) { return ix.Entries(ctx, f) })
}

// queryHome runs query on the index of home, or, when the index cannot be
// opened or queried (and ctx is not done), says so through warn and runs
// it on an index built in memory from the run folders. A nil warn
// discards what it would be told.
func queryHome(ctx context.Context, home string, warn func(string), query func(*Index) ([]Entry, error)) ([]Entry, error) {
	if warn == nil {
		warn = func(string) {}
	}
	ix, err := Open(ctx, home, warn)
	if err == nil {
		rows, lerr := query(ix)
		ix.Close()
		if lerr == nil || ctx.Err() != nil {
			return rows, lerr
		}
		err = lerr
	}
	if ctx.Err() != nil {
		return nil, err
	}
	warn(fmt.Sprintf("the run index cannot be used (%v); listing from the run folders without it", err))
	mem, err := OpenFromFolders(ctx, home, warn)
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	return query(mem)
}

// Reindex deletes the index of home and builds it again from the run
// folders alone (Rebuild), and returns the number of runs indexed. warn
// receives what Open reports.
func Reindex(ctx context.Context, home string, warn func(string)) (int, error) {
	ix, err := Open(ctx, home, warn)
	if err != nil {
		return 0, err
	}
	defer ix.Close()
	return ix.Rebuild(ctx)
}
