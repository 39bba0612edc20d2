package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/testenv"
)

// fixture is one served file and a catalog pinning it.
type fixture struct {
	data []byte
	srv  *httptest.Server
	hits atomic.Int64
	// handler serves /file; it defaults to serving data with Range support.
	handler http.HandlerFunc
}

func newFixture(t testing.TB, size int) *fixture {
	t.Helper()
	f := &fixture{data: make([]byte, size)}
	rand.Read(f.data)
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		switch r.URL.Path {
		case "/file":
			if f.handler != nil {
				f.handler(w, r)
				return
			}
			http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(f.data))
		case "/redirect":
			http.Redirect(w, r, "/file", http.StatusFound)
		case "/404":
			http.NotFound(w, r)
		case "/500":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) entry(path string) catalog.Entry {
	sum := digest.Of(f.data)
	return catalog.Entry{ID: "test-asset", Kind: catalog.Dataset, Description: "test", License: "none",
		URLs: []string{f.srv.URL + path}, Filename: "file", Size: int64(len(f.data)), SHA256: &sum, Pin: catalog.Pinned}
}

func openTestStore(t testing.TB, entries ...catalog.Entry) *Store {
	t.Helper()
	cat, err := catalog.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.TempDir(), cat)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) opts() FetchOptions {
	return FetchOptions{Client: f.srv.Client(), StallTimeout: 2 * time.Second, Retries: 2}
}

// assertNoBlob checks that nothing but complete verified blobs ever reached
// the blob folder and that no ref names the asset.
func assertNoBlob(t *testing.T, s *Store) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(s.home, "blobs", "sha256"))
	if len(ents) != 0 {
		t.Fatalf("blob folder holds %d files after a failed fetch", len(ents))
	}
	if _, err := os.Stat(s.refPath("test-asset")); err == nil {
		t.Fatal("a ref was written for a failed fetch")
	}
}

func assertStored(t *testing.T, s *Store, want []byte) {
	t.Helper()
	f, err := s.OpenVerified(context.Background(), "test-asset")
	if err != nil {
		t.Fatalf("OpenVerified: %v", err)
	}
	defer f.Close()
	got, _ := io.ReadAll(f)
	if !bytes.Equal(got, want) {
		t.Fatal("stored bytes differ from served bytes")
	}
	fi, _ := os.Stat(s.blobPath(digest.Of(want)))
	if fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("blob is writable: %v", fi.Mode())
	}
}

func assertErr(t *testing.T, err error, code exitcode.Code, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error")
	}
	if got := exitcode.Of(err); got != code {
		t.Fatalf("exit code %d (%v), want %d: %v", got, got, code, err)
	}
	for _, p := range append(parts, "test-asset") {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans several lines: %q", err)
	}
}

func TestFetchGood(t *testing.T) {
	f := newFixture(t, 300<<10)
	s := openTestStore(t, f.entry("/file"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
	// A second fetch re-verifies the blob and does not download again.
	hits := f.hits.Load()
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	if f.hits.Load() != hits {
		t.Fatal("second fetch downloaded again")
	}
}

func TestFetchRedirect(t *testing.T) {
	f := newFixture(t, 10<<10)
	s := openTestStore(t, f.entry("/redirect"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
}

func TestFetchHTTPErrors(t *testing.T) {
	for _, path := range []string{"/404", "/500"} {
		t.Run(path, func(t *testing.T) {
			f := newFixture(t, 1000)
			s := openTestStore(t, f.entry(path))
			err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
			assertErr(t, err, exitcode.Negative, strings.TrimPrefix(path, "/"))
			assertNoBlob(t, s)
		})
	}
}

func TestFetchTruncatedBody(t *testing.T) {
	f := newFixture(t, 100<<10)
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(f.data)-100))
		w.Write(f.data[:len(f.data)-100])
	}
	s := openTestStore(t, f.entry("/file"))
	err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
	assertErr(t, err, exitcode.Integrity, "size mismatch")
	assertNoBlob(t, s)
}

func TestFetchWrongBytesRightSize(t *testing.T) {
	f := newFixture(t, 50<<10)
	bad := bytes.Clone(f.data)
	bad[len(bad)/2] ^= 1
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(bad))
	}
	s := openTestStore(t, f.entry("/file"))
	err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
	assertErr(t, err, exitcode.Integrity, "sha256 mismatch", digest.Of(f.data).Hex(), digest.Of(bad).Hex())
	assertNoBlob(t, s)
	if ents, _ := os.ReadDir(filepath.Join(s.home, "tmp")); len(ents) != 0 {
		t.Fatal("wrong bytes left behind in tmp")
	}
}

func TestFetchWrongSize(t *testing.T) {
	f := newFixture(t, 50<<10)
	long := append(bytes.Clone(f.data), 'x')
	for name, h := range map[string]http.HandlerFunc{
		"declared": func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(long))
		},
		"chunked": func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // no Content-Length: the overlong body is caught while reading
			w.Write(long)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f.handler = h
			s := openTestStore(t, f.entry("/file"))
			err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
			assertErr(t, err, exitcode.Integrity, "size mismatch")
			assertNoBlob(t, s)
		})
	}
}

// sendAndDrop answers 200 with a Content-Length of size, sends part and
// drops the connection.
func sendAndDrop(w http.ResponseWriter, size int, part []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(size))
	w.WriteHeader(http.StatusOK)
	w.Write(part)
	w.(http.Flusher).Flush()
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// TestFetchResumesAfterDrop drops the connection mid-body on the first
// request; the fetch resumes with a Range request and stores the blob.
func TestFetchResumesAfterDrop(t *testing.T) {
	f := newFixture(t, 512<<10)
	var ranges []string
	var mu sync.Mutex
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		first := len(ranges) == 1
		mu.Unlock()
		if first {
			sendAndDrop(w, len(f.data), f.data[:200<<10])
			return
		}
		http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(f.data))
	}
	s := openTestStore(t, f.entry("/file"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
	if len(ranges) != 2 || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Fatalf("expected a resumed range request, got %q", ranges)
	}
}

func TestFetchStallDeadline(t *testing.T) {
	f := newFixture(t, 64<<10)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(f.data)))
		w.WriteHeader(http.StatusOK)
		w.Write(f.data[:1000])
		w.(http.Flusher).Flush()
		select { // stall until the test ends or the client gives up
		case <-release:
		case <-r.Context().Done():
		}
	}
	s := openTestStore(t, f.entry("/file"))
	opt := f.opts()
	opt.StallTimeout = 300 * time.Millisecond
	opt.Retries = 1
	err := s.Fetch(context.Background(), []string{"test-asset"}, opt)
	assertErr(t, err, exitcode.Negative, "stalled")
	assertNoBlob(t, s)
}

func TestConcurrentFetchOneDownload(t *testing.T) {
	f := newFixture(t, 2<<20)
	var full atomic.Int64
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") == "" {
			full.Add(1)
		}
		time.Sleep(300 * time.Millisecond) // keep the lock held while the other waits
		http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(f.data))
	}
	e := f.entry("/file")
	s1 := openTestStore(t, e)
	s2, err := Open(s1.home, s1.cat) // a second handle on the same home, as a second process has
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("fetches failed: %v / %v", errs[0], errs[1])
	}
	if full.Load() != 1 {
		t.Fatalf("%d downloads, want 1", full.Load())
	}
	assertStored(t, s1, f.data)
}

func TestCorruptBlobQuarantined(t *testing.T) {
	f := newFixture(t, 100<<10)
	s := openTestStore(t, f.entry("/file"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	p := s.blobPath(digest.Of(f.data))
	os.Chmod(p, 0o644)
	b, _ := os.ReadFile(p)
	b[10] ^= 0xff
	os.WriteFile(p, b, 0o444)

	if _, err := s.OpenVerified(context.Background(), "test-asset"); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("OpenVerified on a corrupt blob: %v", err)
	}
	if _, err := s.OpenSealed(context.Background(), "test-asset"); exitcode.Of(err) != exitcode.Integrity {
		t.Fatalf("OpenSealed on a corrupt blob: %v", err)
	}
	res, err := s.Verify(context.Background(), nil)
	assertErr(t, err, exitcode.Integrity, "corrupt")
	if len(res) != 1 || res[0].OK || res[0].Quarantined == "" {
		t.Fatalf("verify results: %+v", res)
	}
	q, err := os.ReadFile(res[0].Quarantined)
	if err != nil || !bytes.Equal(q, b) {
		t.Fatal("quarantined blob is not the corrupt file")
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("corrupt blob still in place")
	}
	if _, err := s.OpenVerified(context.Background(), "test-asset"); exitcode.Of(err) != exitcode.Precondition {
		t.Fatalf("after quarantine: %v", err)
	}
	// Fetching again stores a good blob.
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
}

// TestCancelledReadsStop checks that Verify, OpenVerified and OpenSealed
// stop on a done context with its error, and that a cancelled Verify
// quarantines nothing (a stopped read is not a corrupt blob).
func TestCancelledReadsStop(t *testing.T) {
	f := newFixture(t, 100<<10)
	s := openTestStore(t, f.entry("/file"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.OpenVerified(ctx, "test-asset"); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenVerified with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := s.OpenSealed(ctx, "test-asset"); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenSealed with a cancelled context: %v; want context.Canceled", err)
	}
	res, err := s.Verify(ctx, nil)
	if !errors.Is(err, context.Canceled) || len(res) != 0 {
		t.Errorf("Verify with a cancelled context: %+v, %v; want no result and context.Canceled", res, err)
	}
	if q, _ := os.ReadDir(filepath.Join(s.home, "quarantine")); len(q) != 0 {
		t.Errorf("a cancelled Verify quarantined %d blobs", len(q))
	}
	assertStored(t, s, f.data)
}

func TestSealed(t *testing.T) {
	f := newFixture(t, 64<<10)
	s := openTestStore(t, f.entry("/file"))
	if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
		t.Fatal(err)
	}
	sealed, err := s.OpenSealed(context.Background(), "test-asset")
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.Close()
	if err := CheckSealed(sealed.File); err != nil {
		t.Fatal(err)
	}
	if _, err := sealed.File.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("write to a sealed file succeeded")
	}
	if err := sealed.File.Truncate(1); err == nil {
		t.Fatal("truncate of a sealed file succeeded")
	}
	got, _ := io.ReadAll(sealed.File)
	if !bytes.Equal(got, f.data) || sealed.SHA256 != digest.Of(f.data) {
		t.Fatal("sealed bytes differ")
	}
	plain, _ := os.Open(s.blobPath(digest.Of(f.data)))
	defer plain.Close()
	if CheckSealed(plain) == nil {
		t.Fatal("CheckSealed accepted a plain file")
	}
}

func TestImport(t *testing.T) {
	f := newFixture(t, 20<<10)
	s := openTestStore(t, f.entry("/file"))
	good := filepath.Join(t.TempDir(), "good")
	os.WriteFile(good, f.data, 0o644)
	bad := filepath.Join(t.TempDir(), "bad")
	wrong := bytes.Clone(f.data)
	wrong[len(wrong)-1] ^= 0xff // always differs (random data may already end in any given byte)
	os.WriteFile(bad, wrong, 0o644)

	assertErr(t, s.Import(context.Background(), "test-asset", bad, nil), exitcode.Integrity, "sha256 mismatch")
	assertNoBlob(t, s)
	assertErr(t, s.Import(context.Background(), "test-asset", t.TempDir(), nil), exitcode.Usage, "not a regular file")
	assertErr(t, s.Import(context.Background(), "test-asset", filepath.Join(t.TempDir(), "missing"), nil), exitcode.Precondition, "cannot open")
	if err := s.Import(context.Background(), "test-asset", good, nil); err != nil {
		t.Fatal(err)
	}
	assertStored(t, s, f.data)
}

func TestUnpinnedFailsClosed(t *testing.T) {
	e := catalog.Entry{ID: "test-asset", Kind: catalog.Checkpoint, Description: "x", License: "x", URLs: []string{"https://127.0.0.1:1/x"}, Pin: catalog.Unpinned}
	s := openTestStore(t, e)
	err := s.Fetch(context.Background(), []string{"test-asset"}, FetchOptions{})
	assertErr(t, err, exitcode.Precondition, "unpinned", "repro catalog review")
	_, err = s.OpenVerified(context.Background(), "test-asset")
	assertErr(t, err, exitcode.Precondition, "unpinned")
}

// TestFetchDiskFull fetches into a store on a 1 MiB tmpfs. It needs root to
// mount; CI runs as root.
func TestFetchDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := mountTmpfs(dir, "size=1m"); err != nil {
		testenv.Missing(t, "a tmpfs mount", fmt.Sprintf("run as root to mount one: %v", err))
	}
	t.Cleanup(func() { unmount(dir) })
	f := newFixture(t, 3<<20)
	cat, _ := catalog.New([]catalog.Entry{f.entry("/file")})
	s, err := Open(dir, cat)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Fetch(context.Background(), []string{"test-asset"}, f.opts())
	assertErr(t, err, exitcode.Negative, "full")
	assertNoBlob(t, s)
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Fatal("partial download left on the full disk")
	}
}

// TestEventPhasesOnTheWire keeps the phase names that --json progress lines
// carry: they are a documented contract, whatever the Go names.
func TestEventPhasesOnTheWire(t *testing.T) {
	for p, want := range map[Phase]string{PhaseWait: "wait", PhaseStart: "start", PhaseProgress: "progress",
		PhaseRetry: "retry", PhaseStored: "stored", PhaseCached: "cached", PhaseFailed: "failed"} {
		b, err := json.Marshal(Event{ID: "x", Phase: p})
		if err != nil || !strings.Contains(string(b), `"phase":"`+want+`"`) {
			t.Errorf("%v encodes as %s (%v); want phase %q", p, b, err, want)
		}
	}
}

// TestResumeStaysWithinOneSource: a mirror sends half of wrong bytes and
// drops the connection, every time it is asked. The next source, honest,
// must be asked for the whole file, not for the rest of the mirror's
// bytes (which would fail the hash and blame it), and the fetch succeeds.
// A partial file left by an earlier run from another source, or with no
// record of its source, is started over too.
func TestResumeStaysWithinOneSource(t *testing.T) {
	f := newFixture(t, 256<<10)
	var ranges []string
	var mu sync.Mutex
	f.handler = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		http.ServeContent(w, r, "file", time.Time{}, bytes.NewReader(f.data))
	}
	wrong := bytes.Repeat([]byte{0xee}, len(f.data)/2)
	hostile := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sendAndDrop(w, len(f.data), wrong)
	}))
	t.Cleanup(hostile.Close)
	s := openTestStore(t, f.entry("/file"))
	opt := f.opts()
	opt.Mirrors = []string{hostile.URL}
	if err := s.Fetch(context.Background(), []string{"test-asset"}, opt); err != nil {
		t.Fatalf("the honest source after a hostile mirror: %v", err)
	}
	assertStored(t, s, f.data)
	if len(ranges) != 1 || ranges[0] != "" {
		t.Fatalf("the honest source was asked for ranges %q, want the whole file once", ranges)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.home, "tmp")); len(ents) != 0 {
		t.Fatalf("tmp holds %d files after the fetch", len(ents))
	}

	// Left by an earlier run: half of wrong bytes, from another source or
	// of unknown source.
	for _, owner := range []string{"", sourceTag(hostile.URL + "/file")} {
		s := openTestStore(t, f.entry("/file"))
		hex := digest.Of(f.data).Hex()
		os.MkdirAll(filepath.Join(s.home, "tmp"), 0o700)
		os.WriteFile(s.dir.Partial(hex), wrong, 0o600)
		if owner != "" {
			os.WriteFile(s.dir.PartialSource(hex), []byte(owner), 0o600)
		}
		ranges = nil
		if err := s.Fetch(context.Background(), []string{"test-asset"}, f.opts()); err != nil {
			t.Fatalf("a partial file from another source (%q): %v", owner, err)
		}
		assertStored(t, s, f.data)
		if len(ranges) != 1 || ranges[0] != "" {
			t.Fatalf("the honest source was asked for ranges %q, want the whole file", ranges)
		}
	}
}
