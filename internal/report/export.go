package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/reprolab/repro/internal/codebench"
	"github.com/reprolab/repro/internal/exitcode"
)

var navTmpl = template.Must(template.New("nav").Parse(`<p style="font:14px system-ui,sans-serif;border-bottom:1px solid #ccc;padding-bottom:.4em">` +
	`{{range $i, $l := .}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Text}}</a>{{end}}</p>` + "\n"))

// NavLink is a link of the bar WriteHTMLWithNav puts on a report.
type NavLink struct{ Href, Text string }

// WriteHTMLWithNav writes rep's HTML report with a bar of links back to
// the pages that lead to it at the top of its body.
func WriteHTMLWithNav(w io.Writer, rep *Report, links ...NavLink) error {
	var page, nav bytes.Buffer
	if err := Write(&page, rep, "html"); err != nil {
		return err
	}
	if err := navTmpl.Execute(&nav, links); err != nil {
		return err
	}
	// The report's page starts with a fixed head that no run value
	// reaches; the link goes right after its <body>.
	_, err := w.Write(bytes.Replace(page.Bytes(), []byte("<body>\n"), append([]byte("<body>\n"), nav.Bytes()...), 1))
	return err
}

// staticLinks link the pages of a static export: the board in every view
// and order, one file each, and one report per run. defaultKey is the
// board's rank key, whose descending order is index.html (all.html with
// every run); only those two draw the per-task matrix.
type staticLinks struct{ defaultKey string }

func (l staticLinks) Board(all bool, key, order string) string {
	if key == l.defaultKey && order == "desc" {
		if all {
			return "all.html"
		}
		return "index.html"
	}
	view := "newest"
	if all {
		view = "all"
	}
	return fmt.Sprintf("%s-by-%s-%s.html", view, strings.ReplaceAll(key, "@", "-at-"), order)
}

func (staticLinks) Run(id string) string       { return id + ".html" }
func (staticLinks) Compare(_, _ string) string { return "" }
func (staticLinks) Home() string               { return "" }

func (l staticLinks) MatrixElsewhere(b *Board) string {
	if b.Sort == l.defaultKey && b.Desc {
		return ""
	}
	return l.Board(b.All, l.defaultKey, "desc") + "#matrix"
}

// ExportBoard writes the board of dataset among the runs ids of home as
// static HTML through write (a file name and its bytes): index.html (the
// newest verified run per label, by rank), all.html (every run), a page
// per other view and order that the column headings link to, and
// <run id>.html, the report of each run on the board. It returns the names
// written. A dataset without a HumanEval run is a usage error.
func ExportBoard(home, dataset string, ids []string, write func(name string, data []byte) error) ([]string, error) {
	return ExportBoardWith(home, dataset, ids, codebench.LoadReference(home, dataset), write)
}

// ExportBoardWith is ExportBoard against the reference profile ref.
func ExportBoardWith(home, dataset string, ids []string, ref *codebench.Reference, write func(name string, data []byte) error) ([]string, error) {
	br := CollectBoardWith(home, dataset, ids, ref)
	if err := br.check(home, ids); err != nil {
		return nil, err
	}
	return exportBoard(br, write)
}

// check reports a board without runs as a usage error.
func (br *BoardRuns) check(home string, ids []string) error {
	if len(br.byLabel) == 0 {
		var names []string
		for _, d := range Datasets(home, ids) {
			names = append(names, d.Dataset)
		}
		return exitcode.Errorf(exitcode.Usage, "no HumanEval run of dataset %q here (datasets with runs: %s)", br.dataset, orNone(strings.Join(names, ", ")))
	}
	return nil
}

// exportBoard writes the pages of br (see ExportBoard).
func exportBoard(br *BoardRuns, write func(name string, data []byte) error) ([]string, error) {
	def, err := br.Board(BoardOptions{})
	if err != nil {
		return nil, err
	}
	links := staticLinks{defaultKey: def.Sort}
	keys := []string{"plus", "base"}
	for _, k := range br.passK {
		n := strings.TrimPrefix(k, "pass@")
		keys = append(keys, "plus@"+n, "base@"+n)
	}
	keys = append(keys, SortKeys...)
	var written []string
	put := func(name string, data []byte) error {
		if err := write(name, data); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	var everyRun *Board
	for _, all := range []bool{false, true} {
		for _, key := range keys {
			for _, order := range []string{"desc", "asc"} {
				b, err := br.Board(BoardOptions{All: all, Sort: key, Order: order})
				if err != nil {
					return written, err
				}
				var buf bytes.Buffer
				if err := WriteBoard(&buf, b, links); err != nil {
					return written, err
				}
				if err := put(links.Board(all, key, order), buf.Bytes()); err != nil {
					return written, err
				}
				everyRun = b
			}
		}
	}
	for _, r := range append(everyRun.Rows, everyRun.References...) {
		var buf bytes.Buffer
		if err := WriteHTMLWithNav(&buf, r.rep, NavLink{"index.html", "← leaderboard of " + truncate(br.dataset, 60)}); err != nil {
			return written, err
		}
		if err := put(links.Run(r.RunID), buf.Bytes()); err != nil {
			return written, err
		}
	}
	return written, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
