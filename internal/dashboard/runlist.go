package dashboard

import (
	"context"
	"sort"

	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
)

// Entry is one run of the run list.
type Entry struct {
	ID       string
	Kind     string
	Dataset  string
	Status   string // "unreadable" when the record cannot be read
	Finished string
	// Label is what the record says the run scored (internal/runlabel).
	Label string
}

// Filter selects runs; an empty field matches every run.
type Filter struct {
	Kind, Dataset, Status string
}

// Match reports whether e passes f.
func (f Filter) Match(e Entry) bool {
	return (f.Kind == "" || f.Kind == e.Kind) && (f.Dataset == "" || f.Dataset == e.Dataset) && (f.Status == "" || f.Status == e.Status)
}

// RunLister lists the runs of a store, oldest first, filtered. Index
// lists them through the store's run index, Folders from the run folders'
// records.
type RunLister interface {
	ListRuns(ctx context.Context, f Filter) ([]Entry, error)
}

// candidateLister is a RunLister that can also list runs without
// checking each entry against its record, for a page that checks every
// run it shows itself (the leaderboard verifies each one).
type candidateLister interface {
	RunLister
	candidates(ctx context.Context, f Filter) ([]Entry, error)
}

// Index lists the runs of the store at Home through its run index
// (internal/runindex, REPRO_HOME/index/runs.db), as `repro runs list`
// does: a cache of the run folders, reconciled with them on every list,
// each entry it returns checked against its record.json (so a list reads
// each record once), rebuilt when corrupt. When the index cannot be
// opened or queried, it lists through an index built in memory from the
// folders. Warn is told what the index reports (nil discards).
type Index struct {
	Home string
	Warn func(string)
}

var _ candidateLister = Index{}

// ListRuns implements RunLister.
func (ix Index) ListRuns(ctx context.Context, f Filter) ([]Entry, error) {
	// The kind filters in the query; the status and dataset as below,
	// where an unreadable run has no kind and the status "unreadable".
	es, err := runindex.ListHome(ctx, ix.Home, runindex.ListRequest{Filter: runindex.Filter{Kind: f.Kind}}, ix.Warn)
	return entries(es, err, f)
}

// candidates lists what the index holds (runindex.EntriesHome), without
// reading the records.
func (ix Index) candidates(ctx context.Context, f Filter) ([]Entry, error) {
	es, err := runindex.EntriesHome(ctx, ix.Home, runindex.Filter{Kind: f.Kind}, ix.Warn)
	return entries(es, err, f)
}

// entries are the run list's entries of what the index returned, oldest
// first, that pass f.
func entries(es []runindex.Entry, err error, f Filter) ([]Entry, error) {
	if err != nil {
		return nil, err
	}
	// Oldest first, in the order of the run folders (runs.List).
	sort.Slice(es, func(i, j int) bool { return runs.Before(es[i].ID, es[j].ID) })
	out := []Entry{}
	for _, ie := range es {
		e := Entry{ID: ie.ID, Status: "unreadable"}
		if ie.Status != runindex.StatusUnreadable && ie.Status != runindex.StatusIncomplete {
			e = Entry{ID: ie.ID, Kind: ie.Kind, Dataset: ie.Dataset, Status: ie.Status, Finished: ie.Finished.Format("2006-01-02 15:04:05Z"), Label: ie.Label}
		}
		if f.Match(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Folders lists the runs of the store at Home from their folders'
// records, reading each one.
type Folders struct{ Home string }

var _ RunLister = Folders{}

// ListRuns implements RunLister.
func (fs Folders) ListRuns(ctx context.Context, f Filter) ([]Entry, error) {
	ids, err := runs.List(fs.Home)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := Entry{ID: id, Status: "unreadable"}
		if r, err := runs.Open(fs.Home, id); err == nil {
			if rec, _, err := r.ReadRecord(); err == nil {
				e = Entry{ID: id, Kind: rec.Kind, Dataset: report.DatasetOf(rec), Status: rec.Status, Finished: rec.FinishedAt.Format("2006-01-02 15:04:05Z"),
					Label: rec.Subject.Label}
			}
		}
		if f.Match(e) {
			out = append(out, e)
		}
	}
	return out, nil
}
