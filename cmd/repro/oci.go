package main

import (
	"time"

	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/ociattest"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/ui"
	"github.com/reprolab/repro/internal/vulnscan"
	"github.com/spf13/cobra"
)

func init() { register(newOCICommand) }

func newOCICommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "oci",
		Short: "Sign runtime images by digest and attach their SBOM and scan, in a registry or an OCI layout",
		Long: `oci signs a container image named by its digest (the MiniGo or DLRM runtime
image of a handoff) and attaches what the trust file's production profile
requires of it, each an in-toto statement about the digest in a DSSE envelope
signed with an image key:

  repro oci sign --key FILE NAME@sha256:<hex>     a signature
  repro oci sbom --key FILE NAME@sha256:<hex>     its SBOM (CycloneDX, from the dpkg status of its layers)
  repro oci scan --key FILE --osv DIR NAME@sha256:<hex>
                                                  its SBOM matched against an OSV feed
  repro oci verify NAME@sha256:<hex>              what the trust file's image policy finds

--layout DIR reads and writes an OCI image layout folder instead of the
registry NAME names (offline). --scheme attaches as OCI 1.1 referrers (the
default) or under cosign's sha256-<hex>.att tag; both are read back.
See docs/supply-chain.md.`,
	}
	cmd.AddCommand(newOCIAttachCommand(g, "sign"), newOCIAttachCommand(g, "sbom"), newOCIAttachCommand(g, "scan"), newOCIVerifyCommand(g))
	return cmd
}

func newOCIAttachCommand(g *globalOptions, what string) *cobra.Command {
	var (
		keyPath, dir, scheme            string
		feedDir, ecosystem, waiversPath string
	)
	use := what + " --key FILE [--layout DIR] [--scheme referrers|cosign] NAME@sha256:<hex>"
	short := map[string]string{
		"sign": "Sign an image by its digest with an image key",
		"sbom": "Describe an image's Debian packages as a signed SBOM attached to it",
		"scan": "Scan an image's attached SBOM against an OSV feed and attach the signed result",
	}[what]
	if what == "scan" {
		use = "scan --key FILE --osv DIR [--waivers FILE] [--trust FILE] [--layout DIR] NAME@sha256:<hex>"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Exit codes: 0 attached (scan: no unwaived finding), 1 scan: unwaived findings,
2 usage, 3 no such image, SBOM, feed or usable key (nothing attached), 4 the
image's bytes, or the SBOM the scan reads, fail their check.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyPath == "" {
				return exitcode.Errorf(exitcode.Usage, "--key FILE is required: the image key (openssl genpkey -algorithm ed25519 -out FILE)")
			}
			sc, err := ociattest.ParseScheme(scheme)
			if err != nil {
				return err
			}
			t := g.term
			k, err := keys.LoadPrivate(keyPath)
			if err != nil {
				return exitcode.Errorf(exitcode.Precondition, "the image key %q cannot be used: %v", keyPath, err)
			}
			img, err := ociattest.Open(cmd.Context(), args[0], dir)
			if err != nil {
				return err
			}
			now := time.Now().UTC()
			id, _ := k.KeyID()
			out := struct {
				Image    string              `json:"image"`
				Store    string              `json:"store"`
				Kind     string              `json:"kind"`
				Where    string              `json:"attached_as"`
				KeyID    string              `json:"key_id"`
				SBOM     string              `json:"sbom_digest,omitempty"`
				Packages int                 `json:"packages,omitempty"`
				Scan     *vulnscan.Predicate `json:"scan,omitempty"`
			}{Image: img.Ref.String(), Store: img.String(), Kind: what, KeyID: id}
			switch what {
			case "sign":
				out.Where, err = ociattest.Sign(img, k, sc, now)
			case "sbom":
				var d digest.SHA256
				out.Where, d, out.Packages, err = ociattest.AttachSBOM(img, k, sc, now)
				out.SBOM = d.String()
			case "scan":
				if feedDir == "" {
					return exitcode.Errorf(exitcode.Usage, "--osv DIR is required: a folder of OSV records for %s", ecosystem)
				}
				tf, _, terr := loadImageTrust(g.home, g.trust)
				if terr != nil {
					return terr
				}
				var ws []vulnscan.Waiver
				if waiversPath != "" {
					if ws, err = vulnscan.LoadWaivers(waiversPath, now); err != nil {
						return err
					}
				}
				feed, ferr := vulnscan.LoadFeed(feedDir)
				if ferr != nil {
					return ferr
				}
				out.Where, out.Scan, err = ociattest.AttachScan(img, ociattest.ScanInput{Trust: tf, Signer: k, Feed: feed, Ecosystem: ecosystem, Waivers: ws, Scheme: sc, Now: now})
				if out.Scan != nil {
					out.SBOM = out.Scan.SBOMDigest
				}
			}
			if err != nil {
				return err
			}
			if g.json {
				if err := t.Document(out); err != nil {
					return err
				}
			} else {
				w := t.Stdout()
				ui.Fprintf(w, "image    %s (%s)\n%-8s attached as %s, key id %s\n", out.Image, out.Store, what, out.Where, id)
				if out.SBOM != "" {
					ui.Fprintf(w, "SBOM     %s\n", out.SBOM)
				}
				if p := out.Scan; p != nil {
					ui.Fprintf(w, "feed     %s (%d records, %s)\nfindings %d, %d unwaived, highest unwaived severity %s\n", p.Feed.Digest, p.Feed.Records, p.Feed.Ecosystem, len(p.Findings), p.Unwaived, p.MaxUnwaivedSeverity)
				}
			}
			if p := out.Scan; p != nil && p.Unwaived > 0 {
				return exitcode.Errorf(exitcode.Negative, "%d unwaived finding(s), highest severity %s (the scan is attached; the trust file's max_severity decides)", p.Unwaived, p.MaxUnwaivedSeverity)
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&keyPath, "key", "", "the image key: an ed25519 private key, PKCS #8 PEM, mode 0600 (required)")
	cmd.Flags().StringVar(&dir, "layout", "", "OCI image layout folder that holds the image (default: the registry NAME names)")
	cmd.Flags().StringVar(&scheme, "scheme", string(ociattest.Referrers), "how to attach: referrers (OCI 1.1) or cosign (the sha256-<hex>.att tag)")
	if what == "scan" {
		cmd.Flags().StringVar(&feedDir, "osv", "", "folder of OSV JSON records (required)")
		cmd.Flags().StringVar(&ecosystem, "ecosystem", "Debian:12", "OSV ecosystem of the image's packages")
		cmd.Flags().StringVar(&waiversPath, "waivers", "", "JSON file of reasoned, dated waivers (as for 'repro image scan')")
		g.trustFlag(cmd, "trust file whose image keys must have signed the SBOM that is scanned (default REPRO_HOME/trust.json)")
	}
	return cmd
}

// loadImageTrust reads the trust file (--trust, else REPRO_HOME's) that a
// runtime image is judged by; there must be one.
func loadImageTrust(home, path string) (*trust.File, string, error) {
	tf, p, err := imagetrust.LoadTrust(home, path)
	if err != nil {
		return nil, "", err
	}
	if tf == nil {
		return nil, "", exitcode.Errorf(exitcode.Precondition, "no trust file at %s: write one that lists the image key for \"images\" (docs/supply-chain.md), or name one with --trust FILE", layout.Home(home).Trust())
	}
	return tf, p, nil
}

func newOCIVerifyCommand(g *globalOptions) *cobra.Command {
	var (
		dir string
	)
	cmd := &cobra.Command{
		Use:   "verify [--layout DIR] [--trust FILE] NAME@sha256:<hex>",
		Short: "Check an image's signature, SBOM and scan against the trust file's image policy",
		Long: `verify reads the attestations attached to the image (referrers and cosign's
tag) and applies the trust file's image policy to them as 'repro handoff'
does: a signature by a key listed for "images" where the policy requires one,
and an SBOM and a scan of it no older than the policy allows where it requires
a scan (the production profile requires all three).

Exit codes: 0 admitted, 3 a missing SBOM or scan, a stale or too severe scan,
or no trust file, 4 unsigned, signed by an untrusted key, or an attestation
of another image or SBOM.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			home := g.home
			tf, _, err := loadImageTrust(home, g.trust)
			if err != nil {
				return err
			}
			img, err := ociattest.Open(cmd.Context(), args[0], dir)
			if err != nil {
				return err
			}
			if _, _, err := img.Manifest(); err != nil {
				return err
			}
			found, err := img.Envelopes()
			if err != nil {
				return err
			}
			v, _, err := ociattest.Verify(tf, ociattest.PolicyOf(tf.Image), img.Digest, found, time.Now())
			if err != nil {
				return err
			}
			v.Image, v.Store = img.Ref.String(), img.String()
			if g.json {
				return t.Document(v)
			}
			v.WriteText(t.Stdout())
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&dir, "layout", "", "OCI image layout folder that holds the image (default: the registry NAME names)")
	g.trustFlag(cmd, "trust file (default REPRO_HOME/trust.json)")
	return cmd
}
