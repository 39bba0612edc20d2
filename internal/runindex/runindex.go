// Package runindex keeps REPRO_HOME/index/runs.db, an SQLite index of the
// run folders under REPRO_HOME/runs, so that `repro runs list` can filter
// thousands of runs by kind, input, status and date without reading every
// record.
//
// The index is a cache. The run folders are the source of truth, and the
// index never stands in for them:
//
//   - Every Open checks the database (application id, schema version,
//     PRAGMA quick_check). A database that fails is reported through the
//     caller's warn function and rebuilt from the folders; it is never
//     used.
//   - Every List first reconciles the index with the folders: a folder
//     the index lacks is indexed, an entry without a folder is dropped,
//     and a run whose record.json has another stat fingerprint (inode,
//     size, mtime, ctime) than the one indexed is indexed again.
//   - Every entry List returns is checked against its folder before it is
//     returned: record.json is read again, its SHA-256 compared with the
//     indexed one and the entry derived again; a difference is reported,
//     the index corrected, and the query run again. Entries skips that
//     read for a caller that checks each run it uses itself (the
//     leaderboard verifies every run it shows).
//   - `repro runs verify` does not read the index.
//
// What is left to trust: an entry forged in the database with a genuine
// fingerprint can keep a run out of a filtered list (never put a wrong
// row into one); `repro runs reindex` rebuilds from the folders alone.
//
// Concurrent repro processes share the database: it runs in WAL mode with
// a busy timeout, and write transactions begin IMMEDIATE. A lock file
// (REPRO_HOME/index/runs.lock) is held shared while a process uses the
// database and exclusively while one replaces it, so no process deletes a
// database another is using.
package runindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"golang.org/x/sys/unix"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// SchemaVersion is the PRAGMA user_version of the schema below; a database
// with another is rebuilt.
const SchemaVersion = 3

// applicationID marks an SQLite file as a repro run index ("RPRX").
const applicationID = 0x52505258

const schema = `
CREATE TABLE runs (
	id            TEXT PRIMARY KEY,
	kind          TEXT NOT NULL,
	status        TEXT NOT NULL,
	exit_code     INTEGER NOT NULL,
	started_ns    INTEGER NOT NULL,
	finished_ns   INTEGER NOT NULL,
	record_sha256 TEXT NOT NULL,
	problem       TEXT NOT NULL,
	fingerprint   TEXT NOT NULL,
	label         TEXT NOT NULL,
	model         TEXT NOT NULL,
	temperature   REAL,
	samples_n     INTEGER NOT NULL,
	top_p         REAL
) WITHOUT ROWID;
CREATE INDEX runs_by_start ON runs(started_ns, id);
CREATE INDEX runs_by_kind ON runs(kind, started_ns);
CREATE INDEX runs_by_status ON runs(status, started_ns);
CREATE INDEX runs_by_label ON runs(label, started_ns);
CREATE TABLE inputs (
	run_id TEXT NOT NULL,
	role   TEXT NOT NULL,
	name   TEXT NOT NULL,
	sha256 TEXT NOT NULL
);
CREATE INDEX inputs_by_run ON inputs(run_id);
CREATE INDEX inputs_by_name ON inputs(name, run_id);
CREATE INDEX inputs_by_sha256 ON inputs(sha256, run_id);
CREATE TABLE subjects (
	run_id  TEXT PRIMARY KEY,
	dataset TEXT NOT NULL
) WITHOUT ROWID;
`

const (
	busyTimeout = 10 * time.Second
	// lockWait bounds how long Open waits for another process to finish
	// replacing the database.
	lockWait = 2 * time.Minute
)

// Index is an open run index. It is not safe for concurrent use by
// goroutines; processes share it safely.
type Index struct {
	home string
	db   *sql.DB
	lock *os.File
	warn func(string)
}

// Open opens the run index of home, creating it, or rebuilding it from the
// run folders when it is missing, corrupt, truncated or of another schema
// version. warn is told, in one line, why a database was not used. The
// caller closes the index.
func Open(ctx context.Context, home string, warn func(string)) (*Index, error) {
	return open(ctx, home, warn, true, lockWait)
}

func open(ctx context.Context, home string, warn func(string), repair bool, wait time.Duration) (*Index, error) {
	if warn == nil {
		warn = func(string) {}
	}
	h := layout.Home(home)
	if err := os.MkdirAll(h.Index(), 0o700); err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot create the run index folder %q: %v", h.Index(), err)
	}
	lf, err := os.OpenFile(h.RunIndexLock(), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the run index lock %q: %w", h.RunIndexLock(), err)
	}
	ix := &Index{home: home, lock: lf, warn: warn}
	if err := ix.flock(ctx, unix.LOCK_SH, wait); err != nil {
		lf.Close()
		return nil, err
	}
	fi, statErr := os.Lstat(h.RunIndex())
	existed := statErr == nil && (fi.Size() > 0 || !fi.Mode().IsRegular())
	problem := ix.openChecked(ctx)
	if problem == nil {
		return ix, nil
	}
	if !repair && !errors.Is(problem, errNotInitialized) {
		ix.Close()
		return nil, errors.New("the run index is missing or unusable; `repro runs list` rebuilds it")
	}
	// Replace the database under the exclusive lock, then go back to
	// sharing it. The shared lock is dropped first, so that two processes
	// that both want to replace it do not wait on each other.
	unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	if err := ix.flock(ctx, unix.LOCK_EX, wait); err != nil {
		lf.Close()
		return nil, err
	}
	if err := ix.rebuildIfUnusable(ctx, existed); err != nil {
		ix.Close()
		return nil, err
	}
	if err := ix.flock(ctx, unix.LOCK_SH, wait); err != nil { // converts the exclusive lock
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// rebuildIfUnusable runs under the exclusive lock: another process may have
// rebuilt the database meanwhile, so it is checked again first. existed
// says whether a non-empty database file was there before this process
// opened it: only then is a rebuild worth a warning.
func (ix *Index) rebuildIfUnusable(ctx context.Context, existed bool) error {
	path := layout.Home(ix.home).RunIndex()
	problem := ix.openChecked(ctx)
	if problem == nil {
		return nil
	}
	if existed && errors.Is(problem, errOlderSchema) {
		ix.warn(fmt.Sprintf("the run index %q was %v; rebuilding it from the run folders", path, problem))
	} else if existed && !errors.Is(problem, errNotInitialized) {
		ix.warn(fmt.Sprintf("the run index %q is not usable (%v); rebuilding it from the run folders", path, problem))
	} else if existed {
		ix.warn(fmt.Sprintf("the run index %q is not a repro run index; rebuilding it from the run folders", path))
	}
	return ix.recreate(ctx)
}

// recreate deletes the database and builds a new one from the run
// folders. It runs under the exclusive lock.
func (ix *Index) recreate(ctx context.Context) error {
	if ix.db != nil {
		ix.db.Close()
		ix.db = nil
	}
	path := layout.Home(ix.home).RunIndex()
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot remove the old run index %q: %w", p, err)
		}
	}
	if err := ix.openDB(); err != nil {
		return err
	}
	if err := ix.initSchema(ctx); err != nil {
		return err
	}
	_, err := ix.Sync(ctx)
	return err
}

// openChecked opens the database and checks it; on failure it leaves no
// database open and returns why. Anything but a regular file at the
// database's path (a symbolic link planted there) is not opened at all.
func (ix *Index) openChecked(ctx context.Context) error {
	path := layout.Home(ix.home).RunIndex()
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("it is not a regular file (%s)", fi.Mode().Type())
	}
	if err := ix.openDB(); err != nil {
		return err
	}
	if err := ix.check(ctx); err != nil {
		ix.db.Close()
		ix.db = nil
		return err
	}
	return nil
}

// OpenFromFolders returns an index held in memory and built from the run
// folders of home, for when the index in REPRO_HOME cannot be used (a
// read-only home, a full disk). It changes nothing on disk.
func OpenFromFolders(ctx context.Context, home string, warn func(string)) (*Index, error) {
	if warn == nil {
		warn = func(string) {}
	}
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // the one connection is the database
	db.SetConnMaxLifetime(0)
	ix := &Index{home: home, db: db, warn: warn}
	if err := ix.initSchema(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if _, err := ix.Sync(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

// openDB opens the database file with the connection settings every
// process uses: WAL, a busy timeout, IMMEDIATE write transactions.
func (ix *Index) openDB() error {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(normal)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: layout.Home(ix.home).RunIndex(), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("cannot open the run index: %w", err)
	}
	// One connection: a process keeps using the file it opened, even if
	// another process replaces it meanwhile.
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return fmt.Errorf("cannot open the run index: %w", err)
	}
	ix.db = db
	return nil
}

var (
	errNotInitialized = errors.New("no run index schema")
	errOlderSchema    = errors.New("written by an older repro")
)

// check returns nil if the open database is a run index of this schema
// version that passes SQLite's quick_check.
func (ix *Index) check(ctx context.Context) error {
	var app, version int64
	if err := ix.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return err
	}
	if err := ix.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if app == 0 && version == 0 {
		return errNotInitialized
	}
	if app != applicationID {
		return fmt.Errorf("application id %#x is not a run index's", app)
	}
	if version < SchemaVersion {
		return fmt.Errorf("%w (version %d, this repro uses %d)", errOlderSchema, version, SchemaVersion)
	}
	if version != SchemaVersion {
		return fmt.Errorf("schema version %d, this repro uses %d", version, SchemaVersion)
	}
	rows, err := ix.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			return fmt.Errorf("integrity check: %s", clip(line))
		}
	}
	return rows.Err()
}

func (ix *Index) initSchema(ctx context.Context) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("cannot create the run index schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, SchemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// flock takes the lock file in mode (unix.LOCK_SH or unix.LOCK_EX),
// polling until wait has passed or ctx is done.
func (ix *Index) flock(ctx context.Context, mode int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(ix.lock.Fd()), mode|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return fmt.Errorf("cannot lock the run index %q: %w", ix.lock.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the run index %q stayed locked by another repro process for %s; try again", ix.lock.Name(), wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close closes the database and releases the lock.
func (ix *Index) Close() error {
	var err error
	if ix.db != nil {
		err = ix.db.Close()
	}
	if ix.lock != nil {
		unix.Flock(int(ix.lock.Fd()), unix.LOCK_UN)
		ix.lock.Close()
	}
	return err
}

// Rebuild deletes the database and builds it again from the run folders
// alone; it returns the number of runs indexed.
func (ix *Index) Rebuild(ctx context.Context) (int, error) {
	if ix.lock == nil {
		return 0, errors.New("an index held in memory has nothing to rebuild")
	}
	unix.Flock(int(ix.lock.Fd()), unix.LOCK_UN)
	if err := ix.flock(ctx, unix.LOCK_EX, lockWait); err != nil {
		return 0, err
	}
	defer ix.flock(ctx, unix.LOCK_SH, lockWait)
	if err := ix.recreate(ctx); err != nil {
		return 0, err
	}
	var n int
	err := ix.db.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&n)
	return n, err
}

// NoteRun indexes run id of home after it ended. It creates a missing
// database but never repairs or rebuilds a broken one, and gives up quickly when another process holds
// it; the run folder is the record, and the next List picks up whatever
// NoteRun could not add. Callers report its error as a warning at most.
func NoteRun(home, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ix, err := open(ctx, home, nil, false, 2*time.Second)
	if err != nil {
		return err
	}
	defer ix.Close()
	return ix.update(ctx, []string{id}, nil, nil)
}
