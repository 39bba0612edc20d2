// Package dashboard serves a local, read-only web view of the runs of a
// store: the run list (filtered by kind, dataset and status), a run page
// (the run's report, see internal/report) and a compare page for two runs
// (the diff, see internal/rundiff).
//
// Everything shown comes from run folders and is untrusted: it reaches
// pages only through html/template, every page carries a Content Security
// Policy that allows no script, and run ids from URLs must have the form of
// a run id and name an existing run exactly. Only GET and HEAD are served.
//
// Access: on a loopback address the server answers only requests whose
// Host header names a loopback host (so a web page cannot reach it by
// rebinding its own name to 127.0.0.1). With a token (remote mode) every
// request must carry it, as the query parameter token (which sets a
// cookie and redirects to the same page without it) or as that cookie;
// the comparison takes constant time.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/rundiff"
)

//go:embed assets
var assets embed.FS

var (
	style = template.CSS(mustRead("assets/style.css"))
	pages = template.Must(template.New("").Funcs(template.FuncMap{
		"style": func() template.CSS { return style },
		"pct":   pct,
	}).ParseFS(assets, "assets/*.html.tmpl"))
)

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func pct(s string) string {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil || s == "" {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

// TokenCookie is the cookie that carries the access token.
const TokenCookie = "repro_dashboard_token"

// Server is the dashboard of the store at Home.
type Server struct {
	Home string
	// Runs lists the runs; nil means Index{Home}, with the index's
	// warnings to Log.
	Runs RunLister
	// Token, when set, is required on every request (remote mode).
	Token string
	// Loopback makes the server refuse requests whose Host header does
	// not name a loopback host.
	Loopback bool
	// Log receives one line per failed request; nil discards.
	Log *log.Logger
	// Reference gives the reference profile of a dataset's board; nil
	// means report.LoadReference of Home.
	Reference func(dataset string) *report.Reference
}

// NewToken returns a random access token (32 bytes, hex).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// policy is the Content Security Policy of every response: no script, no
// external anything, no framing, forms only to the dashboard itself.
const policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Handler returns the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /runs/{id}", s.run)
	mux.HandleFunc("GET /compare", s.compare)
	mux.HandleFunc("GET /board", s.board)
	mux.HandleFunc("GET /board/log/{dataset}/{file...}", s.boardLog)
	return s.guard(mux)
}

// guard applies the access rules and the security headers, and allows
// only GET and HEAD.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		if s.Loopback && !loopbackHost(r.Host) {
			http.Error(w, "this dashboard answers only requests for a loopback host", http.StatusMisdirectedRequest)
			return
		}
		if s.Token != "" {
			if q := r.URL.Query().Get("token"); q != "" {
				if !s.tokenOK(q) {
					http.Error(w, "wrong access token", http.StatusUnauthorized)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				u := *r.URL
				v := u.Query()
				v.Del("token")
				u.RawQuery = v.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			c, err := r.Cookie(TokenCookie)
			if err != nil || !s.tokenOK(c.Value) {
				http.Error(w, "this dashboard needs the access token printed by `repro serve`: open the URL it printed", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}

// loopbackHost reports whether a Host header names a loopback host.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return isLoopbackHost(strings.Trim(host, "[]"))
}

func (s *Server) lister() RunLister {
	if s.Runs != nil {
		return s.Runs
	}
	warn := func(string) {}
	if s.Log != nil {
		warn = func(w string) { s.Log.Print(w) }
	}
	return Index{Home: s.Home, Warn: warn}
}

// runID is the form of a run id in a URL (see internal/runs).
var runID = regexp.MustCompile(`^[a-z0-9-]{1,40}-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch exitcode.Of(err) {
	case exitcode.Usage:
		code = http.StatusNotFound
	case exitcode.Integrity:
		code = http.StatusUnprocessableEntity
	}
	if s.Log != nil {
		s.Log.Printf("%s %q: %v", r.Method, r.URL.Path, err)
	}
	s.page(w, code, "error.html.tmpl", map[string]any{"Code": code, "Message": err.Error()})
}

func (s *Server) page(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "failed to render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := Filter{Kind: q.Get("kind"), Dataset: q.Get("dataset"), Status: q.Get("status")}
	all, err := s.lister().ListRuns(r.Context(), Filter{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var shown []Entry
	kinds, datasets, statuses := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range all {
		kinds[e.Kind], datasets[e.Dataset], statuses[e.Status] = true, true, true
		if f.Match(e) {
			shown = append(shown, e)
		}
	}
	// Newest first.
	for i, j := 0, len(shown)-1; i < j; i, j = i+1, j-1 {
		shown[i], shown[j] = shown[j], shown[i]
	}
	s.page(w, http.StatusOK, "list.html.tmpl", map[string]any{
		"Filter": f, "Runs": shown, "Total": len(all),
		"Kinds": options(kinds), "Datasets": options(datasets), "Statuses": options(statuses),
	})
}

func options(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// exactRun checks that id has the form of a run id; the report and diff
// packages then open it, and a prefix that merely matches is refused.
func exactRun(id string) error {
	if !runID.MatchString(id) {
		return exitcode.Errorf(exitcode.Usage, "no run %q", id)
	}
	return nil
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "html"
	}
	if err := exactRun(id); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := report.CheckFormat(format); err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := report.BuildContext(r.Context(), s.Home, id)
	if err == nil && rep.Run.ID != id {
		err = exitcode.Errorf(exitcode.Usage, "no run %q", id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if format == "html" {
		err = report.WriteHTMLWithNav(&buf, rep, report.NavLink{Href: "/", Text: "← all runs"}, report.NavLink{Href: "/board", Text: "leaderboards"})
	} else {
		err = report.Write(&buf, rep, format)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch format {
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	case "md":
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	case "json":
		w.Header().Set("Content-Type", "application/json")
	}
	w.Write(buf.Bytes())
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	a, b := r.URL.Query().Get("a"), r.URL.Query().Get("b")
	if a == "" || b == "" {
		s.fail(w, r, exitcode.Errorf(exitcode.Usage, "pick two runs to compare (A and B) on the run list"))
		return
	}
	for _, id := range []string{a, b} {
		if err := exactRun(id); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	d, err := rundiff.BuildContext(r.Context(), s.Home, a, b)
	if err == nil && (d.A.ID != a || d.B.ID != b) {
		err = exitcode.Errorf(exitcode.Usage, "no such pair of runs")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.page(w, http.StatusOK, "compare.html.tmpl", d)
}

// Listen opens the dashboard's listener on addr after CheckAddr allows
// it. In loopback mode the address the listener got is checked again
// (a name such as localhost could resolve elsewhere).
func Listen(addr string, allowRemote bool) (net.Listener, bool, error) {
	loopback, err := CheckAddr(addr, allowRemote)
	if err != nil {
		return nil, false, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, exitcode.Errorf(exitcode.Precondition, "cannot listen on %q: %v; pick another --addr", addr, err)
	}
	if ta, ok := l.Addr().(*net.TCPAddr); loopback && (!ok || !ta.IP.IsLoopback()) {
		l.Close()
		return nil, false, exitcode.Errorf(exitcode.Usage, "--addr %q resolved to %s, not a loopback address", addr, l.Addr())
	}
	return l, loopback, nil
}

// Serve serves s on l until ctx ends, then shuts down gracefully: the
// requests in flight are cancelled first, so that a page still checking a
// run's files stops within a read of at most 1 MiB instead of holding the
// shutdown.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	requests, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return requests },
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          s.Log,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cancelRequests()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
