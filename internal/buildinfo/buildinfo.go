// Package buildinfo says what a repro binary was built from: its version
// and source commit (stamped by the linker, see scripts/release.sh), the
// Go toolchain, and every Go module linked into it with the go.sum hash
// the build checked, all from the build information the Go linker embeds
// in every binary. It reads that of the running binary or of a binary
// file of any platform, and writes it as a CycloneDX SBOM.
package buildinfo

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"sort"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Info is the build information of one repro binary.
type Info struct {
	// Version and Commit are what the linker stamped (scripts/release.sh)
	// when the running binary reads its own, else the module version and
	// the VCS revision Go recorded, if any.
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	Go       string `json:"go"`
	// Path is the main package, Module the main module.
	Path   string `json:"path"`
	Module string `json:"module"`
	// Platform is GOOS/GOARCH of the build.
	Platform string `json:"platform,omitempty"`
	// Modules are the dependencies linked in, sorted by path.
	Modules []Module `json:"modules"`
	// Settings are the build settings Go recorded (flags, CGO_ENABLED,
	// GOOS, GOARCH, ...), sorted by key.
	Settings []Setting `json:"settings,omitempty"`
}

// Module is one dependency: path, version and the go.sum hash ("h1:...")
// of its content; Replace is the module it was replaced by, if any.
type Module struct {
	Path    string  `json:"path"`
	Version string  `json:"version"`
	Sum     string  `json:"sum,omitempty"`
	Replace *Module `json:"replace,omitempty"`
}

// Setting is one build setting.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Self is the build information of the running binary; version and
// commit are the values the linker stamped ("" when none).
func Self(version, commit string) (Info, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}, errors.New("this binary carries no build information (it was not built in module mode)")
	}
	return from(bi, version, commit), nil
}

// maxBinary bounds a binary file ReadFile reads.
const maxBinary = 1 << 30

// ReadFile reads the build information of the Go binary at path (of any
// GOOS and GOARCH). What the linker stamped is not in it (Go leaves
// -ldflags out of the build information of a -trimpath build), so the
// version is the module's ("devel" for a build from a checkout) and the
// commit Go's VCS stamp, if any.
func ReadFile(path string) (Info, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Info{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxBinary {
		return Info{}, fmt.Errorf("%q is not a regular file of at most %d bytes", path, int64(maxBinary))
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Info{}, fmt.Errorf("%q carries no Go build information: %v", path, err)
	}
	return from(bi, "", ""), nil
}

func from(bi *debug.BuildInfo, version, commit string) Info {
	in := Info{Version: version, Commit: commit, Go: bi.GoVersion, Path: bi.Path, Module: bi.Main.Path}
	var goos, goarch string
	for _, s := range bi.Settings {
		in.Settings = append(in.Settings, Setting{s.Key, s.Value})
		switch s.Key {
		case "vcs.revision":
			if in.Commit == "" {
				in.Commit = s.Value
			}
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		in.Version = bi.Main.Version
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if goos != "" && goarch != "" {
		in.Platform = goos + "/" + goarch
	}
	sort.Slice(in.Settings, func(i, j int) bool { return in.Settings[i].Key < in.Settings[j].Key })
	for _, d := range bi.Deps {
		in.Modules = append(in.Modules, module(d))
	}
	sort.Slice(in.Modules, func(i, j int) bool { return in.Modules[i].Path < in.Modules[j].Path })
	return in
}

func module(d *debug.Module) Module {
	m := Module{Path: d.Path, Version: d.Version, Sum: d.Sum}
	if d.Replace != nil {
		r := module(d.Replace)
		m.Replace = &r
	}
	return m
}

// PURL is the package URL of a Go module.
func (m Module) PURL() string {
	return "pkg:golang/" + m.Path + "@" + url.PathEscape(m.Version)
}

// SBOM property names for what CycloneDX has no field for.
const (
	propGoSum     = "reprolab:go:sum"
	propGoVersion = "reprolab:go:version"
	propCommit    = "reprolab:vcs:commit"
	propReplace   = "reprolab:go:replaced_by"
)

// SBOM writes the CycloneDX 1.6 JSON SBOM of in: repro (the main module)
// as the described component, with the Go toolchain version and the
// commit, and every linked module as a library component with its
// package URL and go.sum hash. The output depends only on in (no time
// stamp, no random serial number).
func SBOM(in Info) ([]byte, error) {
	bom := cdx.NewBOM()
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.Version = 1
	mainProps := []cdx.Property{{Name: propGoVersion, Value: in.Go}}
	if in.Commit != "" {
		mainProps = append(mainProps, cdx.Property{Name: propCommit, Value: in.Commit})
	}
	main := Module{Path: in.Module, Version: in.Version}
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		BOMRef: main.PURL(), Type: cdx.ComponentTypeApplication, Name: in.Module, Version: in.Version,
		PackageURL: main.PURL(), Properties: &mainProps,
	}}
	comps := make([]cdx.Component, 0, len(in.Modules))
	for _, m := range in.Modules {
		var props []cdx.Property
		if m.Sum != "" {
			props = append(props, cdx.Property{Name: propGoSum, Value: m.Sum})
		}
		if m.Replace != nil {
			props = append(props, cdx.Property{Name: propReplace, Value: m.Replace.Path + "@" + m.Replace.Version})
		}
		c := cdx.Component{BOMRef: m.PURL(), Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: m.PURL()}
		if len(props) > 0 {
			c.Properties = &props
		}
		comps = append(comps, c)
	}
	bom.Components = &comps
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("failed to encode the SBOM: %w", err)
	}
	return buf.Bytes(), nil
}
