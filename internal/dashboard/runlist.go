package dashboard

import (
	"context"

	"github.com/reprolab/repro/internal/report"
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

// RunLister lists the runs of a store, oldest first, filtered. Folders
// reads the run folders; a run index can stand in for it.
type RunLister interface {
	ListRuns(ctx context.Context, f Filter) ([]Entry, error)
}

// Folders lists the runs of the store at Home from their folders' records.
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
