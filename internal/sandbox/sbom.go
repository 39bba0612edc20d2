package sandbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/safefile"
)

// SBOMPath is where the evaluator image's SBOM (CycloneDX 1.6 JSON) is
// stored under REPRO_HOME; its digest is pinned in image.json.
func SBOMPath(home string) string { return layout.Home(home).ImageSBOM() }

// maxDpkgStatus bounds the dpkg status file read from a layer.
const maxDpkgStatus = 64 << 20

// maxSBOM bounds the SBOM file read back.
const maxSBOM = 32 << 20

// dpkgStatusPath is the dpkg status file inside the image's layer.
const dpkgStatusPath = "var/lib/dpkg/status"

// DebPackage is one installed Debian package of the image.
type DebPackage struct {
	Name          string `json:"name"`
	Version       string `json:"version"`
	Architecture  string `json:"architecture"`
	Source        string `json:"source"`         // the source package; Name when dpkg names none
	SourceVersion string `json:"source_version"` // Version when dpkg names none
}

// SBOMTree is a file tree that the image's runs bring in besides the image
// (the harness), named in the SBOM by its tree digest.
type SBOMTree struct {
	Name   string        `json:"name"`
	Digest digest.SHA256 `json:"digest"`
}

// SBOM is the evaluator image's bill of materials as pinned.
type SBOM struct {
	JSON     []byte        // CycloneDX 1.6 JSON
	Digest   digest.SHA256 // SHA-256 of JSON
	Packages int           // Debian packages listed
}

// parseDpkgPackages returns the installed packages of a dpkg status file
// (stanzas whose Status ends in "installed"), sorted by name and
// architecture.
func parseDpkgPackages(b []byte) []DebPackage {
	var out []DebPackage
	for _, stanza := range strings.Split(string(b), "\n\n") {
		var p DebPackage
		var status, source string
		for _, line := range strings.Split(stanza, "\n") {
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch k {
			case "Package":
				p.Name = v
			case "Version":
				p.Version = v
			case "Architecture":
				p.Architecture = v
			case "Status":
				status = v
			case "Source":
				source = v
			}
		}
		if p.Name == "" || p.Version == "" || !strings.HasSuffix(status, " installed") {
			continue
		}
		p.Source, p.SourceVersion = p.Name, p.Version
		if name, ver, ok := strings.Cut(source, " ("); ok && strings.HasSuffix(ver, ")") && name != "" && len(ver) > 1 {
			p.Source, p.SourceVersion = name, strings.TrimSuffix(ver, ")")
		} else if f := strings.Fields(source); len(f) == 1 {
			p.Source = f[0]
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Architecture < out[j].Architecture
	})
	return out
}

// debPURL is the package URL of a Debian binary package.
func debPURL(p DebPackage) string {
	u := "pkg:deb/debian/" + url.PathEscape(p.Name) + "@" + url.QueryEscape(p.Version)
	q := url.Values{}
	if p.Architecture != "" {
		q.Set("arch", p.Architecture)
	}
	q.Set("distro", "debian-"+ImageSuite)
	return u + "?" + q.Encode()
}

// SBOM property names for what CycloneDX has no field for.
const (
	propArchitecture  = "reprolab:deb:architecture"
	propSource        = "reprolab:deb:source"
	propSourceVersion = "reprolab:deb:source_version"
	propDigestKind    = "reprolab:digest:kind"
	propManifest      = "reprolab:image:manifest_digest"
	propSuite         = "reprolab:image:suite"
)

// BuildSBOM writes the CycloneDX 1.6 JSON SBOM of an image: its Debian
// packages and the trees its runs bring in. The output depends only on the
// arguments (no time stamp, no random serial number), so that its digest
// changes exactly when what it describes changes.
func BuildSBOM(img Image, pkgs []DebPackage, trees []SBOMTree) ([]byte, error) {
	return buildSBOM(ImageRepository, ImageSuite, img, pkgs, trees)
}

// BuildImageSBOM is BuildSBOM for another image than the evaluator: its
// repository name, its image ID and manifest digest, and its Debian
// packages.
func BuildImageSBOM(name string, img Image, pkgs []DebPackage) ([]byte, error) {
	return buildSBOM(name, "", img, pkgs, nil)
}

func buildSBOM(name, suite string, img Image, pkgs []DebPackage, trees []SBOMTree) ([]byte, error) {
	if len(pkgs) == 0 {
		return nil, errors.New("the image lists no installed Debian package")
	}
	bom := cdx.NewBOM()
	bom.SpecVersion = cdx.SpecVersion1_6
	bom.Version = 1
	var imgProps []cdx.Property
	if suite != "" {
		imgProps = append(imgProps, cdx.Property{Name: propSuite, Value: suite})
	}
	if img.ManifestDigest != "" {
		imgProps = append(imgProps, cdx.Property{Name: propManifest, Value: img.ManifestDigest})
	}
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		BOMRef:     "image",
		Type:       cdx.ComponentTypeContainer,
		Name:       name,
		Version:    img.ID,
		Properties: &imgProps,
	}}
	comps := make([]cdx.Component, 0, len(pkgs)+len(trees))
	for _, p := range pkgs {
		purl := debPURL(p)
		props := []cdx.Property{
			{Name: propArchitecture, Value: p.Architecture},
			{Name: propSource, Value: p.Source},
			{Name: propSourceVersion, Value: p.SourceVersion},
		}
		comps = append(comps, cdx.Component{
			BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: p.Name, Version: p.Version,
			PackageURL: purl, Properties: &props,
		})
	}
	for _, t := range trees {
		hashes := []cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: t.Digest.Hex()}}
		props := []cdx.Property{{Name: propDigestKind, Value: "repro-tree v1"}}
		comps = append(comps, cdx.Component{
			BOMRef: "tree:" + t.Name, Type: cdx.ComponentTypeFile, Name: t.Name, Version: t.Digest.String(),
			Hashes: &hashes, Properties: &props,
		})
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

// DecodeSBOM decodes a CycloneDX JSON SBOM.
func DecodeSBOM(b []byte) (*cdx.BOM, error) {
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(b), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, err
	}
	return &bom, nil
}

// layerDpkgStatus reads the dpkg status file from an uncompressed layer
// tarball, reading the whole stream so that the caller can check its digest.
func layerDpkgStatus(r io.Reader) ([]byte, error) {
	tr := tar.NewReader(r)
	var status []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read the image layer: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if name != dpkgStatusPath || status != nil {
			continue
		}
		if h.Typeflag != tar.TypeReg || h.Size < 0 || h.Size > maxDpkgStatus {
			return nil, fmt.Errorf("the image layer's %s is not a regular file under %d bytes", dpkgStatusPath, maxDpkgStatus)
		}
		status, err = io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, fmt.Errorf("failed to read the image layer: %w", err)
		}
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, fmt.Errorf("failed to read the image layer: %w", err)
	}
	if status == nil {
		return nil, fmt.Errorf("the image layer has no %s: %w", dpkgStatusPath, errNoStatus)
	}
	return status, nil
}

// verifiedLayerStatus reads the dpkg status from layer r and checks that the
// layer has digest want.
func verifiedLayerStatus(r io.Reader, want digest.SHA256, what string) ([]byte, error) {
	hr := digest.NewReader(bufio.NewReaderSize(r, 1<<20))
	status, err := layerDpkgStatus(hr)
	if err != nil {
		return nil, err
	}
	if got, n := hr.Sum(); got != want {
		return nil, &digest.MismatchError{What: what, WantSize: -1, GotSize: n, WantDigest: want, GotDigest: got}
	}
	return status, nil
}

// pinnedDpkgStatus returns the dpkg status of the pinned image's layer:
// from the cached layer when it has the pinned digest, or else from the
// image as the engine saves it (without running it).
func pinnedDpkgStatus(ctx context.Context, e *Engine, home string, pin *Pin) ([]byte, error) {
	want, err := digest.Parse(pin.LayerDigest)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the evaluator image pin %q is corrupt: bad layer digest %q", pinPath(home), pin.LayerDigest)
	}
	layerPath := filepath.Join(cacheDir(home), "layer.tar")
	if f, err := safefile.OpenRegular(layerPath); err == nil {
		status, err := verifiedLayerStatus(f, want, layerPath)
		f.Close()
		if err == nil {
			return status, nil
		}
	}
	if e == nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the layer of image %s is not cached in %q and no engine is connected", pin.ID, cacheDir(home))
	}
	saved, err := e.cli.ImageSave(ctx, []string{pin.ID})
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the engine cannot save image %s to read its packages: %v; run 'repro image build'", pin.ID, err)
	}
	defer saved.Close()
	tr := tar.NewReader(saved)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read image %s as the engine saved it: %w", pin.ID, err)
		}
		if h.Typeflag != tar.TypeReg || !(strings.HasSuffix(h.Name, "/layer.tar") || strings.HasPrefix(h.Name, "blobs/sha256/")) {
			continue
		}
		if status, err := verifiedLayerStatus(tr, want, h.Name); err == nil {
			return status, nil
		}
	}
	return nil, exitcode.Errorf(exitcode.Integrity, "image %s as the engine saved it has no layer %s with a dpkg status; run 'repro image build'", pin.ID, pin.LayerDigest)
}

// writeSBOM builds the SBOM of the pinned image from its dpkg status,
// stores it under home and records its digest in the pin.
func writeSBOM(home string, pin *Pin, status []byte, trees []SBOMTree) (*SBOM, error) {
	pkgs := parseDpkgPackages(status)
	b, err := BuildSBOM(pin.Image, pkgs, trees)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(SBOMPath(home), b, 0o644); err != nil {
		return nil, err
	}
	d := digest.Of(b)
	pin.SBOMDigest = d.String()
	pin.SBOMTrees = slices.Clone(trees)
	pin.SBOMPackages = len(pkgs)
	pb, err := json.MarshalIndent(pin, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(pinPath(home), append(pb, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &SBOM{JSON: b, Digest: d, Packages: len(pkgs)}, nil
}

// ImageSBOM returns the SBOM of the pinned evaluator image listing trees.
// A pin made before SBOMs, or for other trees, gets one now, from the
// cached layer or the image in engine e (nothing is rebuilt or run); so
// does a pin copied without its SBOM file. An SBOM file that no longer has
// the pinned digest is an exitcode.Integrity error, whatever trees are
// asked for.
func ImageSBOM(ctx context.Context, e *Engine, home string, trees []SBOMTree) (*SBOM, error) {
	pin, err := ReadPin(home)
	if err != nil {
		return nil, err
	}
	if pin.SBOMDigest != "" {
		want, err := digest.Parse(pin.SBOMDigest)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "the evaluator image pin %q is corrupt: bad SBOM digest %q", pinPath(home), pin.SBOMDigest)
		}
		b, err := safefile.ReadFile(SBOMPath(home), maxSBOM)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A pin copied without its SBOM: make it again below.
		case err != nil:
			return nil, exitcode.Errorf(exitcode.Integrity, "the pinned SBOM cannot be read: %v; run 'repro image build' again", err)
		case digest.Of(b) != want:
			return nil, exitcode.Errorf(exitcode.Integrity, "the SBOM %q has digest %s, not the pinned %s: remove it and run 'repro image sbom' (or 'repro image build') again", SBOMPath(home), digest.Of(b), want)
		case slices.Equal(pin.SBOMTrees, trees):
			return &SBOM{JSON: b, Digest: want, Packages: pin.SBOMPackages}, nil
		}
	}
	status, err := pinnedDpkgStatus(ctx, e, home, pin)
	if err != nil {
		return nil, err
	}
	return writeSBOM(home, pin, status, trees)
}

// spdxDocument is the subset of SPDX 2.3 JSON that repro writes. No
// maintained Go module was taken for it: the document has a handful of
// fields, and the SPDX tools module would bring in a large dependency tree
// for them.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	DocumentDescribes []string           `json:"documentDescribes"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	SourceInfo            string            `json:"sourceInfo,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// SPDX converts the pinned CycloneDX SBOM to SPDX 2.3 JSON; the document's
// namespace names the CycloneDX SBOM's digest.
func (s *SBOM) SPDX() ([]byte, error) {
	bom, err := DecodeSBOM(s.JSON)
	if err != nil {
		return nil, fmt.Errorf("the pinned SBOM does not decode: %w", err)
	}
	prop := func(c cdx.Component, name string) string {
		if c.Properties != nil {
			for _, p := range *c.Properties {
				if p.Name == name {
					return p.Value
				}
			}
		}
		return ""
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              ImageRepository,
		DocumentNamespace: "urn:reprolab:sbom:" + s.Digest.Hex(),
		CreationInfo:      spdxCreationInfo{Created: LayerTime.UTC().Format("2006-01-02T15:04:05Z"), Creators: []string{"Tool: repro"}},
		DocumentDescribes: []string{"SPDXRef-Image"},
	}
	imgPkg := spdxPackage{SPDXID: "SPDXRef-Image", Name: ImageRepository, DownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "CONTAINER"}
	if bom.Metadata != nil && bom.Metadata.Component != nil {
		imgPkg.VersionInfo = bom.Metadata.Component.Version
	}
	doc.Packages = append(doc.Packages, imgPkg)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Image"})
	if bom.Components != nil {
		for i, c := range *bom.Components {
			p := spdxPackage{
				SPDXID: "SPDXRef-Package-" + strconv.Itoa(i+1), Name: c.Name, VersionInfo: c.Version,
				DownloadLocation: "NOASSERTION",
			}
			if c.PackageURL != "" {
				p.PrimaryPackagePurpose = "LIBRARY"
				p.ExternalRefs = []spdxExternalRef{{"PACKAGE-MANAGER", "purl", c.PackageURL}}
				p.SourceInfo = fmt.Sprintf("built package from: %s %s (architecture %s)", prop(c, propSource), prop(c, propSourceVersion), prop(c, propArchitecture))
			} else {
				p.PrimaryPackagePurpose = "FILE"
				p.SourceInfo = "repro-tree v1 digest of the tree"
			}
			if c.Hashes != nil {
				for _, h := range *c.Hashes {
					if h.Algorithm == cdx.HashAlgoSHA256 {
						p.Checksums = append(p.Checksums, spdxChecksum{"SHA256", h.Value})
					}
				}
			}
			doc.Packages = append(doc.Packages, p)
			doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-Image", "CONTAINS", p.SPDXID})
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SBOMPackages returns the Debian packages an SBOM written by BuildSBOM
// lists, with their source package and version, in the SBOM's order. A
// package component without a version or source is an error: a scan
// would otherwise miss it silently.
func SBOMPackages(b []byte) ([]DebPackage, error) {
	bom, err := DecodeSBOM(b)
	if err != nil {
		return nil, fmt.Errorf("the SBOM is not CycloneDX JSON: %v", err)
	}
	if bom.Components == nil {
		return nil, errors.New("the SBOM lists no component")
	}
	var out []DebPackage
	for _, c := range *bom.Components {
		if !strings.HasPrefix(c.PackageURL, "pkg:deb/") {
			continue
		}
		p := DebPackage{Name: c.Name, Version: c.Version}
		if c.Properties != nil {
			for _, prop := range *c.Properties {
				switch prop.Name {
				case propArchitecture:
					p.Architecture = prop.Value
				case propSource:
					p.Source = prop.Value
				case propSourceVersion:
					p.SourceVersion = prop.Value
				}
			}
		}
		if p.Name == "" || p.Version == "" || p.Source == "" || p.SourceVersion == "" {
			return nil, fmt.Errorf("the SBOM's package %q lacks a name, version, source or source version", c.BOMRef)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("the SBOM lists no Debian package")
	}
	return out, nil
}

// DpkgStatusPackages returns the installed packages of a dpkg status file,
// as BuildSBOM lists them.
func DpkgStatusPackages(status []byte) []DebPackage { return parseDpkgPackages(status) }

// PinnedSBOM is ImageSBOM with the engine this machine answers on, if
// any: a pin whose SBOM file is there, or whose layer is cached, needs no
// engine.
func PinnedSBOM(ctx context.Context, home string, trees []SBOMTree) (*SBOM, error) {
	e, err := Connect(ctx)
	if err != nil {
		e = nil // the cached layer may do without the engine
	} else {
		defer e.Close()
	}
	return ImageSBOM(ctx, e, home, trees)
}
