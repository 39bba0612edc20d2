package imagetrust

import (
	"context"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/vulnscan"
)

// ScanOptions says what ScanPinned matches the pinned image against.
type ScanOptions struct {
	// FeedDir is a folder of OSV records (vulnscan.LoadFeed); required.
	FeedDir string
	// WaiversPath is a waivers file (vulnscan.LoadWaivers), or "".
	WaiversPath string
	// Trees are the source trees the image's SBOM lists
	// (sandbox.ImageSBOM).
	Trees []sandbox.SBOMTree
	// Now is the scan time; waivers expired by then are refused.
	Now time.Time
}

// ScanPinned scans the SBOM of the evaluator image pinned under home
// (checked against its pinned digest, or made now for a pin without one)
// against the OSV feed of o, matching each Debian package by its source
// package in sandbox.ImageOSVEcosystem, and stores the signed scan in home
// (vulnscan.Write). It returns the statement and the path it was stored
// at.
//
// A bad waivers file is exit 2; no pin, SBOM or usable feed exit 3 and an
// SBOM that differs from its pin exit 4, all before anything is written.
// Unwaived findings are no error: the caller decides on
// Predicate.Unwaived.
func ScanPinned(ctx context.Context, home string, o ScanOptions) (*vulnscan.Statement, string, error) {
	var ws []vulnscan.Waiver
	if o.WaiversPath != "" {
		var err error
		if ws, err = vulnscan.LoadWaivers(o.WaiversPath, o.Now); err != nil {
			return nil, "", err
		}
	}
	pin, err := sandbox.ReadPin(home)
	if err != nil {
		return nil, "", err
	}
	sbom, err := sandbox.PinnedSBOM(ctx, home, o.Trees)
	if err != nil {
		return nil, "", err
	}
	debs, err := sandbox.SBOMPackages(sbom.JSON)
	if err != nil {
		return nil, "", exitcode.Errorf(exitcode.Integrity, "the SBOM %q: %v", sandbox.SBOMPath(home), err)
	}
	feed, err := vulnscan.LoadFeed(o.FeedDir)
	if err != nil {
		return nil, "", err
	}
	pkgs := make([]vulnscan.InstalledPackage, len(debs))
	for i, d := range debs {
		pkgs[i] = vulnscan.InstalledPackage(d)
	}
	st, err := vulnscan.Scan(vulnscan.Input{
		ImageID: pin.ID, ManifestDigest: pin.ManifestDigest, SBOMDigest: sbom.Digest,
		Packages: pkgs, Feed: feed, Ecosystem: sandbox.ImageOSVEcosystem, Waivers: ws, Now: o.Now,
	})
	if err != nil {
		return nil, "", err
	}
	path, err := vulnscan.Write(home, st)
	if err != nil {
		return nil, "", err
	}
	return st, path, nil
}
