package mllog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Marker is the token that starts an MLLOG record. Everything on the line
// up to its last occurrence is launcher noise (srun labels, timestamps) and
// ignored, as the upstream parser does.
const Marker = ":::MLLOG "

var markerBytes = []byte(Marker)

// Limits bounds what Parse reads from one log. Logs are untrusted (they
// come back from machines repro does not control), so every size is
// capped; hitting a cap is an error, never a silent truncation. A zero
// field takes its default.
type Limits struct {
	// MaxBytes caps the size of the whole file. Default 256 MiB; the
	// largest MLPerf Training v2.1 MiniGo log is about 240 KB.
	MaxBytes int64
	// MaxLineBytes caps one line, marker or not. Default 1 MiB.
	MaxLineBytes int
	// MaxRecords caps the number of MLLOG lines. Default 1<<20.
	MaxRecords int
	// MaxDepth caps JSON nesting within one record. Default 512 (Python's
	// json gives up near 1000; real records nest 3 deep).
	MaxDepth int
}

// DefaultLimits returns the limits Parse applies to zero fields.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 256 << 20, MaxLineBytes: 1 << 20, MaxRecords: 1 << 20, MaxDepth: 512}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = d.MaxLineBytes
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = d.MaxRecords
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}

// LimitError reports a log that breaks one of the Limits. Nothing of the
// log is used.
type LimitError struct {
	Name  string // file name, when known
	Line  int    // 1-based line, 0 when the limit is about the whole file
	What  string // "file size", "line length" or "record count"
	Limit int64
}

func (e *LimitError) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	fmt.Fprintf(&b, "%s exceeds the limit of %d", e.What, e.Limit)
	switch e.What {
	case "record count":
		b.WriteString(" MLLOG lines")
	default:
		b.WriteString(" bytes")
	}
	b.WriteString("; MLPerf result logs are far smaller, so the file is damaged or not a result log")
	return b.String()
}

// Log is a parsed MLLOG file.
type Log struct {
	// Name is the file name used in reports; ParseFile sets it.
	Name string
	// Records holds one entry per line carrying the marker, in file order,
	// including lines that are not usable records (Record.Problem set).
	Records []Record
	// Lines and Bytes count what was read.
	Lines int
	Bytes int64
	// omitted counts, by ProblemKind, the MLLOG lines that were not
	// usable records beyond the first maxProblemRecords: they are counted
	// (and judged: any one fails the log), not kept.
	omitted [ProblemShape + 1]int
}

// maxProblemRecords is how many unusable MLLOG lines a Log keeps.
const maxProblemRecords = 64

// RecordCount is the number of MLLOG lines in the file, the unusable
// ones that were counted but not kept included.
func (l *Log) RecordCount() int {
	n := len(l.Records)
	for _, k := range l.omitted {
		n += k
	}
	return n
}

// ProblemKind classifies an MLLOG line that is not a usable record, by
// what the upstream checker does with it.
type ProblemKind int

const (
	// ProblemSyntax: the text after the marker is not JSON (or an integer
	// has more than 4300 digits). Upstream reports a parsing error and
	// fails the file.
	ProblemSyntax ProblemKind = iota + 1
	// ProblemTime: time_ms is a string that is not a number. Upstream
	// reports a parsing error and fails the file.
	ProblemTime
	// ProblemShape: valid JSON, but not an object with time_ms, key, value
	// and metadata, or time_ms is not convertible to a float. Upstream
	// dies with an exception, which fails the file.
	ProblemShape
)

func (k ProblemKind) String() string {
	switch k {
	case ProblemSyntax:
		return "syntax"
	case ProblemTime:
		return "time"
	case ProblemShape:
		return "shape"
	}
	return "unknown"
}

// Problem says why an MLLOG line is not a usable record.
type Problem struct {
	Kind ProblemKind
	Msg  string
}

// Record is one MLLOG line.
type Record struct {
	// Line is the 1-based line number in the file (lines end at '\n').
	Line int
	// Index is the 0-based position among the file's MLLOG lines, which is
	// what the upstream checker calls lineno.
	Index int
	// Problem is set when the line is not a usable record; the fields
	// below are then partly or wholly zero.
	Problem *Problem

	// TimeMS is float(time_ms), as upstream computes it.
	TimeMS float64
	// Key is the key, "" when it is not a string (such records match no
	// rule, as upstream).
	Key string
	// Value and Metadata are the record's value and metadata.
	Value    Value
	Metadata Value
	// Namespace and EventType are informational; upstream ignores them.
	Namespace string
	EventType string

	// Deviations lists departures from the MLLOG format that upstream
	// accepts but a strict reading rejects (time_ms not an integer, an
	// unknown event_type, NaN literals, ...). --strict fails on them.
	// Records with the same deviations share one slice: do not modify it.
	Deviations []string
}

// ParseFile opens and parses the log at path. It fails with an
// *os.PathError when the file cannot be opened or is not a regular file,
// and with a *LimitError when it breaks lim.
func ParseFile(path string, lim Limits) (*Log, error) {
	lim = lim.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	if fi.Size() > lim.MaxBytes {
		return nil, &LimitError{Name: path, What: "file size", Limit: lim.MaxBytes}
	}
	l, err := Parse(f, lim)
	var le *LimitError
	if errors.As(err, &le) {
		le.Name = path
	}
	if err != nil {
		return nil, err
	}
	l.Name = path
	return l, nil
}

// Parse reads one MLLOG file from r. It returns an error only when r fails
// or the input breaks lim (a *LimitError); lines that carry the marker but
// are not valid records are returned with Record.Problem set, because
// judging them is the verifier's job.
//
// Lines are split at '\n', '\r\n' and '\r' (the upstream checker reads in
// Python's universal-newline mode); Record.Line counts '\n' only.
func Parse(r io.Reader, lim Limits) (*Log, error) {
	return parseReader(r, lim.withDefaults(), false)
}

// parseBytes parses buf as Parse does; tests use it to compare decoders.
func parseBytes(buf []byte, lim Limits, fresh bool) (*Log, error) {
	return parseReader(bytes.NewReader(buf), lim, fresh)
}

// parseReader reads r line by line (the file itself is never held whole:
// a log costs what its records keep) and decodes the records. fresh makes
// it use a new decoder (no shared stack, arena or strings) per record that
// builds whole trees (no lazy values); tests compare the two.
func parseReader(r io.Reader, lim Limits, fresh bool) (*Log, error) {
	l := &Log{}
	d := &decoder{maxDepth: lim.MaxDepth, viewTop: true, lazy: true}
	index, problems := 0, 0
	// Records are gathered in blocks and copied once into a slice of
	// their exact number: growing one slice would allocate five times
	// its final size (Go grows large slices by a quarter).
	var blocks [][]Record
	var block []Record
	add := func(lineNo int, piece []byte, at int, twice bool) error {
		if index >= lim.MaxRecords {
			return &LimitError{Line: lineNo, What: "record count", Limit: int64(lim.MaxRecords)}
		}
		if fresh {
			d = &decoder{maxDepth: lim.MaxDepth}
		}
		rec := parseRecord(d, piece[at+len(markerBytes):])
		rec.Line = lineNo
		rec.Index = index
		index++
		if rec.Problem != nil {
			if problems >= maxProblemRecords {
				l.omitted[rec.Problem.Kind]++
				return nil
			}
			problems++
		}
		if twice {
			rec.Deviations = d.deviate(rec.Deviations, "the marker appears more than once on the line; text up to the last one is ignored")
		}
		rec.Deviations = d.shareDeviations(rec.Deviations)
		if len(block) == cap(block) {
			if len(block) > 0 {
				blocks = append(blocks, block)
			}
			block = make([]Record, 0, recordBlockSize(len(blocks)))
		}
		block = append(block, rec)
		return nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than br's buffer, assembled
	lineNo := 0
	for {
		chunk, err := br.ReadSlice('\n')
		l.Bytes += int64(len(chunk))
		if l.Bytes > lim.MaxBytes {
			return nil, &LimitError{What: "file size", Limit: lim.MaxBytes}
		}
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > lim.MaxLineBytes {
				return nil, &LimitError{Line: lineNo + 1, What: "line length", Limit: int64(lim.MaxLineBytes)}
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read log: %w", err)
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) == 0 {
			break // end of input right after a newline
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		lineNo++
		if len(line) > lim.MaxLineBytes {
			return nil, &LimitError{Line: lineNo, What: "line length", Limit: int64(lim.MaxLineBytes)}
		}
		if err := parseLine(line, lineNo, add); err != nil {
			return nil, err
		}
		long = long[:0]
		if err == io.EOF {
			break
		}
	}
	l.Lines = lineNo
	if len(blocks) == 0 {
		l.Records = block
		return l, nil
	}
	blocks = append(blocks, block)
	n := 0
	for _, b := range blocks {
		n += len(b)
	}
	l.Records = make([]Record, 0, n)
	for i, b := range blocks {
		l.Records = append(l.Records, b...)
		blocks[i] = nil
	}
	return l, nil
}

// parseLine hands add each MLLOG record of one line: the text after the
// last marker of each piece between carriage returns.
func parseLine(line []byte, lineNo int, add func(lineNo int, piece []byte, at int, twice bool) error) error {
	at := bytes.Index(line, markerBytes)
	if at < 0 {
		return nil
	}
	if bytes.IndexByte(line, '\r') < 0 {
		// The common case: one marker, no carriage return.
		twice := bytes.Contains(line[at+len(markerBytes):], markerBytes)
		if twice {
			at = bytes.LastIndex(line, markerBytes)
		}
		return add(lineNo, line, at, twice)
	}
	for len(line) > 0 {
		piece := line
		if cr := bytes.IndexByte(line, '\r'); cr >= 0 {
			piece, line = line[:cr], line[cr+1:]
		} else {
			line = nil
		}
		at := bytes.LastIndex(piece, markerBytes)
		if at < 0 {
			continue
		}
		if err := add(lineNo, piece, at, bytes.Count(piece, markerBytes) > 1); err != nil {
			return err
		}
	}
	return nil
}

// pySpaceByte reports whether the latin-1 character b is whitespace to
// Python's str.strip.
func pySpaceByte(b byte) bool {
	switch {
	case b == ' ', b >= '\t' && b <= '\r', b >= 0x1c && b <= 0x1f, b == 0x85, b == 0xa0:
		return true
	}
	return false
}

var eventTypes = map[string]bool{"POINT_IN_TIME": true, "INTERVAL_START": true, "INTERVAL_END": true}

var recordFields = map[string]bool{"namespace": true, "time_ms": true, "event_type": true, "key": true, "value": true, "metadata": true}

// parseRecord decodes the text after the marker. The decoder returns the
// top-level object as a view (viewTop), so nothing of it may be kept but
// the values of its members.
func parseRecord(d *decoder, text []byte) Record {
	end := len(text)
	for end > 0 && pySpaceByte(text[end-1]) {
		end--
	}
	top, err := d.decode(text[:end])
	if err != nil {
		return Record{Problem: &Problem{Kind: ProblemSyntax, Msg: "invalid JSON: " + err.Error()}}
	}
	if top.kind != Object {
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: fmt.Sprintf("record is not a JSON object but %s", kindPhrase(top.kind))}}
	}
	var rec Record
	tv, ok := top.Get("time_ms")
	if !ok {
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: "record has no time_ms"}}
	}
	ts, outcome := pyFloat(tv)
	switch outcome {
	case floatValueError:
		return Record{Problem: &Problem{Kind: ProblemTime, Msg: fmt.Sprintf("time_ms %s is not a number", tv)}}
	case floatCrash:
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: fmt.Sprintf("time_ms %s cannot be converted to a float", tv)}}
	}
	rec.TimeMS = ts
	kv, ok := top.Get("key")
	if !ok {
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: "record has no key"}}
	}
	if rec.Value, ok = top.Get("value"); !ok {
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: "record has no value"}}
	}
	if rec.Metadata, ok = top.Get("metadata"); !ok {
		return Record{Problem: &Problem{Kind: ProblemShape, Msg: "record has no metadata"}}
	}

	dev := func(format string, args ...any) {
		rec.Deviations = d.deviate(rec.Deviations, fmt.Sprintf(format, args...))
	}
	if s, ok := kv.Str(); ok {
		rec.Key = s
		if s == "" {
			dev("key is empty")
		}
	} else {
		dev("key is not a string but %s", kindPhrase(kv.kind))
	}
	if tv.kind != Int {
		dev("time_ms is not an integer but %s", kindPhrase(tv.kind))
	}
	if ns, ok := top.Get("namespace"); !ok {
		dev("namespace is missing")
	} else if s, ok := ns.Str(); ok {
		rec.Namespace = s
	} else {
		dev("namespace is not a string but %s", kindPhrase(ns.kind))
	}
	if et, ok := top.Get("event_type"); !ok {
		dev("event_type is missing")
	} else if s, ok := et.Str(); ok && eventTypes[s] {
		rec.EventType = s
	} else {
		dev("event_type %s is not POINT_IN_TIME, INTERVAL_START or INTERVAL_END", short(et))
	}
	if rec.Metadata.kind != Object {
		dev("metadata is not an object but %s", kindPhrase(rec.Metadata.kind))
	}
	for _, m := range top.items {
		if !recordFields[m.Name] {
			dev("unexpected field %s", short(Value{kind: String, s: m.Name}))
		}
	}
	if d.duplicates {
		dev("an object repeats a member name (the last one counts)")
	}
	if d.nonFinite {
		dev("NaN or Infinity literal (not JSON)")
	}
	return rec
}

// maxDeviations is how many deviations a record lists; the last one says
// that more were left out.
const maxDeviations = 8

// deviate appends msg to devs, sharing the text with equal messages of
// earlier records (logs repeat the same deviation on every line) and
// listing at most maxDeviations.
func (d *decoder) deviate(devs []string, msg string) []string {
	switch {
	case len(devs) > maxDeviations:
		return devs
	case len(devs) == maxDeviations:
		msg = "more deviations not listed"
	}
	if s, ok := d.devs[msg]; ok {
		msg = s
	} else if len(d.devs) < 1024 {
		if d.devs == nil {
			d.devs = map[string]string{}
		}
		d.devs[msg] = msg
	}
	return append(devs, msg)
}

// shareDeviations returns a slice equal to devs, the same one for every
// record of the log with these deviations (hostile logs repeat one line).
func (d *decoder) shareDeviations(devs []string) []string {
	if len(devs) == 0 {
		return nil
	}
	key := strings.Join(devs, "\x00")
	if s, ok := d.devSets[key]; ok {
		return s
	}
	devs = devs[:len(devs):len(devs)]
	if len(d.devSets) < 1024 {
		if d.devSets == nil {
			d.devSets = map[string][]string{}
		}
		d.devSets[key] = devs
	}
	return devs
}

// recordBlockSize is the capacity of the next block of records after n
// full ones: 64, 128, ... up to 4096.
func recordBlockSize(n int) int { return 64 << min(n, 6) }
