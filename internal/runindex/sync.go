package runindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/runlabel"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/safefile"
)

// fingerprint is the stat fingerprint of a record.json: device, inode,
// size, mtime and ctime. A rename or a write changes it; ctime cannot be
// set back by the file's owner.
func fingerprint(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return "not-regular"
	}
	return fingerprintOf(st.Dev, st.Ino, st.Size, st.Mtim, st.Ctim)
}

func fingerprintOf(dev, ino uint64, size int64, mtim, ctim syscall.Timespec) string {
	return fmt.Sprintf("%d:%d:%d:%d.%09d:%d.%09d", dev, ino, size, mtim.Sec, mtim.Nsec, ctim.Sec, ctim.Nsec)
}

const fingerprintMissing = "missing"

// runFolders lists the run folders under home with the fingerprint of
// each one's record.json, statting it relative to the open runs folder.
// Names in known are run ids already (the index holds only those).
func runFolders(home string, known map[string]string) (map[string]string, error) {
	dir, err := os.Open(layout.Home(home).Runs())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ents))
	for _, e := range ents {
		id := e.Name()
		if _, ok := known[id]; !e.IsDir() || !ok && !runs.ValidID(id) {
			continue // as runs.List: a link or a file named like a run is not a run
		}
		var st unix.Stat_t
		err := unix.Fstatat(int(dir.Fd()), id+"/"+runs.RecordFile, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
			out[id] = fingerprintOf(st.Dev, st.Ino, st.Size, syscall.Timespec(st.Mtim), syscall.Timespec(st.Ctim))
		case err == nil:
			out[id] = "not-regular"
		case errors.Is(err, unix.ENOENT):
			out[id] = fingerprintMissing
		default: // as readRecord sees a record it cannot open
			out[id] = "not-regular"
		}
	}
	return out, nil
}

// readRecord reads run id's record.json (bounded, no symlinks, regular
// files only) and returns its fingerprint, taken from the open file, and
// its entry.
func readRecord(home, id string) (string, Entry) {
	f, err := safefile.OpenRegular(runs.RecordPath(home, id))
	if err != nil {
		e := entryOf(id, nil)
		if errors.Is(err, os.ErrNotExist) {
			e.Status, e.Problem = StatusIncomplete, "no record.json: the run is in progress, or ended without its record"
			return fingerprintMissing, e
		}
		e.Problem = clip("record.json: " + err.Error())
		return "not-regular", e
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "not-regular", entryOf(id, nil)
	}
	fp := fingerprint(fi)
	raw, err := io.ReadAll(io.LimitReader(f, runs.MaxRecordBytes+1))
	if err != nil || int64(len(raw)) > runs.MaxRecordBytes {
		e := entryOf(id, nil)
		e.Problem = fmt.Sprintf("record.json is unreadable or larger than %d bytes", runs.MaxRecordBytes)
		return fp, e
	}
	return fp, entryOf(id, raw)
}

// Sync reconciles the index with the run folders: it indexes the runs the
// index lacks or whose record.json changed (by fingerprint) and drops the
// entries whose folder is gone. It returns how many entries changed.
func (ix *Index) Sync(ctx context.Context) (int, error) {
	indexed := map[string]string{}
	digests := map[string]string{}
	rows, err := ix.db.QueryContext(ctx, "SELECT id, fingerprint, record_sha256 FROM runs")
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var id, fp, d string
		if err := rows.Scan(&id, &fp, &d); err != nil {
			rows.Close()
			return 0, err
		}
		indexed[id], digests[id] = fp, d
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	folders, err := runFolders(ix.home, indexed)
	if err != nil {
		return 0, fmt.Errorf("cannot list the run folders in %q: %w", layout.Home(ix.home).Runs(), err)
	}
	var stale []string
	for id, fp := range folders {
		if was, ok := indexed[id]; !ok || was != fp {
			stale = append(stale, id)
		}
		delete(indexed, id)
	}
	gone := make([]string, 0, len(indexed))
	for id := range indexed {
		gone = append(gone, id)
	}
	if len(stale)+len(gone) == 0 {
		return 0, nil
	}
	return len(stale) + len(gone), ix.update(ctx, stale, gone, digests)
}

type indexed struct {
	Entry
	fingerprint string
}

// update indexes the runs ids again from their folders and drops the
// entries of gone, in one transaction. A run whose folder no longer exists
// is dropped too. was holds the record digests indexed before: a record
// that was indexed and now has another digest is reported (records are
// written once, when the run ends).
func (ix *Index) update(ctx context.Context, ids, gone []string, was map[string]string) error {
	fresh := make([]indexed, 0, len(ids))
	for _, id := range ids {
		if !runs.ValidID(id) {
			gone = append(gone, id)
			continue
		}
		fp, e := readRecord(ix.home, id)
		if fp == fingerprintMissing {
			if _, err := os.Lstat(layout.Home(ix.home).Run(id)); errors.Is(err, os.ErrNotExist) {
				gone = append(gone, id)
				continue
			}
		}
		if old := was[id]; old != "" && old != e.RecordSHA256 {
			ix.warn(fmt.Sprintf("run %s: its record.json changed since it was indexed (sha256 %s, now %s); `repro runs verify %s` checks it", id, old, orNone(e.RecordSHA256), id))
		}
		fresh = append(fresh, indexed{e, fp})
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot update the run index: %w", err)
	}
	defer tx.Rollback()
	delRun, err := tx.PrepareContext(ctx, "DELETE FROM runs WHERE id = ?")
	if err != nil {
		return err
	}
	delInputs, err := tx.PrepareContext(ctx, "DELETE FROM inputs WHERE run_id = ?")
	if err != nil {
		return err
	}
	putRun, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO runs
		(id, kind, status, exit_code, started_ns, finished_ns, record_sha256, problem, fingerprint, label, model, temperature, samples_n, top_p)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	putInput, err := tx.PrepareContext(ctx, "INSERT INTO inputs (run_id, role, name, sha256) VALUES (?, ?, ?, ?)")
	if err != nil {
		return err
	}
	delSubject, err := tx.PrepareContext(ctx, "DELETE FROM subjects WHERE run_id = ?")
	if err != nil {
		return err
	}
	putSubject, err := tx.PrepareContext(ctx, "INSERT OR REPLACE INTO subjects (run_id, dataset) VALUES (?, ?)")
	if err != nil {
		return err
	}
	for _, id := range gone {
		if _, err := delRun.ExecContext(ctx, id); err != nil {
			return err
		}
		if _, err := delInputs.ExecContext(ctx, id); err != nil {
			return err
		}
		if _, err := delSubject.ExecContext(ctx, id); err != nil {
			return err
		}
	}
	for _, e := range fresh {
		temp, n, topP := samplingColumns(e.Sampling)
		if _, err := putRun.ExecContext(ctx, e.ID, e.Kind, e.Status, e.ExitCode, toNS(e.Started), toNS(e.Finished), e.RecordSHA256, e.Problem, e.fingerprint,
			e.Label, e.Model, temp, n, topP); err != nil {
			return err
		}
		if _, err := putSubject.ExecContext(ctx, e.ID, e.Dataset); err != nil {
			return err
		}
		if _, err := delInputs.ExecContext(ctx, e.ID); err != nil {
			return err
		}
		for _, in := range e.Inputs {
			if _, err := putInput.ExecContext(ctx, e.ID, in.Role, in.Name, in.SHA256); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cannot update the run index: %w", err)
	}
	return nil
}

// samplingColumns is how the runs table holds a sampling: NULL for a
// temperature or top-p not stated, 0 for n.
func samplingColumns(s *runlabel.Sampling) (temp sql.NullFloat64, n int, topP sql.NullFloat64) {
	if s == nil {
		return temp, 0, topP
	}
	if s.Temperature != nil {
		temp = sql.NullFloat64{Float64: *s.Temperature, Valid: true}
	}
	if s.TopP != nil {
		topP = sql.NullFloat64{Float64: *s.TopP, Valid: true}
	}
	return temp, s.N, topP
}

// samplingOf is the inverse of samplingColumns; nil when nothing is stated.
func samplingOf(temp sql.NullFloat64, n int, topP sql.NullFloat64) *runlabel.Sampling {
	if !temp.Valid && n == 0 && !topP.Valid {
		return nil
	}
	s := &runlabel.Sampling{N: n}
	if temp.Valid {
		s.Temperature = &temp.Float64
	}
	if topP.Valid {
		s.TopP = &topP.Float64
	}
	return s
}

func orNone(d string) string {
	if d == "" {
		return "none"
	}
	return d
}

var (
	minTime = time.Unix(0, 1).UTC()
	maxTime = time.Unix(0, 1<<63-1).UTC()
)

// toNS stores a time as Unix nanoseconds: 0 for the zero time, others
// clamped to what int64 nanoseconds hold.
func toNS(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minTime):
		return 1
	case t.After(maxTime):
		return 1<<63 - 1
	}
	return t.UnixNano()
}

func fromNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// Filter selects runs. Empty fields select everything.
type Filter struct {
	Kind   string
	Status string
	// Input is the catalog id of an input of the run (a dataset or a
	// model checkpoint).
	Input string
	// Digest is a prefix (at least MinDigestPrefix hex digits) of the
	// SHA-256 of an input: an asset or the samples.
	Digest string
	// Label and Model match what the record says the run scored, exactly;
	// Sampling matches runs whose sampling states every value it states.
	Label, Model string
	Sampling     *runlabel.Sampling
	// Since and Until bound the start time: Since <= start < Until.
	Since, Until time.Time
	// Limit is the most runs returned, newest first; 0 means all.
	Limit int
}

// MinDigestPrefix is the shortest digest prefix a Filter takes.
const MinDigestPrefix = 6

// ParseDigestPrefix checks a --digest value: hex digits, optionally after
// "sha256:", at least MinDigestPrefix and at most 64 of them.
func ParseDigestPrefix(s string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(s, "sha256:"))
	if len(h) < MinDigestPrefix || len(h) > 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q is not %d to 64 hex digits of a SHA-256", s, MinDigestPrefix)
	}
	return h, nil
}

// ParseDate reads a --since or --until value: an RFC 3339 time, or a date
// YYYY-MM-DD meaning its start (UTC), or, with endOfDay, the start of the
// next day, so that --until names the last day included.
func ParseDate(s string, endOfDay bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q is neither YYYY-MM-DD nor an RFC 3339 time", s)
	}
	if endOfDay {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// List reconciles the index with the run folders (Sync) and returns the
// runs f selects, newest first. Every entry returned was checked against
// its record.json just before: an entry that differs is reported through
// warn (unless its run merely ended since), indexed again and the query
// repeated; if records keep changing, the entries read from the folders
// are returned as they are.
func (ix *Index) List(ctx context.Context, f Filter) ([]Entry, error) {
	if _, err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		entries, err := ix.query(ctx, f)
		if err != nil {
			return nil, err
		}
		var changed []string
		kept := entries[:0:0]
		for _, e := range entries {
			_, now := readRecord(ix.home, e.ID)
			if sameEntry(e, now) {
				kept = append(kept, e)
				continue
			}
			changed = append(changed, e.ID)
			if e.Status != StatusIncomplete {
				ix.warn(fmt.Sprintf("run %s: its record.json is not what the run index holds (changed since it was indexed, or the index was altered); indexing it again", e.ID))
			}
			if f.matches(now) {
				kept = append(kept, now)
			}
		}
		if len(changed) == 0 {
			return entries, nil
		}
		if err := ix.update(ctx, changed, nil, nil); err != nil {
			return nil, err
		}
		if attempt == 2 {
			return kept, nil
		}
	}
}

// Entries reconciles the index with the run folders (Sync) and returns
// the runs f selects, newest first, as the index holds them: unlike List
// it does not read their records again. It is for a caller that checks
// every run it uses against its folder itself (the leaderboard verifies
// each run it shows, and reads its kind and dataset from the verified
// record), so that each record is read once. An entry forged in the
// database with a genuine fingerprint can then name a run that f does not
// select, which that check finds, or keep a run out, as with List.
func (ix *Index) Entries(ctx context.Context, f Filter) ([]Entry, error) {
	if _, err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	return ix.query(ctx, f)
}

// matches applies f to one entry as the query does (all but Limit).
func (f Filter) matches(e Entry) bool {
	ns := toNS(e.Started)
	if f.Kind != "" && e.Kind != f.Kind || f.Status != "" && e.Status != f.Status ||
		f.Label != "" && e.Label != f.Label || f.Model != "" && e.Model != f.Model || !e.Sampling.Matches(f.Sampling) ||
		!f.Since.IsZero() && ns < toNS(f.Since) || !f.Until.IsZero() && ns >= toNS(f.Until) {
		return false
	}
	input, dig := f.Input == "", f.Digest == ""
	for _, in := range e.Inputs {
		input = input || in.Name == f.Input
		dig = dig || strings.HasPrefix(in.SHA256, f.Digest)
	}
	return input && dig
}

// sameEntry compares an indexed entry with one derived from the folder, as
// the index stores them.
func sameEntry(a, b Entry) bool {
	a.Started, a.Finished = fromNS(toNS(a.Started)), fromNS(toNS(a.Finished))
	b.Started, b.Finished = fromNS(toNS(b.Started)), fromNS(toNS(b.Finished))
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb) && a.Dataset == b.Dataset
}

func (ix *Index) query(ctx context.Context, f Filter) ([]Entry, error) {
	q := strings.Builder{}
	q.WriteString(`SELECT id, kind, status, exit_code, started_ns, finished_ns, record_sha256, problem, label, model, temperature, samples_n, top_p,
		COALESCE((SELECT dataset FROM subjects s WHERE s.run_id = r.id), '') FROM runs r WHERE 1 = 1`)
	var args []any
	if f.Kind != "" {
		q.WriteString(" AND kind = ?")
		args = append(args, f.Kind)
	}
	if f.Status != "" {
		q.WriteString(" AND status = ?")
		args = append(args, f.Status)
	}
	if f.Label != "" {
		q.WriteString(" AND label = ?")
		args = append(args, f.Label)
	}
	if f.Model != "" {
		q.WriteString(" AND model = ?")
		args = append(args, f.Model)
	}
	if s := f.Sampling; s != nil {
		if s.Temperature != nil {
			q.WriteString(" AND temperature = ?")
			args = append(args, *s.Temperature)
		}
		if s.N > 0 {
			q.WriteString(" AND samples_n = ?")
			args = append(args, s.N)
		}
		if s.TopP != nil {
			q.WriteString(" AND top_p = ?")
			args = append(args, *s.TopP)
		}
	}
	if !f.Since.IsZero() {
		q.WriteString(" AND started_ns >= ?")
		args = append(args, toNS(f.Since))
	}
	if !f.Until.IsZero() {
		q.WriteString(" AND started_ns < ?")
		args = append(args, toNS(f.Until))
	}
	if f.Input != "" {
		q.WriteString(" AND EXISTS (SELECT 1 FROM inputs i WHERE i.name = ? AND i.run_id = r.id)")
		args = append(args, f.Input)
	}
	if f.Digest != "" {
		// a prefix range: every hex digit sorts before "g"
		q.WriteString(" AND EXISTS (SELECT 1 FROM inputs i WHERE i.sha256 >= ? AND i.sha256 < ? AND i.run_id = r.id)")
		args = append(args, f.Digest, f.Digest+"g")
	}
	q.WriteString(" ORDER BY started_ns DESC, id DESC")
	if f.Limit > 0 {
		q.WriteString(" LIMIT ?")
		args = append(args, f.Limit)
	}
	rows, err := ix.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("cannot query the run index: %w", err)
	}
	defer rows.Close()
	var out []Entry
	pos := map[string]int{}
	for rows.Next() {
		var e Entry
		var started, finished int64
		var temp, topP sql.NullFloat64
		var n int
		if err := rows.Scan(&e.ID, &e.Kind, &e.Status, &e.ExitCode, &started, &finished, &e.RecordSHA256, &e.Problem, &e.Label, &e.Model, &temp, &n, &topP, &e.Dataset); err != nil {
			return nil, err
		}
		e.Started, e.Finished, e.Inputs = fromNS(started), fromNS(finished), []Input{}
		e.Sampling = samplingOf(temp, n, topP)
		pos[e.ID] = len(out)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	return out, ix.loadInputs(ctx, out, pos)
}

// loadInputs fills the inputs of entries in one query.
func (ix *Index) loadInputs(ctx context.Context, entries []Entry, pos map[string]int) error {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := ix.db.QueryContext(ctx, "SELECT run_id, role, name, sha256 FROM inputs WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY rowid", string(list))
	if err != nil {
		return fmt.Errorf("cannot query the run index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var in Input
		if err := rows.Scan(&id, &in.Role, &in.Name, &in.SHA256); err != nil {
			return err
		}
		if i, ok := pos[id]; ok {
			entries[i].Inputs = append(entries[i].Inputs, in)
		}
	}
	return rows.Err()
}
