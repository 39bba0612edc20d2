package vulnscan

import (
	"fmt"
	"strings"

	debversion "github.com/knqyf263/go-deb-version"
	"golang.org/x/mod/semver"
)

// versionOrder is how one ecosystem orders its versions, and which OSV
// range types describe them.
type versionOrder struct {
	name   string
	ranges []string
	parse  func(string) (version, error)
}

// version is a parsed version of one order.
type version interface {
	// compare is <0, 0 or >0 as the version is below, equal to or above
	// o, a version of the same order.
	compare(o version) int
}

// orderOf returns the version order of an OSV ecosystem, nil when none is
// known: Debian's ("Debian", "Debian:<release>") and Go's ("Go").
func orderOf(ecosystem string) *versionOrder {
	switch {
	case isDebian(ecosystem):
		return &debianOrder
	case ecosystem == GoEcosystem:
		return &goOrder
	}
	return nil
}

// GoEcosystem is the OSV ecosystem of Go modules and the Go standard
// library (package "stdlib").
const GoEcosystem = "Go"

var debianOrder = versionOrder{name: "Debian", ranges: []string{rangeEcosystem}, parse: func(s string) (version, error) {
	v, err := debversion.NewVersion(s)
	return debVersion{v}, err
}}

type debVersion struct{ v debversion.Version }

func (d debVersion) compare(o version) int { return d.v.Compare(o.(debVersion).v) }

// goOrder is semantic versioning as the Go module system orders it
// (golang.org/x/mod/semver). OSV writes Go versions without the "v"
// prefix; both forms are read.
var goOrder = versionOrder{name: "semantic", ranges: []string{rangeSemver, rangeEcosystem}, parse: func(s string) (version, error) {
	v := s
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return nil, fmt.Errorf("%q is not a semantic version", clip(s))
	}
	return goVersion(v), nil
}}

type goVersion string

func (g goVersion) compare(o version) int { return semver.Compare(string(g), string(o.(goVersion))) }

// less reports whether a is below b; an unparsable version is below none.
func (o *versionOrder) less(a, b string) bool {
	va, err1 := o.parse(a)
	vb, err2 := o.parse(b)
	return err1 == nil && err2 == nil && va.compare(vb) < 0
}

// valid reports whether s is a version of the order.
func (o *versionOrder) valid(s string) bool {
	_, err := o.parse(s)
	return err == nil
}
