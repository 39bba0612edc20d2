// Package release makes and checks the provenance of a repro release, the
// folder scripts/release.sh writes:
//
//	repro-linux-amd64, repro-linux-arm64   the binaries
//	sbom.cdx.json                          CycloneDX SBOM of their Go modules
//	provenance.sigstore.json               SLSA Provenance v1 over the binaries,
//	                                       a DSSE envelope signed with the release
//	                                       key, in a Sigstore bundle v0.3
//	SHA256SUMS                             sha256sum of the binaries and the SBOM
//
// The provenance names the source repository and commit, the builder
// (scripts/release.sh), the Go toolchain, the build command and settings
// of each platform, and every Go module linked in with its go.sum hash.
// Verify checks it with the release's public key alone: offline, no
// transparency log; cosign verify-blob-attestation checks the same file
// (docs/release.md).
package release

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/buildinfo"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/safefile"
	"github.com/reprolab/repro/internal/sigbundle"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Names of a release.
const (
	ProvenanceFile = "provenance.sigstore.json"
	SBOMFile       = "sbom.cdx.json"
	SumsFile       = "SHA256SUMS"

	PayloadType             = "application/vnd.in-toto+json"
	ProvenancePredicateType = "https://slsa.dev/provenance/v1"
	// BuildType is the SLSA build type of a release: external parameters
	// source, commit, version and platforms; internal parameters the Go
	// toolchain and, per platform, the build command and the build
	// settings Go recorded; resolved dependencies the source at the commit
	// and every Go module with its go.sum hash (DigestSet dirHash).
	BuildType = "https://reprolab.github.io/repro/buildtype/release/v1"
	// BuilderID names scripts/release.sh, run by a maintainer.
	BuilderID = "https://reprolab.github.io/repro/builder/release.sh/v1"
	// DefaultSource is the repository a release is built from.
	DefaultSource = "git+https://github.com/reprolab/repro"
)

// Platforms are the platforms a release is built for.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// BinaryName is the file name of the binary for platform.
func BinaryName(platform string) string { return "repro-" + strings.ReplaceAll(platform, "/", "-") }

// Options are what a release states besides its binaries.
type Options struct {
	Version string
	Commit  string // the full git commit the binaries were built from
	Source  string // the repository (DefaultSource when "")
	// BuildCommand maps each platform to the command that built it (a
	// shell command line).
	BuildCommand map[string]string
	StartedOn    time.Time
	FinishedOn   time.Time
}

// maxBinary bounds a release binary.
const maxBinary = 1 << 30

// Attest reads the binaries of every platform in dir, checks that they
// link the same modules with the same toolchain, and writes dir/SBOMFile
// and dir/ProvenanceFile, signed with k.
func Attest(dir string, k *keys.Signer, o Options) error {
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if o.Version == "" || len(o.Commit) != 40 || strings.Trim(o.Commit, "0123456789abcdef") != "" {
		return exitcode.Errorf(exitcode.Usage, "a release needs a version and the full 40-digit git commit (got %q, %q)", o.Version, o.Commit)
	}
	var subjects []*intoto.ResourceDescriptor
	var info buildinfo.Info
	settings := map[string]any{}
	for i, p := range Platforms {
		path := filepath.Join(dir, BinaryName(p))
		in, err := buildinfo.ReadFile(path)
		if err != nil {
			return exitcode.Errorf(exitcode.Precondition, "release binary for %s: %v", p, err)
		}
		if in.Platform != p {
			return exitcode.Errorf(exitcode.Integrity, "%s is a binary for %q, not %s", path, in.Platform, p)
		}
		if i == 0 {
			info = in
		} else if in.Go != info.Go || !reflect.DeepEqual(in.Modules, info.Modules) {
			return exitcode.Errorf(exitcode.Integrity, "%s was built with other modules or another Go toolchain than %s", path, BinaryName(Platforms[0]))
		}
		var ss []any
		for _, s := range in.Settings {
			ss = append(ss, s.Key+"="+s.Value)
		}
		settings[p] = map[string]any{"build_command": o.BuildCommand[p], "settings": ss}
		d, _, err := fileDigest(path)
		if err != nil {
			return err
		}
		subjects = append(subjects, &intoto.ResourceDescriptor{Name: BinaryName(p), Digest: map[string]string{"sha256": d.Hex()}})
	}
	info.Version, info.Commit = o.Version, o.Commit
	sbom, err := buildinfo.SBOM(info)
	if err != nil {
		return err
	}
	pred, err := provenance(info, o, settings, digest.Of(sbom))
	if err != nil {
		return err
	}
	ps, err := toStruct(pred)
	if err != nil {
		return err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subjects, PredicateType: ProvenancePredicateType, Predicate: ps}
	if err := st.Validate(); err != nil {
		return fmt.Errorf("the release statement is invalid: %v", err)
	}
	payload, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(st)
	if err != nil {
		return err
	}
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		return err
	}
	env, err := signer.SignPayload(context.Background(), PayloadType, append(payload, '\n'))
	if err != nil {
		return fmt.Errorf("failed to sign the release provenance: %w", err)
	}
	b, err := sigbundle.Wrap(env, keys.ID(k.PublicKey()))
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, SBOMFile), sbom, 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, ProvenanceFile), b, 0o644)
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// provenance is the SLSA predicate of a release.
func provenance(in buildinfo.Info, o Options, settings map[string]any, sbom digest.SHA256) (*slsa.Provenance, error) {
	ext, err := structpb.NewStruct(map[string]any{"source": o.Source, "commit": o.Commit, "version": o.Version, "platforms": stringsAny(Platforms)})
	if err != nil {
		return nil, err
	}
	internal, err := structpb.NewStruct(map[string]any{"go": in.Go, "platforms": settings})
	if err != nil {
		return nil, err
	}
	deps := []*intoto.ResourceDescriptor{{Name: "source", Uri: o.Source + "@" + o.Commit, Digest: map[string]string{"gitCommit": o.Commit}}}
	for _, m := range in.Modules {
		rd := &intoto.ResourceDescriptor{Name: m.Path, Uri: m.PURL()}
		if h, ok := dirHash(m.Sum); ok {
			rd.Digest = map[string]string{"dirHash": h}
		}
		ann := map[string]any{"go_sum": m.Sum}
		if m.Replace != nil {
			ann["replaced_by"] = m.Replace.Path + "@" + m.Replace.Version
		}
		if rd.Annotations, err = structpb.NewStruct(ann); err != nil {
			return nil, err
		}
		deps = append(deps, rd)
	}
	p := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{BuildType: BuildType, ExternalParameters: ext, InternalParameters: internal, ResolvedDependencies: deps},
		RunDetails: &slsa.RunDetails{
			Builder: &slsa.Builder{Id: BuilderID, Version: map[string]string{"go": in.Go}},
			Metadata: &slsa.BuildMetadata{
				InvocationId: "release-" + o.Version + "-" + o.Commit[:12],
				StartedOn:    timestamppb.New(o.StartedOn.UTC()), FinishedOn: timestamppb.New(o.FinishedOn.UTC()),
			},
			Byproducts: []*intoto.ResourceDescriptor{{Name: SBOMFile, Digest: map[string]string{"sha256": sbom.Hex()}, MediaType: "application/vnd.cyclonedx+json"}},
		},
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the release provenance is invalid: %v", err)
	}
	return p, nil
}

// dirHash is a go.sum hash ("h1:" and base64 of SHA-256) as the in-toto
// DigestSet's dirHash (lowercase hex).
func dirHash(sum string) (string, bool) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != 32 {
		return "", false
	}
	return hex.EncodeToString(b), true
}

func toStruct(p *slsa.Provenance) (*structpb.Struct, error) {
	b, err := protojson.Marshal(p)
	if err != nil {
		return nil, err
	}
	var s structpb.Struct
	return &s, protojson.Unmarshal(b, &s)
}

func fileDigest(path string) (digest.SHA256, int64, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return digest.SHA256{}, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return digest.SHA256{}, 0, err
	}
	if fi.Size() > maxBinary {
		return digest.SHA256{}, 0, fmt.Errorf("%s is larger than %d bytes", path, int64(maxBinary))
	}
	return digest.ReaderFrom(f)
}

// Verified is what Verify found a release to be.
type Verified struct {
	Version  string            `json:"version"`
	Commit   string            `json:"commit"`
	Source   string            `json:"source"`
	Go       string            `json:"go"`
	KeyID    string            `json:"key_id"`
	Binaries map[string]string `json:"binaries"` // file name -> sha256
	SBOM     string            `json:"sbom_sha256"`
	Modules  int               `json:"modules"`
}

// maxSmall bounds the provenance, the SBOM and SHA256SUMS.
const maxSmall = 16 << 20

// Verify checks the release in dir against the release key pub: the
// provenance's signature, its statement and build type, that its subjects
// are exactly the binaries of every platform with the digests they have,
// that each binary links exactly the modules (and toolchain) the
// provenance names with their go.sum hashes, that the SBOM is the one it
// names, and that SHA256SUMS agrees with the files. Every problem is an
// exitcode.Integrity error; a missing file is one too.
func Verify(dir string, pub []byte) (*Verified, error) {
	pk, err := keys.ParsePublic(pub)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "release key: %v", err)
	}
	bad := func(format string, args ...any) error {
		return exitcode.Errorf(exitcode.Integrity, "release %q: "+format, append([]any{dir}, args...)...)
	}
	b, err := safefile.ReadFile(filepath.Join(dir, ProvenanceFile), maxSmall)
	if err != nil {
		return nil, bad("%v", err)
	}
	env, hint, err := sigbundle.Unwrap(b)
	if err != nil {
		return nil, bad("%s: %v", ProvenanceFile, err)
	}
	if env.PayloadType != PayloadType {
		return nil, bad("%s: payload type %q, want %q", ProvenanceFile, env.PayloadType, PayloadType)
	}
	ev, err := dsse.NewEnvelopeVerifier(keys.Verifier(pk))
	if err != nil {
		return nil, err
	}
	if _, err := ev.Verify(context.Background(), env); err != nil {
		return nil, bad("%s: the signature does not verify with the release key %s: %v", ProvenanceFile, keys.ID(pk), err)
	}
	if hint != keys.ID(pk) {
		return nil, bad("%s: the bundle names key %q, not the release key %s", ProvenanceFile, hint, keys.ID(pk))
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, bad("%s: %v", ProvenanceFile, err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		return nil, bad("%s: not an in-toto statement: %v", ProvenanceFile, err)
	}
	if st.GetType() != intoto.StatementTypeUri || st.GetPredicateType() != ProvenancePredicateType || st.Validate() != nil {
		return nil, bad("%s: statement type %q, predicate type %q, want %q and %q", ProvenanceFile, st.GetType(), st.GetPredicateType(), intoto.StatementTypeUri, ProvenancePredicateType)
	}
	pj, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, err
	}
	var p slsa.Provenance
	if err := protojson.Unmarshal(pj, &p); err != nil || p.Validate() != nil {
		return nil, bad("%s: not a valid SLSA provenance: %v", ProvenanceFile, errors.Join(err, p.Validate()))
	}
	if bt := p.GetBuildDefinition().GetBuildType(); bt != BuildType {
		return nil, bad("%s: build type %q, want %q", ProvenanceFile, bt, BuildType)
	}
	ext := p.GetBuildDefinition().GetExternalParameters().AsMap()
	v := &Verified{KeyID: keys.ID(pk), Binaries: map[string]string{}}
	v.Version, _ = ext["version"].(string)
	v.Commit, _ = ext["commit"].(string)
	v.Source, _ = ext["source"].(string)
	v.Go, _ = p.GetBuildDefinition().GetInternalParameters().AsMap()["go"].(string)

	want := map[string]string{}
	for _, s := range st.GetSubject() {
		want[s.GetName()] = s.GetDigest()["sha256"]
	}
	if len(want) != len(Platforms) {
		return nil, bad("%s names %d subjects, want the %d binaries", ProvenanceFile, len(want), len(Platforms))
	}
	modules := map[string]string{}
	for _, d := range p.GetBuildDefinition().GetResolvedDependencies() {
		if d.GetName() != "source" {
			modules[d.GetUri()], _ = d.GetAnnotations().AsMap()["go_sum"].(string)
		}
	}
	for _, pl := range Platforms {
		name := BinaryName(pl)
		path := filepath.Join(dir, name)
		d, _, err := fileDigest(path)
		if err != nil {
			return nil, bad("%v", err)
		}
		if want[name] != d.Hex() {
			return nil, bad("%s has sha256 %s, the provenance names %q", name, d.Hex(), want[name])
		}
		in, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, bad("%v", err)
		}
		got := map[string]string{}
		for _, m := range in.Modules {
			got[m.PURL()] = m.Sum
		}
		if in.Platform != pl || in.Go != v.Go || !reflect.DeepEqual(got, modules) {
			return nil, bad("%s (%s, %s) does not link the modules and toolchain the provenance names", name, in.Platform, in.Go)
		}
		v.Binaries[name] = d.Hex()
	}
	v.Modules = len(modules)
	sbom, err := safefile.ReadFile(filepath.Join(dir, SBOMFile), maxSmall)
	if err != nil {
		return nil, bad("%v", err)
	}
	v.SBOM = digest.Of(sbom).Hex()
	if bp := p.GetRunDetails().GetByproducts(); len(bp) != 1 || bp[0].GetName() != SBOMFile || bp[0].GetDigest()["sha256"] != v.SBOM {
		return nil, bad("%s has sha256 %s, not the one the provenance names", SBOMFile, v.SBOM)
	}
	if err := checkSums(dir, v); err != nil {
		return nil, bad("%v", err)
	}
	return v, nil
}

// checkSums checks that SHA256SUMS lists exactly the binaries and the
// SBOM with the digests v found.
func checkSums(dir string, v *Verified) error {
	b, err := safefile.ReadFile(filepath.Join(dir, SumsFile), maxSmall)
	if err != nil {
		return err
	}
	want := map[string]string{SBOMFile: v.SBOM}
	for n, d := range v.Binaries {
		want[n] = d
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		h, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return fmt.Errorf("%s: line %.200q is not \"<sha256>  <file>\"", filepath.Join(dir, SumsFile), sc.Text())
		}
		if _, dup := got[name]; dup {
			return fmt.Errorf("%s lists %.200q twice", filepath.Join(dir, SumsFile), name)
		}
		got[name] = h
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(dir, SumsFile), err)
	}
	var problems []string
	for _, n := range sortedKeys(want) {
		switch h, ok := got[n]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not listed", n))
		case h != want[n]:
			problems = append(problems, fmt.Sprintf("%s is listed with sha256 %.64q, the file has %s", n, h, want[n]))
		}
	}
	for _, n := range sortedKeys(got) {
		if _, ok := want[n]; !ok {
			problems = append(problems, fmt.Sprintf("%.200q is listed but is not a file of the release", n))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s does not list the release's files with their digests: %s", filepath.Join(dir, SumsFile), strings.Join(problems, "; "))
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ReadKey reads a release public key (PEM SubjectPublicKeyInfo) file.
func ReadKey(path string) ([]byte, error) {
	b, err := safefile.ReadFile(path, 16<<10)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "cannot read the release key %q: %v", path, err)
	}
	return b, nil
}
