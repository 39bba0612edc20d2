package main

import (
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/release"
	"github.com/spf13/cobra"
)

func init() { register(newReleaseCommand) }

func newReleaseCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Sign and verify the provenance of a repro release",
		Long: `A release (scripts/release.sh VERSION) is a folder with the binaries for
linux/amd64 and linux/arm64, the CycloneDX SBOM of their Go modules, a SLSA
Provenance v1 over the binaries signed with the release key, and SHA256SUMS.
See docs/release.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.Errorf(exitcode.Usage, "release needs a subcommand: attest or verify")
		},
	}
	cmd.AddCommand(newReleaseAttestCommand(g), newReleaseVerifyCommand(g))
	return noHome(cmd)
}

// releaseAttestOptions are the flags of repro release attest.
type releaseAttestOptions struct {
	key, version, commit, source, started string
	buildCommands                         []string
}

func newReleaseAttestCommand(g *globalOptions) *cobra.Command {
	var o releaseAttestOptions
	cmd := &cobra.Command{
		Use:   "attest --key FILE --version V --commit SHA DIR",
		Short: "Write the SBOM and the signed SLSA provenance of the binaries in DIR",
		Long: `attest reads repro-linux-amd64 and repro-linux-arm64 in DIR, checks that they
link the same modules with the same Go toolchain, and writes DIR/sbom.cdx.json
and DIR/provenance.sigstore.json: a SLSA Provenance v1 over the binaries (source
and commit, builder, toolchain, each platform's build command and settings,
every module with its go.sum hash), signed with the release key (an ed25519
key made by 'repro keys new') as a DSSE envelope in a Sigstore bundle.
scripts/release.sh runs it.

EXIT STATUS
  0 written, 2 usage, 3 a binary or the key is missing, 4 the binaries differ.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := release.AttestDir(args[0], release.AttestRequest{KeyPath: o.key, Version: o.version, Commit: o.commit,
				Source: o.source, BuildCommands: o.buildCommands, Started: o.started, Now: time.Now()})
			if err != nil {
				return err
			}
			g.term.Printf("release %s (%s): %s and %s written, signed by key %s\n", o.version, o.commit, release.SBOMFile, release.ProvenanceFile, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.key, "key", "", "release signing key (PKCS #8 PEM, mode 0600)")
	cmd.Flags().StringVar(&o.version, "version", "", "the release's version")
	cmd.Flags().StringVar(&o.commit, "commit", "", "the full git commit the binaries were built from")
	cmd.Flags().StringVar(&o.source, "source", "", "the source repository (default "+release.DefaultSource+")")
	cmd.Flags().StringArrayVar(&o.buildCommands, "build-command", nil, "PLATFORM=COMMAND that built a binary (repeatable)")
	cmd.Flags().StringVar(&o.started, "started", "", "when the build started (RFC 3339)")
	_ = cmd.MarkFlagRequired("key")
	return noHome(cmd)
}

// releaseVerifyOptions are the flags of repro release verify.
type releaseVerifyOptions struct {
	key string
}

func newReleaseVerifyCommand(g *globalOptions) *cobra.Command {
	var o releaseVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify --key RELEASE.pub DIR",
		Short: "Check a release against the release key",
		Long: `verify checks the release in DIR with the release's public key alone (no
network, no transparency log): the provenance's signature, that its subjects
are exactly the binaries with the digests they have, that each binary links
exactly the modules and toolchain the provenance names with their go.sum
hashes, that the SBOM is the one it names, and that SHA256SUMS agrees. See
docs/release.md.

EXIT STATUS
  0 the release verifies, 2 usage (a key that cannot be read), 4 anything
  differs or is missing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := release.VerifyDir(args[0], o.key)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(v)
			}
			t.Printf("release %s of %s at commit %s verifies with key %s: %d binaries, %d modules (%s)\n",
				v.Version, v.Source, v.Commit, v.KeyID, len(v.Binaries), v.Modules, v.Go)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.key, "key", "", "the release's public key (PEM)")
	g.jsonFlag(cmd, "print JSON")
	_ = cmd.MarkFlagRequired("key")
	return noHome(cmd)
}
