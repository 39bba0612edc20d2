package boardlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// Source is where a log's files are read from: a folder, or an http(s)
// address of a served or published board. Read returns at most max bytes
// of the file at rel (a slash-separated path such as "checkpoint" or a
// tile path); a file that is not there is an error wrapping
// fs.ErrNotExist, a longer one an error.
type Source interface {
	Read(ctx context.Context, rel string, max int64) ([]byte, error)
	// Sub is the source of the folder rel below this one.
	Sub(rel string) Source
	String() string
}

// OpenSource opens loc, a folder or an http(s) URL, as a log source. The
// log may be at loc itself (its checkpoint at loc/checkpoint) or, as a
// static export writes it, in loc/log. A missing folder is a precondition
// error.
func OpenSource(ctx context.Context, loc string) (Source, error) {
	var src Source
	if u, err := url.Parse(loc); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		jar, _ := cookiejar.New(nil)
		src = &httpSource{base: u, client: &http.Client{
			Timeout: httpTimeout,
			Jar:     jar, // a served board behind a token sets it as a cookie
			CheckRedirect: func(r *http.Request, via []*http.Request) error {
				if len(via) >= maxRedirects {
					return fmt.Errorf("more than %d redirects", maxRedirects)
				}
				if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
					return fmt.Errorf("redirect to a %s address", r.URL.Scheme)
				}
				return nil
			},
		}}
	} else {
		fi, err := os.Stat(loc)
		if err != nil || !fi.IsDir() {
			return nil, exitcode.Errorf(exitcode.Precondition, "log source %q is neither a folder nor an http(s) address", loc)
		}
		src = dirSource(loc)
	}
	if _, err := src.Read(ctx, "checkpoint", maxCheckpoint); errors.Is(err, fs.ErrNotExist) {
		sub := src.Sub("log")
		if _, err := sub.Read(ctx, "checkpoint", maxCheckpoint); err == nil {
			return sub, nil
		}
	}
	return src, nil
}

// dirSource reads a log from a folder.
type dirSource string

func (d dirSource) Read(_ context.Context, rel string, max int64) ([]byte, error) {
	if !validRel(rel) {
		return nil, fmt.Errorf("%q is not a path of a log file", rel)
	}
	return safefile.ReadFile(filepath.Join(string(d), filepath.FromSlash(rel)), max)
}

func (d dirSource) Sub(rel string) Source { return dirSource(filepath.Join(string(d), rel)) }
func (d dirSource) String() string        { return string(d) }

// validRel reports whether rel is a clean relative slash path.
func validRel(rel string) bool {
	return rel != "" && !strings.HasPrefix(rel, "/") && path.Clean(rel) == rel && rel != ".." && !strings.HasPrefix(rel, "../")
}

const (
	// httpTimeout bounds one download.
	httpTimeout = 60 * time.Second
	// maxRedirects bounds the redirects one download follows.
	maxRedirects = 5
)

// httpSource reads a log from an http(s) address. The address's query
// (a served board's ?token=) is kept on every request.
type httpSource struct {
	base   *url.URL
	client *http.Client
}

func (h *httpSource) Read(ctx context.Context, rel string, max int64) ([]byte, error) {
	if !validRel(rel) {
		return nil, fmt.Errorf("%q is not a path of a log file", rel)
	}
	u := h.base.JoinPath(rel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, &transportError{err}
	}
	defer resp.Body.Close()
	shown := *u
	shown.RawQuery = ""
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, fmt.Errorf("%s: %w (HTTP %d)", shown.String(), fs.ErrNotExist, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, &transportError{fmt.Errorf("%s: HTTP %s", shown.String(), resp.Status)}
	case resp.ContentLength > max:
		return nil, fmt.Errorf("%s is %d bytes, more than the %d it may be", shown.String(), resp.ContentLength, max)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &transportError{fmt.Errorf("%s: %v", shown.String(), err)}
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than the %d bytes it may be", shown.String(), max)
	}
	return b, nil
}

func (h *httpSource) Sub(rel string) Source {
	return &httpSource{base: h.base.JoinPath(rel), client: h.client}
}

func (h *httpSource) String() string {
	u := *h.base
	u.RawQuery = ""
	return u.String()
}

// transportError is a download that failed for a reason other than what
// the server sent (the network, a status other than 200 or 404): the log
// could not be read, which says nothing of its integrity.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }
