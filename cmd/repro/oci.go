package main

import (
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/ociattest"
	"github.com/reprolab/repro/internal/trust"
	"github.com/reprolab/repro/internal/ui"
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

// ociAttachOptions are the flags of repro oci sign, sbom and scan.
type ociAttachOptions struct {
	key, layout, scheme     string
	osv, ecosystem, waivers string
}

func newOCIAttachCommand(g *globalOptions, what string) *cobra.Command {
	var o ociAttachOptions
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
			if o.key == "" {
				return exitcode.Errorf(exitcode.Usage, "--key FILE is required: the image key (openssl genpkey -algorithm ed25519 -out FILE)")
			}
			out, err := ociattest.Attach(cmd.Context(), ociattest.AttachRequest{What: what, Ref: args[0], Layout: o.layout,
				KeyPath: o.key, Scheme: o.scheme, Feed: o.osv, Ecosystem: o.ecosystem, Waivers: o.waivers,
				Trust: func() (*trust.File, error) {
					tf, _, err := imagetrust.RequireTrust(g.home, g.trust)
					return tf, err
				}, Now: time.Now().UTC()})
			if err != nil {
				return err
			}
			return writeOCIAttached(g.term, out)
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&o.key, "key", "", "the image key: an ed25519 private key, PKCS #8 PEM, mode 0600 (required)")
	cmd.Flags().StringVar(&o.layout, "layout", "", "OCI image layout folder that holds the image (default: the registry NAME names)")
	cmd.Flags().StringVar(&o.scheme, "scheme", string(ociattest.Referrers), "how to attach: referrers (OCI 1.1) or cosign (the sha256-<hex>.att tag)")
	if what == "scan" {
		cmd.Flags().StringVar(&o.osv, "osv", "", "folder of OSV JSON records (required)")
		cmd.Flags().StringVar(&o.ecosystem, "ecosystem", "Debian:12", "OSV ecosystem of the image's packages")
		cmd.Flags().StringVar(&o.waivers, "waivers", "", "JSON file of reasoned, dated waivers (as for 'repro image scan')")
		g.trustFlag(cmd, "trust file whose image keys must have signed the SBOM that is scanned (default REPRO_HOME/trust.json)")
	}
	return cmd
}

// writeOCIAttached prints what Attach attached: one JSON document under
// --json, else a few lines; it returns out.Verdict().
func writeOCIAttached(t *ui.Terminal, out *ociattest.Attached) error {
	if t.JSON() {
		if err := t.Document(out); err != nil {
			return err
		}
		return out.Verdict()
	}
	w := t.Stdout()
	ui.Fprintf(w, "image    %s (%s)\n%-8s attached as %s, key id %s\n", out.Image, out.Store, out.Kind, out.Where, out.KeyID)
	if out.SBOM != "" {
		ui.Fprintf(w, "SBOM     %s\n", out.SBOM)
	}
	if p := out.Scan; p != nil {
		ui.Fprintf(w, "feed     %s (%d records, %s)\nfindings %d, %d unwaived, highest unwaived severity %s\n", p.Feed.Digest, p.Feed.Records, p.Feed.Ecosystem, len(p.Findings), p.Unwaived, p.MaxUnwaivedSeverity)
	}
	return out.Verdict()
}

// ociVerifyOptions are the flags of repro oci verify.
type ociVerifyOptions struct {
	layout string
}

func newOCIVerifyCommand(g *globalOptions) *cobra.Command {
	var o ociVerifyOptions
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
			v, err := ociattest.VerifyImage(cmd.Context(), func() (*trust.File, error) {
				tf, _, err := imagetrust.RequireTrust(g.home, g.trust)
				return tf, err
			}, args[0], o.layout, time.Now())
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(v)
			}
			v.WriteText(t.Stdout())
			return nil
		},
	}
	g.jsonFlag(cmd, "print one JSON document on stdout")
	cmd.Flags().StringVar(&o.layout, "layout", "", "OCI image layout folder that holds the image (default: the registry NAME names)")
	g.trustFlag(cmd, "trust file (default REPRO_HOME/trust.json)")
	return cmd
}
