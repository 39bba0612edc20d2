package dashboard

import (
	"bytes"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/report"
)

// boardLinks are the dashboard's addresses of a board's links.
type boardLinks struct{ dataset string }

func (l boardLinks) Board(all bool, key, order string) string {
	v := url.Values{"dataset": {l.dataset}, "sort": {key}, "order": {order}}
	if all {
		v.Set("all", "1")
	}
	return "/board?" + v.Encode()
}

func (boardLinks) Run(id string) string { return "/runs/" + url.PathEscape(id) }

func (boardLinks) Compare(a, b string) string {
	return "/compare?" + url.Values{"a": {a}, "b": {b}}.Encode()
}

func (boardLinks) Home() string                         { return "/" }
func (boardLinks) MatrixElsewhere(*report.Board) string { return "" }

// board serves /board: the list of datasets with HumanEval runs, or with
// ?dataset=NAME the leaderboard of that dataset (sort, order and all=1
// choose the view; see report.BoardOptions). Every run on it is verified
// for the request, which reads its record.json once.
func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dataset := q.Get("dataset")
	if dataset == "" {
		all, err := s.lister().ListRuns(r.Context(), Filter{Kind: "humaneval"})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		n := map[string]int{}
		for _, e := range all {
			if e.Dataset != "" {
				n[e.Dataset]++
			}
		}
		var sets []report.DatasetRuns
		for d, c := range n {
			sets = append(sets, report.DatasetRuns{Dataset: d, Runs: c})
		}
		sort.Slice(sets, func(i, j int) bool { return sets[i].Dataset < sets[j].Dataset })
		s.page(w, http.StatusOK, "boards.html.tmpl", sets)
		return
	}
	// The board verifies every run it shows, and so reads each record
	// once: a lister that can leave that read to it does.
	list := s.lister().ListRuns
	if c, ok := s.lister().(candidateLister); ok {
		list = c.candidates
	}
	all, err := list(r.Context(), Filter{Kind: "humaneval"})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var ids []string
	for _, e := range all {
		if strings.EqualFold(e.Dataset, dataset) {
			ids = append(ids, e.ID)
		}
	}
	ref := report.LoadReference
	if s.Reference != nil {
		ref = func(_, d string) *report.Reference { return s.Reference(d) }
	}
	br, err := report.CollectBoardOf(r.Context(), s.Home, dataset, ids, ref(s.Home, dataset))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := br.Board(report.BoardOptions{All: q.Get("all") == "1", Sort: q.Get("sort"), Order: q.Get("order")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := report.WriteBoard(&buf, b, boardLinks{dataset: b.Dataset}); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}
