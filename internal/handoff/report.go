package handoff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxReportBytes bounds a preflight report read back from a node.
const MaxReportBytes = 1 << 20

// PreflightReport is what preflight.sh wrote on the node: it is untrusted
// (it comes back from a machine repro does not control) and is parsed
// strictly by ParsePreflightReport.
type PreflightReport struct {
	Manifest string
	Workload string
	Mode     PreflightMode
	Host     string
	Time     string
	Target   string
	Checks   []ReportCheck
	// Digests maps "class/path" to what the node computed: a hex digest,
	// "missing", or "size-N" for a file of the wrong size.
	Digests map[string]string
	// Result is CheckOK or CheckFail; Failures the count the script gave.
	Result   CheckStatus
	Failures int
}

// CheckStatus is the outcome of one preflight check, or of a whole
// preflight (ok or fail only), as preflight.sh writes it.
type CheckStatus string

// The statuses a preflight report uses.
const (
	CheckOK   CheckStatus = "ok"
	CheckFail CheckStatus = "fail"
	CheckNote CheckStatus = "note" // information, never a failure
)

// PreflightMode is what a preflight run checked: the node, the container,
// or both.
type PreflightMode string

// The modes of preflight.sh --mode.
const (
	ModeNode      PreflightMode = "node"
	ModeContainer PreflightMode = "container"
	ModeAll       PreflightMode = "all"
)

// checksNode and checksContainer say what a mode covers.
func (m PreflightMode) checksNode() bool      { return m == ModeNode || m == ModeAll }
func (m PreflightMode) checksContainer() bool { return m == ModeContainer || m == ModeAll }

// ReportCheck is one check line of a report.
type ReportCheck struct {
	Status      CheckStatus
	Requirement string
	Message     string
}

// ParsePreflightReport reads a report strictly: the header line, known
// line kinds only, one result line, last. Any other line is an error.
func ParsePreflightReport(b []byte) (*PreflightReport, error) {
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("report is %d bytes, over the limit of %d", len(b), MaxReportBytes)
	}
	if !bytes.HasPrefix(b, []byte("repro-preflight v1\n")) {
		return nil, errors.New("not a preflight report (no repro-preflight v1 header)")
	}
	r := &PreflightReport{Digests: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxReportBytes)
	sc.Scan() // header
	n := 1
	seen := map[string]bool{}
	for sc.Scan() {
		n++
		line := sc.Text()
		if r.Result != "" {
			return nil, fmt.Errorf("line %d: text after the result line", n)
		}
		kind, rest, _ := strings.Cut(line, " ")
		if err := checkText(rest); err != nil || len(line) > 8192 {
			return nil, fmt.Errorf("line %d: malformed", n)
		}
		switch kind {
		case "manifest", "workload", "mode", "host", "time", "target":
			if seen[kind] {
				return nil, fmt.Errorf("line %d: %s given twice", n, kind)
			}
			seen[kind] = true
			switch kind {
			case "manifest":
				r.Manifest = rest
			case "workload":
				r.Workload = rest
			case "mode":
				r.Mode = PreflightMode(rest)
			case "host":
				r.Host = rest
			case "time":
				r.Time = rest
			case "target":
				r.Target = rest
			}
		case "check":
			status, rest2, ok1 := strings.Cut(rest, " ")
			req, msg, ok2 := strings.Cut(rest2, " ")
			switch CheckStatus(status) {
			case CheckOK, CheckFail, CheckNote:
			default:
				ok1 = false
			}
			if !ok1 || !ok2 || req == "" {
				return nil, fmt.Errorf("line %d: malformed check line", n)
			}
			if len(r.Checks) >= 100000 {
				return nil, fmt.Errorf("line %d: too many checks", n)
			}
			r.Checks = append(r.Checks, ReportCheck{Status: CheckStatus(status), Requirement: req, Message: msg})
		case "sha256", "tree":
			got, rest2, ok1 := strings.Cut(rest, " ")
			class, p, ok2 := strings.Cut(rest2, " ")
			if !ok1 || !ok2 || class == "" || p == "" {
				return nil, fmt.Errorf("line %d: malformed digest line", n)
			}
			if !isHex(got, 64) && got != "missing" && !strings.HasPrefix(got, "size-") {
				return nil, fmt.Errorf("line %d: malformed digest %q", n, clip(got))
			}
			key := class + "/" + p
			if _, dup := r.Digests[key]; dup {
				return nil, fmt.Errorf("line %d: %s given twice", n, key)
			}
			if len(r.Digests) >= 100000 {
				return nil, fmt.Errorf("line %d: too many digests", n)
			}
			r.Digests[key] = got
		case "result":
			res, cnt, ok := strings.Cut(rest, " ")
			k, err := strconv.Atoi(cnt)
			result := CheckStatus(res)
			if !ok || err != nil || k < 0 || (result != CheckOK && result != CheckFail) || (result == CheckOK) != (k == 0) {
				return nil, fmt.Errorf("line %d: malformed result line", n)
			}
			r.Result, r.Failures = result, k
		default:
			return nil, fmt.Errorf("line %d: unknown line kind %q", n, clip(kind))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	if r.Result == "" {
		return nil, errors.New("no result line: the preflight did not finish")
	}
	if !isHex(r.Manifest, 64) {
		return nil, errors.New("no manifest digest")
	}
	switch r.Mode {
	case ModeNode, ModeContainer, ModeAll:
	default:
		return nil, fmt.Errorf("unknown mode %q", clip(string(r.Mode)))
	}
	return r, nil
}
