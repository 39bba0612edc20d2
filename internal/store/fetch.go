package store

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"golang.org/x/sys/unix"
)

// Phase is where a fetch or import of one asset stands.
type Phase string

// The phases an Event reports, in the order they can come.
const (
	PhaseWait     Phase = "wait"     // another process holds the asset's lock
	PhaseStart    Phase = "start"    // a transfer began (Bytes: resumed from)
	PhaseProgress Phase = "progress" // Bytes of Total arrived
	PhaseRetry    Phase = "retry"    // a source failed (Error); the next is tried
	PhaseStored   Phase = "stored"   // verified and committed
	PhaseCached   Phase = "cached"   // already stored, verified again
	PhaseFailed   Phase = "failed"   // given up (Error)
)

// Event reports progress of a fetch or import.
type Event struct {
	ID     string `json:"id"`
	Phase  Phase  `json:"phase"`
	Source string `json:"source,omitempty"`
	Bytes  int64  `json:"bytes"`
	Total  int64  `json:"total"`
	Error  string `json:"error,omitempty"`
}

// FetchOptions tune Fetch. The zero value is usable.
type FetchOptions struct {
	// Mirrors are tried before upstream, as MIRROR/sha256/<hex> and
	// MIRROR/<filename>. Bytes are accepted only if they match the pin, so
	// a mirror may be plain HTTP.
	Mirrors []string
	// Progress receives events; it may be called from several goroutines.
	Progress func(Event)
	// Client is the HTTP client (default: one with sane timeouts).
	Client *http.Client
	// StallTimeout aborts a transfer that delivers no byte for this long
	// (default 30 s); the transfer is then resumed.
	StallTimeout time.Duration
	// MinSpeed is the slowest transfer kept, in bytes per second,
	// measured over each SpeedWindow (default 16 KiB/s over 60 s): a
	// server that drips a byte now and then resets StallTimeout forever,
	// so a transfer below the floor is aborted (and resumed, like a
	// stall). Negative: no floor.
	MinSpeed int64
	// SpeedWindow is the period MinSpeed is measured over.
	SpeedWindow time.Duration
	// Deadline bounds the whole download of one id, every source and
	// retry included (default 0: none; MinSpeed bounds the time per byte).
	Deadline time.Duration
	// Retries is how often one source is resumed after a broken or stalled
	// transfer (default 3).
	Retries int
	// Parallel is how many ids are fetched at once (default 4).
	Parallel int
}

// Defaults of FetchOptions.MinSpeed and SpeedWindow.
const (
	DefaultMinSpeed    = 16 << 10
	DefaultSpeedWindow = 60 * time.Second
)

// DeadlineError reports an id whose download did not finish within
// FetchOptions.Deadline.
type DeadlineError struct {
	ID       string
	Deadline time.Duration
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("asset %s: not downloaded within the deadline of %s (raise --deadline, or use a faster mirror)", e.ID, e.Deadline)
}

func (o *FetchOptions) defaults() {
	if o.Client == nil {
		o.Client = &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				TLSHandshakeTimeout:   30 * time.Second,
				ResponseHeaderTimeout: 60 * time.Second,
				MaxIdleConnsPerHost:   4,
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("stopped after 5 redirects")
				}
				return nil
			},
		}
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.MinSpeed == 0 {
		o.MinSpeed = DefaultMinSpeed
	}
	if o.SpeedWindow <= 0 {
		o.SpeedWindow = DefaultSpeedWindow
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Progress == nil {
		o.Progress = func(Event) {}
	}
}

// Fetch downloads and stores each id, several at once, and returns one
// error per failed id joined together (nil when all are stored).
func (s *Store) Fetch(ctx context.Context, ids []string, opt FetchOptions) error {
	opt.defaults()
	errs := make([]error, len(ids))
	sem := make(chan struct{}, opt.Parallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = s.fetchOne(ctx, id, opt)
			if errs[i] != nil {
				opt.Progress(Event{ID: id, Phase: PhaseFailed, Error: errs[i].Error()})
			}
		}()
	}
	wg.Wait()
	return joinCoded(errs)
}

// joinCoded joins errors and keeps the most severe exit code among them.
func joinCoded(errs []error) error {
	var kept []error
	worst := exitcode.OK
	for _, err := range errs {
		if err == nil {
			continue
		}
		kept = append(kept, err)
		if c := exitcode.Of(err); c > worst {
			worst = c
		}
	}
	if len(kept) == 0 {
		return nil
	}
	if len(kept) == 1 {
		return kept[0]
	}
	return exitcode.New(worst, joinLine(kept))
}

// lineErrors joins errors on one line, separated by "; ", and unwraps to
// each of them.
type lineErrors []error

func (l lineErrors) Error() string {
	parts := make([]string, len(l))
	for i, err := range l {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (l lineErrors) Unwrap() []error { return l }

func joinLine(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return lineErrors(errs)
}

func (s *Store) fetchOne(ctx context.Context, id string, opt FetchOptions) error {
	e, err := s.pinnedFile(id)
	if err != nil {
		return err
	}
	if opt.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opt.Deadline, &DeadlineError{ID: id, Deadline: opt.Deadline})
		defer cancel()
	}
	return s.commitLocked(ctx, e, opt.Progress, func(partial string) (string, error) {
		var errs []error
		for _, src := range sources(e, opt.Mirrors) {
			err := s.download(ctx, e, src, partial, opt)
			if err == nil {
				return src, nil
			}
			if ctx.Err() != nil {
				return "", context.Cause(ctx)
			}
			errs = append(errs, err)
			var perm *permanentError
			if errors.As(err, &perm) {
				break
			}
		}
		return "", fmt.Errorf("asset %s: every source failed: %w", e.ID, joinLine(errs))
	})
}

// sources lists where to look for e: mirrors first, then upstream.
func sources(e catalog.Entry, mirrors []string) []string {
	var out []string
	for _, m := range mirrors {
		m = strings.TrimRight(m, "/")
		out = append(out, m+"/sha256/"+e.SHA256.Hex())
		if e.Filename != "" {
			out = append(out, m+"/"+url.PathEscape(e.Filename))
		}
	}
	return append(out, e.URLs...)
}

// commitLocked holds the digest's lock, returns at once if a verified blob
// is already stored, and otherwise lets fill write the partial file, then
// commits it. fill returns a description of where the bytes came from.
func (s *Store) commitLocked(ctx context.Context, e catalog.Entry, progress func(Event), fill func(partial string) (string, error)) error {
	unlock, err := s.lock(ctx, e.SHA256.Hex(), func() {
		progress(Event{ID: e.ID, Phase: PhaseWait, Total: e.Size})
	})
	if err != nil {
		return fmt.Errorf("asset %s: %w", e.ID, err)
	}
	defer unlock()
	if ok, err := s.storedAndValid(ctx, e); err != nil {
		return err
	} else if ok {
		progress(Event{ID: e.ID, Phase: PhaseCached, Bytes: e.Size, Total: e.Size})
		return s.ensureRef(e, "")
	}
	partial := s.dir.Partial(e.SHA256.Hex())
	src, err := fill(partial)
	if err != nil {
		return err
	}
	os.Remove(s.dir.PartialSource(e.SHA256.Hex()))
	if err := s.commit(e, partial); err != nil {
		s.dropPartial(e)
		return err
	}
	progress(Event{ID: e.ID, Phase: PhaseStored, Source: src, Bytes: e.Size, Total: e.Size})
	return s.writeRef(Ref{ID: e.ID, SHA256: *e.SHA256, Size: e.Size, Source: redactURL(src), StoredAt: time.Now().UTC()})
}

// storedAndValid re-hashes an existing blob; a corrupt one is quarantined
// so that it is fetched again, never used.
func (s *Store) storedAndValid(ctx context.Context, e catalog.Entry) (bool, error) {
	p := s.blobPath(*e.SHA256)
	if _, err := os.Lstat(p); err != nil {
		return false, nil
	}
	if err := s.verifyBlob(ctx, e); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if _, qerr := s.quarantine(e); qerr != nil {
			return false, qerr
		}
		return false, nil
	}
	return true, nil
}

func (s *Store) ensureRef(e catalog.Entry, src string) error {
	if _, err := os.Stat(s.refPath(e.ID)); err == nil {
		return nil
	}
	return s.writeRef(Ref{ID: e.ID, SHA256: *e.SHA256, Size: e.Size, Source: src, StoredAt: time.Now().UTC()})
}

// commit syncs the partial file, hashes it again from disk, makes it
// read-only and renames it into the blob folder, then syncs the folder.
func (s *Store) commit(e catalog.Entry, partial string) error {
	f, err := os.OpenFile(partial, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("asset %s: %w", e.ID, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("asset %s: failed to sync: %w", e.ID, err)
	}
	got, n, err := digest.ReaderFrom(f)
	if err != nil {
		return fmt.Errorf("asset %s: failed to re-read: %w", e.ID, err)
	}
	if err := checkPin(e, got, n); err != nil {
		return err
	}
	if err := f.Chmod(0o444); err != nil {
		return fmt.Errorf("asset %s: %w", e.ID, err)
	}
	dst := s.blobPath(*e.SHA256)
	if err := os.Rename(partial, dst); err != nil {
		return fmt.Errorf("asset %s: failed to move blob into place: %w", e.ID, err)
	}
	return atomicfile.SyncDir(filepath.Dir(dst))
}

// permanentError marks a failure that retrying another source cannot fix
// (the local disk is full, say).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// download writes src into partial, resuming from what partial already
// holds, and checks size and digest at the end. On a digest mismatch the
// partial file is removed so that the next source starts clean.
func (s *Store) download(ctx context.Context, e catalog.Entry, src, partial string, opt FetchOptions) error {
	shown := redactURL(src)
	var lastErr error
	for attempt := 0; attempt <= opt.Retries; attempt++ {
		if attempt > 0 {
			opt.Progress(Event{ID: e.ID, Phase: PhaseRetry, Source: shown, Error: lastErr.Error()})
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		done, err := s.downloadAttempt(ctx, e, src, partial, opt)
		if err == nil && done {
			return nil
		}
		var me *digest.MismatchError
		var perm *permanentError
		switch {
		case errors.As(err, &me):
			s.dropPartial(e)
			return exitcode.New(exitcode.Integrity, fmt.Errorf("from %s: %w", shown, err))
		case errors.As(err, &perm):
			s.dropPartial(e)
			return fmt.Errorf("from %s: %w", shown, err)
		case errors.Is(err, errHTTPStatus):
			return fmt.Errorf("from %s: %w", shown, err)
		case ctx.Err() != nil:
			return context.Cause(ctx)
		}
		lastErr = err
	}
	return fmt.Errorf("from %s: gave up after %d attempts: %w", shown, opt.Retries+1, lastErr)
}

var errHTTPStatus = errors.New("server refused")

// downloadAttempt makes one request. It returns done when the partial file
// holds the whole, verified content.
func (s *Store) downloadAttempt(ctx context.Context, e catalog.Entry, src, partial string, opt FetchOptions) (bool, error) {
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false, &permanentError{err}
	}
	defer f.Close()
	h := digest.NewHash()
	off, err := io.CopyBuffer(h, io.LimitReader(f, e.Size+1), make([]byte, 1<<20))
	if err != nil {
		return false, &permanentError{err}
	}
	// A partial file is resumed only from the source its bytes came from:
	// completing one source's bytes with another's would blame the second
	// for the first's wrong bytes.
	owner := s.dir.PartialSource(e.SHA256.Hex())
	if off > e.Size || off > 0 && !fromSource(owner, src) {
		if err := f.Truncate(0); err != nil {
			return false, &permanentError{err}
		}
		off, h = 0, digest.NewHash()
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, src, nil)
	if err != nil {
		return false, fmt.Errorf("%w: bad URL: %v", errHTTPStatus, err)
	}
	req.Header.Set("User-Agent", "repro")
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	stalled := fmt.Errorf("transfer stalled: no byte for %s", opt.StallTimeout)
	stall := time.AfterFunc(opt.StallTimeout, func() { cancel(stalled) })
	defer stall.Stop()
	resp, err := opt.Client.Do(req)
	if err != nil {
		if !stall.Stop() {
			return false, fmt.Errorf("no response within %s", opt.StallTimeout)
		}
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		if off > 0 {
			if err := f.Truncate(0); err != nil {
				return false, &permanentError{err}
			}
			off, h = 0, digest.NewHash()
		}
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			if err := f.Truncate(0); err != nil {
				return false, &permanentError{err}
			}
			return false, fmt.Errorf("server answered a range request with range %q; starting over", resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off == e.Size:
		return true, verifyHash(e, h, off)
	default:
		return false, fmt.Errorf("%w: HTTP %s", errHTTPStatus, resp.Status)
	}
	if resp.ContentLength >= 0 && off+resp.ContentLength != e.Size {
		return false, exitcode.New(exitcode.Integrity, &digest.MismatchError{What: "asset " + e.ID, WantSize: e.Size, GotSize: off + resp.ContentLength, WantDigest: *e.SHA256})
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false, &permanentError{err}
	}
	if off == 0 {
		if err := atomicfile.WriteFile(owner, []byte(sourceTag(src)), 0o600); err != nil {
			return false, &permanentError{err}
		}
	}
	opt.Progress(Event{ID: e.ID, Phase: PhaseStart, Source: redactURL(src), Bytes: off, Total: e.Size})
	v := digest.Resume(resp.Body, h, off, "asset "+e.ID, e.Size, *e.SHA256)
	var got atomic.Int64 // bytes of this response, read by the speed check
	if opt.MinSpeed > 0 {
		stop := watchSpeed(&got, opt.MinSpeed, opt.SpeedWindow, cancel)
		defer stop()
	}
	buf := make([]byte, 256<<10)
	last := time.Now()
	for {
		n, rerr := v.Read(buf)
		if n > 0 {
			got.Add(int64(n))
			stall.Reset(opt.StallTimeout)
			if _, werr := f.Write(buf[:n]); werr != nil {
				if errors.Is(werr, syscall.ENOSPC) || errors.Is(werr, syscall.EDQUOT) || errors.Is(werr, syscall.EFBIG) {
					return false, &permanentError{fmt.Errorf("the disk holding %s is full: %w", filepath.Dir(partial), werr)}
				}
				return false, &permanentError{werr}
			}
			if time.Since(last) > 100*time.Millisecond {
				opt.Progress(Event{ID: e.ID, Phase: PhaseProgress, Bytes: v.N(), Total: e.Size})
				last = time.Now()
			}
		}
		if rerr == io.EOF {
			return true, nil
		}
		if rerr != nil {
			var me *digest.MismatchError
			if errors.As(rerr, &me) {
				return false, me
			}
			if reqCtx.Err() != nil && ctx.Err() == nil {
				return false, fmt.Errorf("%w (after %d bytes)", context.Cause(reqCtx), v.N())
			}
			return false, fmt.Errorf("transfer broke after %d bytes: %w", v.N(), rerr)
		}
	}
}

// dropPartial removes the partial file of e and the record of its source.
func (s *Store) dropPartial(e catalog.Entry) {
	os.Remove(s.dir.Partial(e.SHA256.Hex()))
	os.Remove(s.dir.PartialSource(e.SHA256.Hex()))
}

// sourceTag is what PartialSource holds for source src: the SHA-256 of
// its URL (credentials in a URL are not written to disk).
func sourceTag(src string) string { return digest.Of([]byte(src)).Hex() + "\n" }

// fromSource reports whether the partial file's bytes came from src, as
// the file owner records; a missing record (a partial file of an older
// repro) is another source.
func fromSource(owner, src string) bool {
	b, err := os.ReadFile(owner)
	return err == nil && string(b) == sourceTag(src)
}

// SlowError reports a transfer aborted for delivering less than
// FetchOptions.MinSpeed over a window.
type SlowError struct {
	Bytes    int64
	Window   time.Duration
	MinSpeed int64
}

func (e *SlowError) Error() string {
	return fmt.Sprintf("transfer too slow: %d bytes in %s, below the minimum of %d bytes/s (--min-speed)", e.Bytes, e.Window, e.MinSpeed)
}

// watchSpeed cancels a transfer with a *SlowError when fewer than
// minSpeed*window bytes arrive in a window; it returns its stop function.
func watchSpeed(got *atomic.Int64, minSpeed int64, window time.Duration, cancel context.CancelCauseFunc) func() {
	t := time.NewTicker(window)
	done := make(chan struct{})
	go func() {
		defer t.Stop()
		prev := int64(0)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := got.Load()
				if float64(n-prev) < float64(minSpeed)*window.Seconds() {
					cancel(&SlowError{Bytes: n - prev, Window: window, MinSpeed: minSpeed})
					return
				}
				prev = n
			}
		}
	}()
	return func() { close(done) }
}

func verifyHash(e catalog.Entry, h hash.Hash, n int64) error {
	var got digest.SHA256
	h.Sum(got[:0])
	if n != e.Size || got != *e.SHA256 {
		return &digest.MismatchError{What: "asset " + e.ID, WantSize: e.Size, GotSize: n, WantDigest: *e.SHA256, GotDigest: got}
	}
	return nil
}

// contentRangeStart parses "bytes START-END/TOTAL".
func contentRangeStart(v string) (int64, bool) {
	v, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, false
	}
	startS, _, ok := strings.Cut(v, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(startS, 10, 64)
	return n, err == nil && n >= 0
}

// redactURL drops credentials and query strings from a URL shown to users.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	return u.String()
}
