package vulnscan

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/strictjson"
)

// Bounds on a waivers file.
const (
	maxWaiversBytes = 1 << 20
	maxWaivers      = 10000
)

// DateLayout is the form of a waiver's expiry date.
const DateLayout = "2006-01-02"

// Waiver accepts one advisory for one source package until the end of its
// expiry date (UTC), for a stated reason.
type Waiver struct {
	// ID is the advisory id or one of its aliases or upstream ids (a
	// CVE id).
	ID      string `json:"id"`
	Package string `json:"package"`
	Reason  string `json:"reason"`
	Expires string `json:"expires"`
}

// waiversFile is the JSON document --waivers names.
type waiversFile struct {
	Waivers []Waiver `json:"waivers"`
}

// ParseWaivers checks a waivers document: every entry names an id, a
// source package, a reason, and an expiry date that has not passed at
// now; unknown fields, duplicates and trailing data are errors. A waiver
// past its expiry is refused, not ignored: it is renewed with a new
// reason or removed.
func ParseWaivers(b []byte, now time.Time) ([]Waiver, error) {
	if len(b) > maxWaiversBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxWaiversBytes)
	}
	var wf waiversFile
	if err := strictjson.Decode(b, &wf); err != nil {
		return nil, fmt.Errorf("not a waivers document: %v", err)
	}
	if len(wf.Waivers) > maxWaivers {
		return nil, fmt.Errorf("more than %d waivers", maxWaivers)
	}
	today := now.UTC().Format(DateLayout)
	seen := map[[2]string]bool{}
	for i, w := range wf.Waivers {
		for _, f := range [][2]string{{"id", w.ID}, {"package", w.Package}} {
			if err := checkField(f[0], f[1]); err != nil {
				return nil, fmt.Errorf("waiver %d: %v", i+1, err)
			}
		}
		if strings.TrimSpace(w.Reason) == "" {
			return nil, fmt.Errorf("waiver %d (%s in %s) gives no reason", i+1, w.ID, w.Package)
		}
		if len(w.Reason) > maxSummaryBytes {
			return nil, fmt.Errorf("waiver %d (%s in %s): the reason is longer than %d bytes", i+1, w.ID, w.Package, maxSummaryBytes)
		}
		exp, err := time.Parse(DateLayout, w.Expires)
		if err != nil {
			return nil, fmt.Errorf("waiver %d (%s in %s): expires %q is not a date YYYY-MM-DD", i+1, w.ID, w.Package, clip(w.Expires))
		}
		if exp.Format(DateLayout) < today {
			return nil, fmt.Errorf("waiver %d (%s in %s) expired on %s: renew it with a current reason or remove it", i+1, w.ID, w.Package, w.Expires)
		}
		k := [2]string{w.ID, w.Package}
		if seen[k] {
			return nil, fmt.Errorf("waiver %d (%s in %s) is given twice", i+1, w.ID, w.Package)
		}
		seen[k] = true
	}
	return wf.Waivers, nil
}

// LoadWaivers reads and parses the waivers file the user named; any
// problem is an exitcode.Usage error naming the file.
func LoadWaivers(path string, now time.Time) ([]Waiver, error) {
	f, err := safefile.OpenNamed(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--waivers %q: %v", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxWaiversBytes+1))
	if err == nil && len(b) > maxWaiversBytes {
		err = fmt.Errorf("larger than %d bytes", maxWaiversBytes)
	}
	if err == nil {
		var ws []Waiver
		if ws, err = ParseWaivers(b, now); err == nil {
			return ws, nil
		}
	}
	return nil, exitcode.Errorf(exitcode.Usage, "--waivers %q: %v", path, err)
}

// ApplyWaivers marks each finding that a waiver names (by advisory id or
// alias or upstream id, and source package) and returns the number left unwaived and the
// highest level among them ("none" when there is none).
func ApplyWaivers(fs []Finding, ws []Waiver) (int, string) {
	unwaived, max := 0, "none"
	for i := range fs {
		f := &fs[i]
		for j := range ws {
			w := ws[j]
			if w.Package == f.Package && (w.ID == f.ID || slices.Contains(f.Aliases, w.ID) || slices.Contains(f.Upstream, w.ID)) {
				f.Waiver = &w
				break
			}
		}
		if f.Waiver == nil {
			unwaived++
			if LevelRank(f.Severity) > LevelRank(max) {
				max = f.Severity
			}
		}
	}
	return unwaived, max
}

var errNoSubject = errors.New("the attestation names no image")
