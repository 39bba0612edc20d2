package handoff

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/reprolab/repro/internal/digest"
)

// ImageRef is a container image named by its manifest digest: the only
// form a handoff accepts, because a tag can be moved to other bytes.
type ImageRef struct {
	// Domain is the registry host (with port), empty for Docker Hub.
	Domain string
	// Path is the repository path ("nvidia/tensorflow").
	Path   string
	Digest digest.SHA256
}

var (
	pathComponent   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	domainComponent = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]{1,5})?$`)
)

// ErrImageCredential says an image reference carries a user name or
// password.
var ErrImageCredential = errors.New("the image reference carries a credential")

// ParseImageRef reads name@sha256:<64 lowercase hex>. It refuses a tag
// alone, a tag next to the digest (the digest alone decides; drop the tag
// so that nobody reads it as meaningful), other digest algorithms,
// enroot's registry#name spelling and any user name or password in the
// reference.
func ParseImageRef(s string) (ImageRef, error) {
	var r ImageRef
	if s == "" {
		return r, errors.New("no image given")
	}
	if err := checkText(s); err != nil {
		return r, err
	}
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return r, fmt.Errorf("%q names no digest: a tag can be moved to other bytes; write name@sha256:<digest> (`docker buildx imagetools inspect NAME:TAG` or `crane digest NAME:TAG` prints it)", clip(s))
	}
	name, dig := s[:at], s[at+1:]
	if strings.Contains(name, "@") || strings.Contains(name, "://") {
		return r, fmt.Errorf("%w: write the bare name@sha256:<digest> and give registry logins to the node's container runtime, never in the bundle", ErrImageCredential)
	}
	if !strings.HasPrefix(dig, "sha256:") {
		return r, fmt.Errorf("%q: only sha256 digests are accepted", clip(s))
	}
	d, err := digest.Parse(dig)
	if err != nil {
		return r, fmt.Errorf("%q: %v", clip(s), err)
	}
	r.Digest = d
	if strings.Contains(name, "#") {
		return r, fmt.Errorf("%q uses enroot's registry#name form; write registry/name@sha256:<digest> (the bundle converts it)", clip(s))
	}
	parts := strings.Split(name, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		if !domainComponent.MatchString(parts[0]) {
			return r, fmt.Errorf("%q: invalid registry %q", clip(s), parts[0])
		}
		r.Domain = parts[0]
		parts = parts[1:]
	}
	last := parts[len(parts)-1]
	if i := strings.Index(last, ":"); i >= 0 {
		return r, fmt.Errorf("%q carries the tag %q next to its digest; drop the tag and keep name@sha256:<digest>", clip(s), clip(last[i+1:]))
	}
	for _, p := range parts {
		if !pathComponent.MatchString(p) {
			return r, fmt.Errorf("%q: invalid repository name component %q", clip(s), clip(p))
		}
	}
	r.Path = strings.Join(parts, "/")
	if len(r.Path) > 255 {
		return r, fmt.Errorf("%q: repository name longer than 255 characters", clip(s))
	}
	return r, nil
}

// String returns name@sha256:<hex>.
func (r ImageRef) String() string {
	if r.Domain != "" {
		return r.Domain + "/" + r.Path + "@" + r.Digest.String()
	}
	return r.Path + "@" + r.Digest.String()
}

// Enroot returns the reference as pyxis and enroot take it:
// docker://REGISTRY#IMAGE@sha256:<hex> (enroot reads a digest but no tag
// next to it, and separates the registry with '#'); Docker Hub images go
// without a registry, enroot's default.
func (r ImageRef) Enroot() string {
	if r.Domain != "" && r.Domain != "docker.io" && r.Domain != "index.docker.io" && r.Domain != "registry-1.docker.io" {
		return "docker://" + r.Domain + "#" + r.Path + "@" + r.Digest.String()
	}
	return "docker://" + r.Path + "@" + r.Digest.String()
}

// Apptainer returns the docker:// URI Apptainer pulls by digest.
func (r ImageRef) Apptainer() string { return "docker://" + r.String() }
