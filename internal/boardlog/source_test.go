package boardlog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
)

// TestHTTPSourceBoundsEveryRead: a server that sends more than a file of
// a log may hold, declared or streamed without end, or that redirects out
// of http(s), gets an error, not an unbounded read; a tile that is not
// there is an integrity failure, a server error a precondition one.
func TestHTTPSourceBoundsEveryRead(t *testing.T) {
	home := t.TempDir()
	l, _ := appendTo(t, home, entries(0, 3))
	v := verifierOf(t, home)
	pub := t.TempDir()
	if _, err := l.Publish(context.Background(), pub); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/good/", http.StripPrefix("/good/", http.FileServer(http.Dir(pub))))
	mux.HandleFunc("/declared/checkpoint", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000000")
		w.Write([]byte("x"))
	})
	mux.HandleFunc("/endless/checkpoint", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("A", 64<<10))
		for i := 0; i < 1024; i++ { // 64 MiB unless the reader stops
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	})
	mux.HandleFunc("/redirect/checkpoint", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/broken/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/checkpoint") {
			http.ServeFile(w, r, filepath.Join(pub, "checkpoint"))
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/missing/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/checkpoint") {
			http.ServeFile(w, r, filepath.Join(pub, "checkpoint"))
			return
		}
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	for path, want := range map[string]exitcode.Code{
		"/good/":     exitcode.OK,
		"/declared/": exitcode.Integrity,
		"/endless/":  exitcode.Integrity,
		"/redirect/": exitcode.Precondition,
		"/broken/":   exitcode.Precondition,
		"/missing/":  exitcode.Integrity,
	} {
		src, err := OpenSource(ctx, srv.URL+path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_, err = Verify(ctx, src, v, VerifyOptions{})
		if got := exitcode.Of(err); got != want {
			t.Errorf("%s: %v (exit %d), want exit %d", path, err, got, want)
		}
	}
	if sent.Load() > 8<<20 {
		t.Errorf("the reader took %d bytes of an endless checkpoint", sent.Load())
	}
	if _, err := OpenSource(ctx, filepath.Join(t.TempDir(), "nothing")); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("a missing folder: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := OpenSource(ctx, f); exitcode.Of(err) != exitcode.Precondition {
		t.Errorf("a file as the source: %v", err)
	}
}
