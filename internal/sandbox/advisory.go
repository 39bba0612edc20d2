package sandbox

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/safefile"
)

// RuntimeAdvisory is a published escape from a container runtime: a bug
// that lets a program in a container reach the host despite the policy.
type RuntimeAdvisory struct {
	ID      string  `json:"id"`
	Runtime Runtime `json:"runtime"`
	Summary string  `json:"summary"`
	// Fixed lists the first upstream release that fixes it on each
	// maintained branch, oldest branch first. A version is fixed when it
	// is at or above the entry of its own branch (major.minor), or above
	// the last entry; any other version is affected.
	Fixed []string `json:"fixed"`
}

// RuntimeAdvisories are the escapes repro judges a host's runtime by. The
// 2025 runc escapes race runc's own container setup (its mounts of
// /dev/null, /dev/console and /proc files) and so defeat a read-only root
// and no-new-privileges, which hold only once setup is done. No gVisor
// escape is listed: gVisor publishes CVEs only for sandbox-boundary
// crossings, and none is recorded here against a release.
var RuntimeAdvisories = []RuntimeAdvisory{
	{ID: "CVE-2024-21626", Runtime: Runc, Fixed: []string{"1.1.12"},
		Summary: "container escape through a working-directory descriptor runc leaks into the container (\"Leaky Vessels\")"},
	{ID: "CVE-2025-31133", Runtime: Runc, Fixed: []string{"1.2.8", "1.3.3", "1.4.0-rc.3"},
		Summary: "container escape by replacing /dev/null during setup, so that runc's masking of /proc paths bind-mounts a path the container chooses, writable"},
	{ID: "CVE-2025-52565", Runtime: Runc, Fixed: []string{"1.2.8", "1.3.3", "1.4.0-rc.3"},
		Summary: "container escape by racing runc's bind mount of /dev/console, redirecting it to a /proc file the container can then write"},
	{ID: "CVE-2025-52881", Runtime: Runc, Fixed: []string{"1.2.8", "1.3.3", "1.4.0-rc.3"},
		Summary: "runc's writes to /proc during setup (LSM labels, sysctls) redirected through racing shared mounts to other /proc files, defeating the security module and reaching host files"},
}

// Advisory verdicts of a runtime.
const (
	// AdvisoryFixed: the upstream version includes the fix.
	AdvisoryFixed = "fixed"
	// AdvisoryBackported: the version predates the fix, but the changelog
	// of the distribution package that installed the runtime names the
	// advisory.
	AdvisoryBackported = "backported"
	// AdvisoryAffected: the version predates the fix and nothing says the
	// fix was carried back.
	AdvisoryAffected = "affected"
	// AdvisoryUnknown: repro cannot tell (the version cannot be read, or
	// the package's changelog cannot be read or is not the installed
	// version's).
	AdvisoryUnknown = "unknown"
)

// RuntimeFinding is one advisory judged against a host's runtime.
type RuntimeFinding struct {
	ID       string   `json:"id"`
	Summary  string   `json:"summary"`
	Fixed    []string `json:"fixed_in"`
	Verdict  string   `json:"verdict"`
	Evidence string   `json:"evidence"`
}

// Open reports whether the finding leaves a known escape open: affected,
// or not known to be fixed.
func (f RuntimeFinding) Open() bool {
	return f.Verdict == AdvisoryAffected || f.Verdict == AdvisoryUnknown
}

// RuntimeAssessment is a host runtime judged against RuntimeAdvisories.
type RuntimeAssessment struct {
	Runtime Runtime `json:"runtime"`
	Path    string  `json:"path,omitempty"`
	// Version is the version the runtime reports; Upstream the upstream
	// release it names ("1.1.5", "release-20221219.0"), "" when unreadable.
	Version  string `json:"version"`
	Upstream string `json:"upstream_version,omitempty"`
	// Package and PackageVersion name the Debian package that installed
	// the runtime's binary, Changelog the changelog read for backports.
	Package        string           `json:"package,omitempty"`
	PackageVersion string           `json:"package_version,omitempty"`
	Changelog      string           `json:"changelog,omitempty"`
	Findings       []RuntimeFinding `json:"findings"`
	// Note says why the distribution's backports could not be read.
	Note string `json:"note,omitempty"`
}

// Label names the runtime for people: "runc 1.1.5 (Debian runc
// 1.1.5+ds1-1+deb12u1)".
func (a *RuntimeAssessment) Label() string {
	v := a.Upstream
	if v == "" {
		v = fmt.Sprintf("%q", a.Version)
	}
	if a.Package != "" {
		return fmt.Sprintf("%s %s (Debian %s %s)", a.Runtime, v, a.Package, a.PackageVersion)
	}
	return fmt.Sprintf("%s %s", a.Runtime, v)
}

// OpenFindings returns the findings that leave an escape open.
func (a *RuntimeAssessment) OpenFindings() []RuntimeFinding {
	var out []RuntimeFinding
	for _, f := range a.Findings {
		if f.Open() {
			out = append(out, f)
		}
	}
	return out
}

// Bounds on what an assessment reads from the host.
const (
	maxChangelog    = 16 << 20 // decompressed
	maxDpkgList     = 16 << 20
	maxDpkgListsRun = 20000
)

// AssessRuntime judges the runtime rt, whose binary is at path (a name
// without a slash is looked up in PATH) and which reports version, against
// RuntimeAdvisories. root is the host's file system root ("/"; tests give
// a fixture): the Debian package that installed path is found in dpkg's
// database under it, and its changelog
// (usr/share/doc/PACKAGE/changelog.Debian.gz) is searched for each
// advisory the upstream version predates.
func AssessRuntime(root string, rt Runtime, path, version string) *RuntimeAssessment {
	a := &RuntimeAssessment{Runtime: rt, Path: path, Version: version, Findings: []RuntimeFinding{}}
	if path != "" && !strings.Contains(path, "/") {
		if p, err := lookPathIn(root, path); err == nil {
			a.Path = p
		}
	}
	a.Upstream = upstreamVersion(rt, version)
	var advisories []RuntimeAdvisory
	for _, adv := range RuntimeAdvisories {
		if adv.Runtime == rt {
			advisories = append(advisories, adv)
		}
	}
	var changelog []byte
	backportsRead := false
	needBackports := false
	for _, adv := range advisories {
		if a.Upstream == "" || !versionFixed(a.Upstream, adv.Fixed) {
			needBackports = true
		}
	}
	if a.Path != "" {
		pkg, ver, err := dpkgOwner(root, a.Path)
		switch {
		case err != nil:
			a.Note = err.Error()
		case needBackports:
			a.Package, a.PackageVersion = pkg, ver
			a.Changelog = "/usr/share/doc/" + pkg + "/changelog.Debian.gz"
			changelog, err = readChangelog(filepath.Join(root, a.Changelog), ver)
			if err != nil {
				a.Note = err.Error()
			} else {
				backportsRead = true
			}
		default:
			a.Package, a.PackageVersion = pkg, ver
		}
	}
	for _, adv := range advisories {
		f := RuntimeFinding{ID: adv.ID, Summary: adv.Summary, Fixed: adv.Fixed}
		switch {
		case a.Upstream == "":
			f.Verdict = AdvisoryUnknown
			f.Evidence = fmt.Sprintf("the version %q names no release repro can compare", version)
		case versionFixed(a.Upstream, adv.Fixed):
			f.Verdict = AdvisoryFixed
			f.Evidence = fmt.Sprintf("%s %s is at or above the fix (%s)", rt, a.Upstream, strings.Join(adv.Fixed, ", "))
		case backportsRead:
			if entry := changelogEntryNaming(changelog, adv.ID); entry != "" {
				f.Verdict = AdvisoryBackported
				f.Evidence = fmt.Sprintf("%s names it in the entry for %s %s", a.Changelog, a.Package, entry)
			} else {
				f.Verdict = AdvisoryAffected
				f.Evidence = fmt.Sprintf("%s %s predates the fix (%s) and %s (for %s %s) does not name it", rt, a.Upstream, strings.Join(adv.Fixed, ", "), a.Changelog, a.Package, a.PackageVersion)
			}
		case a.Package == "" && a.Note == errNotPackaged.Error():
			f.Verdict = AdvisoryAffected
			f.Evidence = fmt.Sprintf("%s %s predates the fix (%s), and %s is no distribution package's file, so no backport applies", rt, a.Upstream, strings.Join(adv.Fixed, ", "), a.Path)
		default:
			f.Verdict = AdvisoryUnknown
			f.Evidence = fmt.Sprintf("%s %s predates the fix (%s); whether the distribution carried it back cannot be told: %s", rt, a.Upstream, strings.Join(adv.Fixed, ", "), a.Note)
		}
		a.Findings = append(a.Findings, f)
	}
	return a
}

// lookPathIn finds name in the standard binary folders under root.
func lookPathIn(root, name string) (string, error) {
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := d + "/" + name
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

var (
	runcVersion  = regexp.MustCompile(`(?:^|[^0-9.])v?([0-9]+\.[0-9]+\.[0-9]+(?:[-~]rc\.?[0-9]+)?)`)
	goPseudo     = regexp.MustCompile(`\bv0\.0\.0-[0-9]{14}-[0-9a-f]{12}\b`)
	gvisorDate   = regexp.MustCompile(`(?:release-|~|^|[^0-9])((?:19|20)[0-9]{6})(\.[0-9]+)?`)
	changelogTop = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]* \(([^)\s]+)\) `)
	binNMU       = regexp.MustCompile(`\+b[0-9]+$`)
)

// upstreamVersion reads the upstream release out of what a runtime
// reports ("runc version 1.1.5+ds1", "1.4.0-rc.3", "runsc version
// 0.0~20221219.0", "release-20221219.0"): major.minor.patch with an
// optional -rc.N for runc, release-YYYYMMDD.N for gVisor, or for a gVisor
// built from a commit of its Go branch (what scripts/deps.sh builds) that
// commit's Go pseudo-version ("v0.0.0-20260905035102-160fafc42237"),
// which is no release; "" when there is none.
func upstreamVersion(rt Runtime, v string) string {
	switch rt {
	case Runc:
		m := runcVersion.FindStringSubmatch(v)
		if m == nil {
			return ""
		}
		s := strings.Replace(m[1], "~", "-", 1)
		if i := strings.Index(s, "-rc"); i >= 0 && !strings.HasPrefix(s[i:], "-rc.") {
			s = s[:i] + "-rc." + s[i+3:]
		}
		return s
	case Runsc:
		if p := goPseudo.FindString(v); p != "" {
			return p
		}
		m := gvisorDate.FindStringSubmatch(v)
		if m == nil {
			return ""
		}
		n := m[2]
		if n == "" {
			n = ".0"
		}
		return "release-" + m[1] + n
	}
	return ""
}

// semver is major.minor.patch and a release candidate number (0: final).
type semver struct {
	parts [3]int64
	rc    int64
}

func parseSemver(s string) (semver, bool) {
	s = strings.TrimPrefix(s, "release-")
	var v semver
	base, rc, hasRC := strings.Cut(s, "-rc.")
	if hasRC {
		n, err := strconv.ParseInt(rc, 10, 64)
		if err != nil || n <= 0 {
			return v, false
		}
		v.rc = n
	}
	f := strings.Split(base, ".")
	if len(f) < 2 || len(f) > 3 {
		return v, false
	}
	for i, p := range f {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return v, false
		}
		v.parts[i] = n
	}
	return v, true
}

// compare orders versions; a release candidate comes before its release.
func (a semver) compare(b semver) int {
	for i := range a.parts {
		if a.parts[i] != b.parts[i] {
			if a.parts[i] < b.parts[i] {
				return -1
			}
			return 1
		}
	}
	ar, br := a.rc, b.rc
	if ar == 0 {
		ar = 1 << 62
	}
	if br == 0 {
		br = 1 << 62
	}
	switch {
	case ar < br:
		return -1
	case ar > br:
		return 1
	}
	return 0
}

// versionFixed applies RuntimeAdvisory.Fixed to the upstream version v.
func versionFixed(v string, fixed []string) bool {
	got, ok := parseSemver(v)
	if !ok || len(fixed) == 0 {
		return false
	}
	var last semver
	for _, f := range fixed {
		want, ok := parseSemver(f)
		if !ok {
			return false
		}
		if want.parts[0] == got.parts[0] && want.parts[1] == got.parts[1] {
			return got.compare(want) >= 0
		}
		last = want
	}
	return got.compare(last) > 0
}

var errNotPackaged = errors.New("no installed Debian package holds it")

// dpkgOwner returns the installed Debian package that holds path (or the
// file path resolves to) and its version, from dpkg's database under root.
func dpkgOwner(root, path string) (string, string, error) {
	want := map[string]bool{path: true}
	if r, err := filepath.EvalSymlinks(filepath.Join(root, path)); err == nil {
		if rel, err := filepath.Rel(root, r); err == nil {
			want["/"+filepath.ToSlash(rel)] = true
		}
	}
	for p := range want {
		// merged /usr: dpkg may list either spelling
		if rest, ok := strings.CutPrefix(p, "/usr"); ok {
			want[rest] = true
		} else {
			want["/usr"+p] = true
		}
	}
	info := filepath.Join(root, "var/lib/dpkg/info")
	ents, err := os.ReadDir(info)
	if err != nil {
		return "", "", fmt.Errorf("dpkg's database cannot be read (%v)", err)
	}
	// The list named after the binary first, then every list.
	base := filepath.Base(path)
	names := []string{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, ".list") && (n == base+".list" || strings.HasPrefix(n, base+":")) {
			names = append(names, n)
		}
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".list") && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > maxDpkgListsRun {
		names = names[:maxDpkgListsRun]
	}
	owner := ""
	for _, n := range names {
		b, err := safefile.ReadFile(filepath.Join(info, n), maxDpkgList)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			if want[sc.Text()] {
				owner = strings.TrimSuffix(n, ".list")
				break
			}
		}
		if owner != "" {
			break
		}
	}
	if owner == "" {
		return "", "", errNotPackaged
	}
	name, _, _ := strings.Cut(owner, ":")
	status, err := safefile.ReadFile(filepath.Join(root, "var/lib/dpkg/status"), maxDpkgStatus)
	if err != nil {
		return "", "", fmt.Errorf("dpkg's status file cannot be read (%v)", err)
	}
	for _, p := range parseDpkgPackages(status) {
		if p.Name == name {
			return name, p.Version, nil
		}
	}
	return "", "", fmt.Errorf("dpkg lists %s as the owner of %s but not as installed", name, path)
}

// readChangelog reads a Debian changelog (gzip, bounded) and checks that
// its newest entry is the installed version (a binary rebuild's +bN
// suffix aside): a changelog of another version says nothing about this
// one.
func readChangelog(path, installed string) ([]byte, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("the package's changelog %s cannot be read (%v)", path, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(io.LimitReader(f, maxChangelog))
	if err != nil {
		return nil, fmt.Errorf("the package's changelog %s is not gzip (%v)", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxChangelog+1))
	if err != nil {
		return nil, fmt.Errorf("the package's changelog %s cannot be read (%v)", path, err)
	}
	if len(b) > maxChangelog {
		return nil, fmt.Errorf("the package's changelog %s is larger than %d bytes", path, maxChangelog)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	m := changelogTop.FindSubmatch(first)
	if m == nil {
		return nil, fmt.Errorf("the package's changelog %s does not start with a Debian changelog entry", path)
	}
	if top := string(m[1]); top != binNMU.ReplaceAllString(installed, "") && top != installed {
		return nil, fmt.Errorf("the package's changelog %s is for %s, not the installed %s", path, top, installed)
	}
	return b, nil
}

// changelogEntryNaming returns the version of the changelog entry that
// names id (as a whole word), "" when none does.
func changelogEntryNaming(b []byte, id string) string {
	entry := ""
	for _, line := range strings.Split(string(b), "\n") {
		if m := changelogTop.FindStringSubmatch(line); m != nil {
			entry = m[1]
			continue
		}
		for i := 0; ; {
			j := strings.Index(line[i:], id)
			if j < 0 {
				break
			}
			end := i + j + len(id)
			if end == len(line) || line[end] < '0' || line[end] > '9' {
				return entry
			}
			i = end
		}
	}
	return ""
}
