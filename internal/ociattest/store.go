package ociattest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
)

// Scheme is how an attestation is attached to its image.
type Scheme string

const (
	// Referrers: an OCI 1.1 artifact manifest whose subject is the image.
	Referrers Scheme = "referrers"
	// Cosign: a layer of the manifest tagged sha256-<hex>.att.
	Cosign Scheme = "cosign"
)

// ParseScheme reads a scheme name.
func ParseScheme(s string) (Scheme, error) {
	switch Scheme(s) {
	case Referrers, Cosign:
		return Scheme(s), nil
	}
	return "", exitcode.Errorf(exitcode.Usage, "--scheme %q: want referrers or cosign", s)
}

const (
	emptyConfigType = "application/vnd.oci.empty.v1+json"
	refNameKey      = "org.opencontainers.image.ref.name"
)

var emptyConfig = []byte("{}")

// Found is one envelope attached to an image and where it was found.
type Found struct {
	Where    string
	Envelope []byte
}

// Image is an image by digest in a registry or an OCI image layout, with
// its attestations.
type Image struct {
	// Ref is the repository and digest (name@sha256:<hex>).
	Ref    name.Digest
	Digest digest.SHA256
	// Layout is the OCI image layout folder, "" for the registry Ref names.
	Layout string
	ctx    context.Context
	opts   []remote.Option
}

// Open names the image ref (name@sha256:<hex>) in the layout folder dir,
// or in the registry ref names when dir is "".
func Open(ctx context.Context, ref, dir string) (*Image, error) {
	d, err := name.NewDigest(ref)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "image %q: %v (want name@sha256:<digest>)", clip(ref), err)
	}
	h, err := ImageDigest(d.DigestStr())
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "image %q: %v", clip(ref), err)
	}
	img := &Image{Ref: d, Digest: h, Layout: dir, ctx: ctx,
		opts: []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}}
	if dir != "" {
		if _, err := os.Stat(dir + "/index.json"); err != nil {
			return nil, exitcode.Errorf(exitcode.Precondition, "%s is not an OCI image layout (no index.json): %v", dir, errText(err))
		}
	}
	return img, nil
}

// String names where the image is.
func (i *Image) String() string {
	if i.Layout != "" {
		return "OCI layout " + i.Layout
	}
	return "registry " + i.Ref.Context().RegistryStr()
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// cosignTag is cosign's tag for the attestations of img.
func cosignTag(img digest.SHA256) string { return "sha256-" + img.Hex() + ".att" }

// Manifest returns the image's manifest, checked against its digest, and
// its descriptor. An image that is not there is an exitcode.Precondition
// error; bytes that do not hash to the digest an exitcode.Integrity one.
func (i *Image) Manifest() ([]byte, v1.Descriptor, error) {
	if i.Layout != "" {
		p := layout.Path(i.Layout)
		ix, err := layoutIndex(p)
		if err != nil {
			return nil, v1.Descriptor{}, err
		}
		for _, d := range ix.Manifests {
			if d.Digest.String() == i.Digest.String() {
				b, err := layoutBlob(p, d.Digest, maxManifest)
				if err != nil {
					return nil, v1.Descriptor{}, err
				}
				return b, d, nil
			}
		}
		return nil, v1.Descriptor{}, exitcode.Errorf(exitcode.Precondition, "the OCI layout %s holds no image %s in its index.json", i.Layout, i.Digest)
	}
	d, err := remote.Get(i.Ref, i.opts...)
	if err != nil {
		if isNotFound(err) {
			return nil, v1.Descriptor{}, exitcode.Errorf(exitcode.Precondition, "the registry has no image %s: %v", i.Ref, err)
		}
		return nil, v1.Descriptor{}, exitcode.Errorf(exitcode.Precondition, "cannot read %s from its registry: %v", i.Ref, err)
	}
	if int64(len(d.Manifest)) > maxManifest || digest.Of(d.Manifest) != i.Digest {
		return nil, v1.Descriptor{}, exitcode.Errorf(exitcode.Integrity, "the registry answered %s with a manifest that does not hash to that digest", i.Ref)
	}
	return d.Manifest, d.Descriptor, nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

func layoutIndex(p layout.Path) (*v1.IndexManifest, error) {
	b, err := os.ReadFile(string(p) + "/index.json")
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the OCI layout %s: %v", p, errText(err))
	}
	if len(b) > maxManifest {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: index.json is larger than %d bytes", p, maxManifest)
	}
	ix, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: index.json: %v", p, err)
	}
	return ix, nil
}

// layoutBlob reads a blob of the layout (at most max bytes) and checks it
// hashes to its name.
func layoutBlob(p layout.Path, h v1.Hash, max int64) ([]byte, error) {
	want, err := ImageDigest(h.String())
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s names blob %q: %v", p, h, err)
	}
	rc, err := p.Blob(h)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s lacks blob %s: %v", p, h, errText(err))
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: blob %s: %v", p, h, err)
	}
	if int64(len(b)) > max {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: blob %s is larger than %d bytes", p, h, max)
	}
	if digest.Of(b) != want {
		return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: blob %s does not hash to its name", p, h)
	}
	return b, nil
}

// Envelopes returns every envelope attached to the image: the layers of
// type EnvelopeMediaType of its referrers and of cosign's attestation tag.
// Every manifest and layer read is bounded and checked against its digest.
func (i *Image) Envelopes() ([]Found, error) {
	if i.Layout != "" {
		return i.layoutEnvelopes()
	}
	return i.registryEnvelopes()
}

func (i *Image) layoutEnvelopes() ([]Found, error) {
	p := layout.Path(i.Layout)
	ix, err := layoutIndex(p)
	if err != nil {
		return nil, err
	}
	var out []Found
	looked := 0
	for _, d := range ix.Manifests {
		if d.Digest.String() == i.Digest.String() || (d.MediaType != types.OCIManifestSchema1 && d.MediaType != types.DockerManifestSchema2) {
			continue
		}
		if looked++; looked > 4*maxReferrer {
			break
		}
		b, err := layoutBlob(p, d.Digest, maxManifest)
		if err != nil {
			return nil, err
		}
		m, err := v1.ParseManifest(bytes.NewReader(b))
		if err != nil {
			continue
		}
		where := ""
		switch {
		case m.Subject != nil && m.Subject.Digest.String() == i.Digest.String():
			where = "referrer " + d.Digest.String()
		case d.Annotations[refNameKey] == cosignTag(i.Digest):
			where = "tag " + cosignTag(i.Digest)
		default:
			continue
		}
		for n, l := range m.Layers {
			if n >= maxReferrer || l.MediaType != EnvelopeMediaType {
				continue
			}
			if l.Size > maxEnvelope {
				return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s: %s holds an envelope of %d bytes, over %d", i.Layout, where, l.Size, maxEnvelope)
			}
			env, err := layoutBlob(p, l.Digest, maxEnvelope)
			if err != nil {
				return nil, err
			}
			out = append(out, Found{Where: fmt.Sprintf("%s layer %d", where, n), Envelope: env})
		}
	}
	return out, nil
}

func (i *Image) registryEnvelopes() ([]Found, error) {
	var out []Found
	repo := i.Ref.Context()
	ix, err := remote.Referrers(i.Ref, i.opts...)
	if err != nil && !isNotFound(err) {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot list the referrers of %s: %v", i.Ref, err)
	}
	var refs []v1.Descriptor
	if ix != nil {
		im, err := ix.IndexManifest()
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "the referrers of %s: %v", i.Ref, err)
		}
		refs = im.Manifests
	}
	add := func(ref name.Reference, want *v1.Hash, where string) error {
		d, err := remote.Get(ref, i.opts...)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return exitcode.Errorf(exitcode.Precondition, "cannot read %s: %v", ref, err)
		}
		if int64(len(d.Manifest)) > maxManifest || (want != nil && digest.Of(d.Manifest).String() != want.String()) {
			return exitcode.Errorf(exitcode.Integrity, "the registry answered %s with a manifest that does not hash to its digest", ref)
		}
		m, err := v1.ParseManifest(bytes.NewReader(d.Manifest))
		if err != nil {
			return nil
		}
		if want != nil && (m.Subject == nil || m.Subject.Digest.String() != i.Digest.String()) {
			return nil // listed as a referrer, but its manifest names another subject
		}
		for n, l := range m.Layers {
			if n >= maxReferrer || l.MediaType != EnvelopeMediaType {
				continue
			}
			if l.Size > maxEnvelope {
				return exitcode.Errorf(exitcode.Integrity, "%s holds an envelope of %d bytes, over %d", where, l.Size, maxEnvelope)
			}
			layer, err := remote.Layer(repo.Digest(l.Digest.String()), i.opts...)
			if err != nil {
				return exitcode.Errorf(exitcode.Precondition, "cannot read %s layer %d: %v", where, n, err)
			}
			rc, err := layer.Compressed()
			if err != nil {
				return exitcode.Errorf(exitcode.Precondition, "cannot read %s layer %d: %v", where, n, err)
			}
			env, err := io.ReadAll(io.LimitReader(rc, maxEnvelope+1))
			rc.Close()
			if err != nil || int64(len(env)) > maxEnvelope || digest.Of(env).String() != l.Digest.String() {
				return exitcode.Errorf(exitcode.Integrity, "%s layer %d does not hash to its digest %s (or is over %d bytes): %v", where, n, l.Digest, maxEnvelope, err)
			}
			out = append(out, Found{Where: fmt.Sprintf("%s layer %d", where, n), Envelope: env})
		}
		return nil
	}
	for n, d := range refs {
		if n >= maxReferrer {
			break
		}
		h := d.Digest
		if err := add(repo.Digest(h.String()), &h, "referrer "+h.String()); err != nil {
			return nil, err
		}
	}
	if err := add(repo.Tag(cosignTag(i.Digest)), nil, "tag "+cosignTag(i.Digest)); err != nil {
		return nil, err
	}
	return out, nil
}

// rawManifest is a manifest to put as it is.
type rawManifest struct {
	b  []byte
	mt types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.b, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// Attach stores the envelope env of kind with the image, by scheme.
func (i *Image) Attach(env []byte, kind Kind, scheme Scheme) (string, error) {
	_, subj, err := i.Manifest()
	if err != nil {
		return "", err
	}
	layer := v1.Descriptor{MediaType: EnvelopeMediaType, Size: int64(len(env)), Digest: hashOf(env),
		Annotations: map[string]string{PredicateAnnotation: string(kind)}}
	config := v1.Descriptor{MediaType: emptyConfigType, Size: int64(len(emptyConfig)), Digest: hashOf(emptyConfig)}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: config}
	tag := ""
	switch scheme {
	case Referrers:
		m.ArtifactType = EnvelopeMediaType
		m.Subject = &v1.Descriptor{MediaType: subj.MediaType, Size: subj.Size, Digest: subj.Digest}
		m.Layers = []v1.Descriptor{layer}
	case Cosign:
		tag = cosignTag(i.Digest)
		prev, err := i.cosignManifest()
		if err != nil {
			return "", err
		}
		if prev != nil {
			m.Layers = prev.Layers
		}
		m.Layers = append(m.Layers, layer)
	default:
		return "", fmt.Errorf("unknown scheme %q", scheme)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	mh := hashOf(mb)
	if i.Layout != "" {
		p := layout.Path(i.Layout)
		for _, b := range [][]byte{env, emptyConfig} {
			if err := p.WriteBlob(hashOf(b), io.NopCloser(bytes.NewReader(b))); err != nil {
				return "", err
			}
		}
		if err := p.WriteBlob(mh, io.NopCloser(bytes.NewReader(mb))); err != nil {
			return "", err
		}
		desc := v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(mb)), Digest: mh}
		if scheme == Referrers {
			desc.ArtifactType = EnvelopeMediaType
		} else {
			desc.Annotations = map[string]string{refNameKey: tag}
			if err := p.RemoveDescriptors(match.Annotation(refNameKey, tag)); err != nil {
				return "", err
			}
		}
		if err := p.AppendDescriptor(desc); err != nil {
			return "", err
		}
		if scheme == Referrers {
			return "referrer " + mh.String(), nil
		}
		return "tag " + tag, nil
	}
	repo := i.Ref.Context()
	for _, b := range [][]byte{env, emptyConfig} {
		mt := types.MediaType(EnvelopeMediaType)
		if bytes.Equal(b, emptyConfig) {
			mt = emptyConfigType
		}
		if err := remote.WriteLayer(repo, static.NewLayer(b, mt), i.opts...); err != nil {
			return "", exitcode.Errorf(exitcode.Precondition, "cannot upload to %s: %v", repo, err)
		}
	}
	var ref name.Reference = repo.Digest(mh.String())
	if scheme == Cosign {
		ref = repo.Tag(tag)
	}
	if err := remote.Put(ref, rawManifest{mb, types.OCIManifestSchema1}, i.opts...); err != nil {
		return "", exitcode.Errorf(exitcode.Precondition, "cannot put %s: %v", ref, err)
	}
	if scheme == Referrers {
		return "referrer " + mh.String(), nil
	}
	return "tag " + tag, nil
}

// cosignManifest returns the manifest under cosign's attestation tag, nil
// when there is none.
func (i *Image) cosignManifest() (*v1.Manifest, error) {
	var b []byte
	if i.Layout != "" {
		p := layout.Path(i.Layout)
		ix, err := layoutIndex(p)
		if err != nil {
			return nil, err
		}
		for _, d := range ix.Manifests {
			if d.Annotations[refNameKey] == cosignTag(i.Digest) {
				if b, err = layoutBlob(p, d.Digest, maxManifest); err != nil {
					return nil, err
				}
			}
		}
	} else {
		d, err := remote.Get(i.Ref.Context().Tag(cosignTag(i.Digest)), i.opts...)
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, exitcode.Errorf(exitcode.Precondition, "cannot read the attestation tag of %s: %v", i.Ref, err)
		}
		b = d.Manifest
	}
	if b == nil {
		return nil, nil
	}
	return v1.ParseManifest(bytes.NewReader(b))
}

func hashOf(b []byte) v1.Hash {
	h, _ := v1.NewHash(digest.Of(b).String())
	return h
}

// Packages reads the image's Debian packages from its layers: the dpkg
// status file of the last layer that writes one. Each layer is read as a
// stream and checked against its digest.
func (i *Image) Packages() ([]sandbox.DebPackage, string, error) {
	mb, _, err := i.Manifest()
	if err != nil {
		return nil, "", err
	}
	m, err := v1.ParseManifest(bytes.NewReader(mb))
	if err != nil {
		return nil, "", exitcode.Errorf(exitcode.Integrity, "the manifest of %s: %v", i.Ref, err)
	}
	var status []byte
	for n, l := range m.Layers {
		rc, err := i.blob(l.Digest)
		if err != nil {
			return nil, "", err
		}
		hr := digest.NewReader(rc)
		var r io.Reader = hr
		if strings.HasSuffix(string(l.MediaType), "gzip") {
			zr, err := gzip.NewReader(hr)
			if err != nil {
				rc.Close()
				return nil, "", exitcode.Errorf(exitcode.Integrity, "layer %d of %s is not gzip: %v", n, i.Ref, err)
			}
			r = zr
		}
		st, err := sandbox.LayerDpkgStatus(r)
		if err == nil {
			_, err = io.Copy(io.Discard, hr)
		}
		rc.Close()
		if err != nil {
			return nil, "", exitcode.Errorf(exitcode.Integrity, "layer %d of %s: %v", n, i.Ref, err)
		}
		if got, _ := hr.Sum(); got.String() != l.Digest.String() {
			return nil, "", exitcode.Errorf(exitcode.Integrity, "layer %d of %s does not hash to its digest %s", n, i.Ref, l.Digest)
		}
		if st != nil {
			status = st
		}
	}
	if status == nil {
		return nil, "", exitcode.Errorf(exitcode.Precondition, "no layer of %s holds a dpkg status file: repro describes Debian-based images; attach an SBOM made elsewhere is not supported", i.Ref)
	}
	return sandbox.DpkgStatusPackages(status), m.Config.Digest.String(), nil
}

func (i *Image) blob(h v1.Hash) (io.ReadCloser, error) {
	if i.Layout != "" {
		rc, err := layout.Path(i.Layout).Blob(h)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Integrity, "the OCI layout %s lacks blob %s: %v", i.Layout, h, errText(err))
		}
		return rc, nil
	}
	l, err := remote.Layer(i.Ref.Context().Digest(h.String()), i.opts...)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot read layer %s of %s: %v", h, i.Ref, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "cannot read layer %s of %s: %v", h, i.Ref, err)
	}
	return rc, nil
}
