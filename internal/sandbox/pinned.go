package sandbox

import (
	"context"

	"github.com/reprolab/repro/internal/exitcode"
)

// BuildAndPin is `repro image build`: it connects to the engine (Connect),
// builds and pins the evaluator image in home (BuildImage) and returns the
// image and the pin as stored, in that order stopping at the first error.
func BuildAndPin(ctx context.Context, home string, opts BuildOptions) (Image, *Pin, error) {
	e, err := Connect(ctx)
	if err != nil {
		return Image{}, nil, err
	}
	defer e.Close()
	img, err := BuildImage(ctx, e, home, opts)
	if err != nil {
		return Image{}, nil, err
	}
	pin, err := ReadPin(home)
	if err != nil {
		return Image{}, nil, err
	}
	return img, pin, nil
}

// PinnedSBOMAs is `repro image sbom`: the SBOM of home's pinned image
// (PinnedSBOM, with trees), as its pinned CycloneDX bytes (format
// "cyclonedx") or as SPDX 2.3 JSON ("spdx"). Any other format is a usage
// error (exit 2), checked before the pin is read.
func PinnedSBOMAs(ctx context.Context, home string, trees []SBOMTree, format string) ([]byte, error) {
	if format != "cyclonedx" && format != "spdx" {
		return nil, exitcode.Errorf(exitcode.Usage, "--format %q: want cyclonedx or spdx", format)
	}
	sbom, err := PinnedSBOM(ctx, home, trees)
	if err != nil {
		return nil, err
	}
	if format == "spdx" {
		return sbom.SPDX()
	}
	return sbom.JSON, nil
}
