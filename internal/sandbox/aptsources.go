package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/safefile"
)

// HostAptDir is where the host's apt configuration lives; the evaluator
// image's mirror is taken from its sources unless one is named.
const HostAptDir = "/etc/apt"

// maxSourcesFile bounds the size of one apt sources file read.
const maxSourcesFile = 1 << 20

// AptSource is one entry of an apt sources list, in either the one-line
// form (sources.list, *.list) or the deb822 form (*.sources).
type AptSource struct {
	Types      []string // "deb", "deb-src"
	URI        string
	Suites     []string
	Components []string
	Enabled    bool
	File       string // the file the entry came from
}

// parseOneLineSources parses the one-line form: "deb [opts] URI SUITE COMP...".
// Lines it cannot read are skipped, as apt would refuse them anyway.
func parseOneLineSources(b []byte, file string) []AptSource {
	var out []AptSource
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		typ, rest := f[0], f[1:]
		if strings.HasPrefix(rest[0], "[") {
			end := slices.IndexFunc(rest, func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		}
		if len(rest) < 2 {
			continue
		}
		out = append(out, AptSource{Types: []string{typ}, URI: rest[0], Suites: []string{rest[1]}, Components: rest[2:], Enabled: true, File: file})
	}
	return out
}

// parseDeb822Sources parses the deb822 form: stanzas of "Key: value" fields
// (continuation lines start with a space or tab) separated by blank lines.
// Field names are case-insensitive; a stanza without Types, URIs or Suites
// is skipped.
func parseDeb822Sources(b []byte, file string) []AptSource {
	var out []AptSource
	fields := map[string]string{}
	last := ""
	flush := func() {
		if len(fields) > 0 {
			s := AptSource{
				Types:      strings.Fields(fields["types"]),
				Suites:     strings.Fields(fields["suites"]),
				Components: strings.Fields(fields["components"]),
				Enabled:    !strings.EqualFold(strings.TrimSpace(fields["enabled"]), "no"),
				File:       file,
			}
			for _, u := range strings.Fields(fields["uris"]) {
				s.URI = u
				if len(s.Types) > 0 && len(s.Suites) > 0 {
					out = append(out, s)
				}
			}
		}
		fields, last = map[string]string{}, ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				last = ""
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

// ReadAptSources reads the apt sources under dir (sources.list, then the
// *.list and *.sources files of sources.list.d in name order, as apt does;
// other names there are ignored, as apt ignores them). Missing files are
// not an error.
func ReadAptSources(dir string) ([]AptSource, error) {
	var out []AptSource
	read := func(path string, parse func([]byte, string) []AptSource) error {
		b, err := safefile.ReadFile(path, maxSourcesFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read the apt sources %q: %w", path, err)
		}
		out = append(out, parse(b, path)...)
		return nil
	}
	if err := read(filepath.Join(dir, "sources.list"), parseOneLineSources); err != nil {
		return nil, err
	}
	d := filepath.Join(dir, "sources.list.d")
	entries, err := os.ReadDir(d)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("failed to list the apt sources %q: %w", d, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		var err error
		switch {
		case strings.HasSuffix(n, ".list"):
			err = read(filepath.Join(d, n), parseOneLineSources)
		case strings.HasSuffix(n, ".sources"):
			err = read(filepath.Join(d, n), parseDeb822Sources)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DebianMirror picks the mirror for suite from sources: the first enabled
// binary ("deb") entry for exactly that suite (not suite-updates or
// suite-security) with the main component and a URI debootstrap can
// fetch from (http, https or file). It returns "" when there is none.
func DebianMirror(sources []AptSource, suite string) string {
	for _, s := range sources {
		if s.Enabled && slices.Contains(s.Types, "deb") && slices.Contains(s.Suites, suite) &&
			slices.Contains(s.Components, "main") && CheckMirror(s.URI) == nil {
			return s.URI
		}
	}
	return ""
}

// CheckMirror accepts an absolute http, https or file URL with a host (or,
// for file, a path): what debootstrap can fetch from.
func CheckMirror(mirror string) error {
	u, err := url.Parse(mirror)
	if err != nil {
		return fmt.Errorf("mirror %q is not a URL: %v", mirror, err)
	}
	switch {
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
	case u.Scheme == "file" && u.Path != "":
	default:
		return fmt.Errorf("mirror %q is not an http, https or file URL", mirror)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(mirror, " \t\n") {
		return fmt.Errorf("mirror %q has credentials, a query, a fragment or spaces", mirror)
	}
	return nil
}

// hostMirror returns the Debian mirror for ImageSuite from the apt sources
// under aptDir, or an exitcode.Precondition error naming what is missing
// and the --mirror fix.
func hostMirror(aptDir string) (string, error) {
	sources, err := ReadAptSources(aptDir)
	if err != nil {
		return "", exitcode.Errorf(exitcode.Precondition, "%v; name a Debian mirror with 'repro image build --mirror URL'", err)
	}
	if m := DebianMirror(sources, ImageSuite); m != "" {
		return m, nil
	}
	return "", exitcode.Errorf(exitcode.Precondition,
		"no Debian mirror for %s found: no enabled 'deb' entry for suite %s with component main in %q, %q or %q; name one with 'repro image build --mirror URL'",
		ImageSuite, ImageSuite, filepath.Join(aptDir, "sources.list"), filepath.Join(aptDir, "sources.list.d", "*.list"), filepath.Join(aptDir, "sources.list.d", "*.sources"))
}
