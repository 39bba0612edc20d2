package imagetrust

import (
	"context"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/sandbox"
)

// SignedImage is what SignPinned signed: the envelope's path, the key's
// id and the statement's predicate.
type SignedImage struct {
	Path  string
	KeyID string
	*Predicate
}

// SignPinned is `repro image sign --key FILE`: it loads the image key at
// keyPath (an unusable key file is exit 3, before anything else is read),
// reads and checks home's pinned SBOM (sandbox.PinnedSBOM with trees) and
// signs the pinned image with it (Sign, as of now).
func SignPinned(ctx context.Context, home, keyPath string, trees []sandbox.SBOMTree, now time.Time) (*SignedImage, error) {
	k, err := keys.LoadPrivate(keyPath)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Precondition, "the image key %q cannot be used: %v", keyPath, err)
	}
	sbom, err := sandbox.PinnedSBOM(ctx, home, trees)
	if err != nil {
		return nil, err
	}
	path, p, err := Sign(home, k, sbom.Digest.String(), now)
	if err != nil {
		return nil, err
	}
	id, _ := k.KeyID()
	return &SignedImage{Path: path, KeyID: id, Predicate: p}, nil
}

// ExportPinned is `repro image export --out FILE`: Export on the engine
// (sandbox.Connect, whose error comes first).
func ExportPinned(ctx context.Context, home, out string) (*sandbox.Pin, error) {
	e, err := sandbox.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return Export(ctx, e, home, out)
}

// ImportBundle is `repro image import FILE`: Import of bundle on the
// engine (sandbox.Connect, whose error comes first), against the trust
// file at trustPath ("" for home's), as of now.
func ImportBundle(ctx context.Context, home, bundle, trustPath string, now time.Time) (*Imported, error) {
	e, err := sandbox.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return Import(ctx, e, home, bundle, trustPath, now)
}
