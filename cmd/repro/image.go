package main

import (
	"strings"
	"time"

	"github.com/reprolab/repro/internal/codebench/wire"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/vulnscan"
	"github.com/spf13/cobra"
)

func init() { register(newImageCommand) }

func newImageCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and show the evaluator image the sandbox runs",
	}
	cmd.AddCommand(newImageBuildCommand(g), newImageShowCommand(g), newImageSBOMCommand(g), newImageScanCommand(g), newImageSignCommand(g), newImageExportCommand(g), newImageImportCommand(g))
	return cmd
}

// imageBuildOptions are the flags of repro image build.
type imageBuildOptions struct {
	fresh  bool
	mirror string
}

func newImageBuildCommand(g *globalOptions) *cobra.Command {
	var o imageBuildOptions
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the evaluator image offline from Debian packages and pin it",
		Long: `build makes the evaluator image without any registry: debootstrap installs a
minimal Debian bookworm with python3 from Debian's packages, the tree becomes one
deterministic layer (sorted entries, fixed times, owner 0, setuid and setgid
bits removed), go-containerregistry writes a docker-format image and the engine
loads it. The image ID (the engine's config digest) and the manifest digest are
printed and pinned in REPRO_HOME; every sandbox run refuses any other image.
An SBOM of the image (every Debian package with version, architecture and
source package, and the HumanEval harness tree digest, as CycloneDX 1.6 JSON)
is written next to the pin, and its digest pinned; 'repro image sbom' prints it.

Needs root and debootstrap. The Debian mirror is --mirror, or else the first
enabled "deb" entry for bookworm with component main in the host's apt sources
(/etc/apt/sources.list, /etc/apt/sources.list.d/*.list and *.sources); with
neither, nothing runs (exit 3). The mirror used is printed and pinned. The
layer is cached in REPRO_HOME and reused after its digest is checked; --fresh
bootstraps again.

Where a registry is reachable, a digest-pinned python:3.11-slim@sha256:... base
could serve instead; repro builds its own so that no registry is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			opts := sandbox.BuildOptions{Mirror: o.mirror, Fresh: o.fresh, Trees: wire.SBOMTrees()}
			if log := t.Log(); log != nil {
				opts.Progress = log
			}
			img, pin, err := sandbox.BuildAndPin(cmd.Context(), g.home, opts)
			if err != nil {
				return err
			}
			if g.json {
				return t.Document(struct {
					sandbox.Image
					Mirror       string `json:"mirror"`
					SBOMPackages int    `json:"sbom_packages"`
				}{img, pin.Mirror, pin.SBOMPackages})
			}
			ui.Fprintf(t.Human(), "image ID        %s\nmanifest digest %s\nmirror          %s\nSBOM            %s (%d packages, %q)\n",
				img.ID, img.ManifestDigest, pin.Mirror, img.SBOMDigest, pin.SBOMPackages, sandbox.SBOMPath(g.home))
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().BoolVar(&o.fresh, "fresh", false, "bootstrap again instead of reusing the cached layer")
	cmd.Flags().StringVar(&o.mirror, "mirror", "", "Debian mirror for debootstrap (default: the host's apt sources entry for "+sandbox.ImageSuite+" main)")
	return cmd
}

func newImageShowCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the pinned evaluator image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pin, err := sandbox.ReadPin(g.home)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(pin)
			}
			w := t.Human()
			ui.Fprintf(w, "image ID        %s\nmanifest digest %s\nreference       %s\nlayer           %s (%d bytes)\n",
				pin.ID, pin.ManifestDigest, pin.Reference, pin.LayerDigest, pin.LayerSize)
			ui.Fprintf(w, "debian          %s (%s) + %v from %s\npackages        %d\nbuilt           %s\n",
				pin.Suite, pin.Variant, pin.Included, pin.Mirror, len(pin.Packages), pin.BuiltAt.Format("2006-01-02 15:04:05 UTC"))
			if pin.SBOMDigest != "" {
				ui.Fprintf(w, "SBOM            %s (%d packages, %s)\n", pin.SBOMDigest, pin.SBOMPackages, sandbox.SBOMPath(g.home))
			}
			if pin.Layer != nil {
				ui.Fprintf(w, "setuid/setgid   %d bits removed: %v\n", len(pin.Layer.Stripped), pin.Layer.Stripped)
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	return cmd
}

// imageSBOMOptions are the flags of repro image sbom.
type imageSBOMOptions struct {
	format string
}

func newImageSBOMCommand(g *globalOptions) *cobra.Command {
	var o imageSBOMOptions
	cmd := &cobra.Command{
		Use:   "sbom",
		Short: "Print the SBOM of the pinned evaluator image",
		Long: `sbom prints the software bill of materials of the pinned evaluator image: every
Debian package installed in it (name, version, architecture, source package and
version, package URL) and the HumanEval harness tree digest. --format cyclonedx
(the default) prints the pinned CycloneDX 1.6 JSON byte for byte, after checking
its digest against the pin (exit 4 when it differs); --format spdx prints the
same content as SPDX 2.3 JSON. A pin made before SBOMs gets one now, from the
cached layer or the image in the engine; nothing is rebuilt or run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := sandbox.PinnedSBOMAs(cmd.Context(), g.home, wire.SBOMTrees(), o.format)
			if err != nil {
				return err
			}
			_, err = g.term.Stdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "cyclonedx", "cyclonedx (CycloneDX 1.6 JSON) or spdx (SPDX 2.3 JSON)")
	return cmd
}

// imageScanOptions are the flags of repro image scan.
type imageScanOptions struct {
	feedDir, waivers string
}

func newImageScanCommand(g *globalOptions) *cobra.Command {
	var o imageScanOptions
	cmd := &cobra.Command{
		Use:   "scan --osv DIR [--waivers FILE]",
		Short: "Scan the pinned evaluator image's SBOM against an OSV feed and sign the result",
		Long: `scan matches every Debian package of the pinned evaluator image's SBOM against
the vulnerability records of an OSV feed: a folder of OSV JSON records, one per
file, such as the Debian archive that the OSV project publishes, downloaded and unpacked
where the network allows. Debian's records name source packages, so each
package is matched by its source package and source version, in ecosystem
` + sandbox.ImageOSVEcosystem + `, with Debian's version ordering (epochs, tildes, revisions).

--waivers names a JSON file of explicit waivers:
  {"waivers": [{"id": "CVE-...", "package": "<source package>",
                "reason": "why it does not apply", "expires": "YYYY-MM-DD"}]}
A waiver without a reason, past its expiry date or with an unknown field is
refused (exit 2).

The result (each finding's package, installed and fixed versions, severity,
advisory id and aliases, the waivers, the scan time and the highest severity
among unwaived findings) is an in-toto Statement about the image's manifest
digest and image ID, naming the SBOM digest and the feed's tree digest, signed
with the run key in a DSSE envelope and stored in REPRO_HOME.

Exit codes: 0 no unwaived finding, 1 unwaived findings, 2 usage or a bad
waivers file, 3 no pinned image, SBOM or usable feed (nothing ran), 4 the SBOM
differs from its pin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.feedDir == "" {
				return exitcode.Errorf(exitcode.Usage, "--osv DIR is required: a folder of OSV records for %s", sandbox.ImageOSVEcosystem)
			}
			t := g.term
			st, path, err := imagetrust.ScanPinned(cmd.Context(), g.home, imagetrust.ScanOptions{
				FeedDir: o.feedDir, WaiversPath: o.waivers, Trees: wire.SBOMTrees(), Now: time.Now().UTC(),
			})
			if err != nil {
				return err
			}
			p := st.Predicate
			if g.json {
				err = t.Document(struct {
					Attestation string `json:"attestation"`
					vulnscan.Predicate
				}{path, p})
			} else {
				w := t.Human()
				ui.Fprintf(w, "image ID     %s\nSBOM         %s (%d packages, %d source packages)\nfeed         %s (%d files, %d records, %s)\n",
					p.ImageID, p.SBOMDigest, p.Packages, p.SourcePackages, p.Feed.Digest, p.Feed.Files, p.Feed.Records, p.Feed.Ecosystem)
				for _, f := range p.Findings {
					state := "UNWAIVED"
					if f.Waiver != nil {
						state = "waived until " + f.Waiver.Expires
					}
					fixed := f.Fixed
					if fixed == "" {
						fixed = "(no fix)"
					}
					aliases := ""
					if len(f.Aliases) > 0 {
						aliases = " (" + strings.Join(f.Aliases, ", ") + ")"
					}
					ui.Fprintf(w, "%-8s %-20s %s installed %s fixed %s  %s%s\n", f.Severity, f.Package, state, f.Installed, fixed, f.ID, aliases)
				}
				ui.Fprintf(w, "findings     %d, %d unwaived, highest unwaived severity %s\nattestation  %s\n", len(p.Findings), p.Unwaived, p.MaxUnwaivedSeverity, path)
			}
			if err != nil {
				return err
			}
			if p.Unwaived > 0 {
				return exitcode.Errorf(exitcode.Negative, "%d unwaived finding(s), highest severity %s", p.Unwaived, p.MaxUnwaivedSeverity)
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&o.feedDir, "osv", "", "folder of OSV JSON records (required)")
	cmd.Flags().StringVar(&o.waivers, "waivers", "", "JSON file of reasoned, dated waivers")
	return cmd
}

// imageSignOptions are the flags of repro image sign.
type imageSignOptions struct {
	key string
}

func newImageSignCommand(g *globalOptions) *cobra.Command {
	var o imageSignOptions
	cmd := &cobra.Command{
		Use:   "sign --key FILE",
		Short: "Sign the pinned evaluator image and its SBOM with an image key",
		Long: `sign states, as an in-toto Statement, the pinned evaluator image's manifest
digest and image ID and the digest of its SBOM (checked against the pin first),
signs it in a DSSE envelope with the ed25519 image key in FILE (PKCS #8 PEM,
mode 0600; 'openssl genpkey -algorithm ed25519 -out FILE' makes one) and stores
it beside the pin in REPRO_HOME. Use a key kept for images, not the run key: a
trust file lists it for the purpose "images", and every sandboxed run checks
the signature when the trust file requires one (docs/supply-chain.md).

Exit codes: 0 signed, 2 no --key, or the key is the run key, 3 no pinned image
or SBOM, or an unusable key file (nothing signed), 4 the SBOM differs from its
pin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.key == "" {
				return exitcode.Errorf(exitcode.Usage, "--key FILE is required: the image key (openssl genpkey -algorithm ed25519 -out FILE)")
			}
			s, err := imagetrust.SignPinned(cmd.Context(), g.home, o.key, wire.SBOMTrees(), time.Now())
			if err != nil {
				return err
			}
			t := g.term
			path, id, p := s.Path, s.KeyID, s.Predicate
			if g.json {
				return t.Document(struct {
					Signature string `json:"signature"`
					KeyID     string `json:"key_id"`
					*imagetrust.Predicate
				}{path, id, p})
			}
			ui.Fprintf(t.Human(), "image ID        %s\nmanifest digest %s\nSBOM            %s\nkey id          %s\nsigned          %s\nsignature       %s\n",
				p.ImageID, p.ManifestDigest, p.SBOMDigest, id, p.SignedAt.Format(time.RFC3339), path)
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&o.key, "key", "", "the image key: an ed25519 private key, PKCS #8 PEM, mode 0600 (required)")
	return cmd
}

// imageExportOptions are the flags of repro image export.
type imageExportOptions struct {
	out string
}

func newImageExportCommand(g *globalOptions) *cobra.Command {
	var o imageExportOptions
	cmd := &cobra.Command{
		Use:   "export --out FILE.tar",
		Short: "Write the signed, pinned evaluator image as one bundle for another machine",
		Long: `export writes one tar file holding the pinned evaluator image as the engine saves
it (docker save of its image ID), its pin, its SBOM and its signature, for
'repro image import' on another machine. The image must be signed ('repro image
sign --key FILE') and the SBOM must match its pin. The file appears complete or
not at all.

Exit codes: 0 written, 2 no --out, 3 no engine, pinned image or signature
(nothing written), 4 the engine's image or the SBOM differs from the pin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return exitcode.Errorf(exitcode.Usage, "--out FILE.tar is required")
			}
			pin, err := imagetrust.ExportPinned(cmd.Context(), g.home, o.out)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(struct {
					Bundle string `json:"bundle"`
					sandbox.Image
				}{o.out, pin.Image})
			}
			ui.Fprintf(t.Human(), "image ID        %s\nmanifest digest %s\nSBOM            %s\nbundle          %s\n", pin.ID, pin.ManifestDigest, pin.SBOMDigest, o.out)
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&o.out, "out", "", "the bundle to write (required)")
	return cmd
}

func newImageImportCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import FILE.tar [--trust FILE]",
		Short: "Load and pin an evaluator image built and signed elsewhere",
		Long: `import admits an image bundle written by 'repro image export', on this or
another machine. It needs a trust file (--trust, default REPRO_HOME/trust.json)
that lists a key for "images", and accepts the bundle only when its signature is
by such a key, valid at the signing time, and names the bundle's image ID,
manifest digest and SBOM digest; the SBOM must have its pinned digest; the
image archive must hold exactly that image ID and layer, which is checked before
the engine sees it and again after the engine loaded it. Only then do the pin,
SBOM and signature replace REPRO_HOME's. A scan attestation is not carried: run
'repro image scan' here when the trust file requires one.

Exit codes: 0 imported, 2 usage, 3 no engine, bundle or trust file with an
image key (nothing changed), 4 the bundle is refused (unsigned, an untrusted
key, another image, a modified image or SBOM; nothing changed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			im, err := imagetrust.ImportBundle(cmd.Context(), g.home, args[0], g.trust, time.Now())
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(im)
			}
			w := t.Human()
			ui.Fprintf(w, "image ID        %s\nmanifest digest %s\nSBOM            %s (%d packages)\nsigned by       %q (%s) at %s\ntrust file      %s\n",
				im.Pin.ID, im.Pin.ManifestDigest, im.Pin.SBOMDigest, im.Pin.SBOMPackages, im.Signature.KeyName, im.Signature.KeyID, im.Signature.SignedAt.Format(time.RFC3339), im.TrustFile)
			if im.Replaced != "" {
				ui.Fprintf(w, "replaced        %s\n", im.Replaced)
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	g.trustFlag(cmd, "trust file listing the keys whose image signatures are accepted (default REPRO_HOME/trust.json)")
	return cmd
}
