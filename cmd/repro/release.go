package main

import (
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
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

func newReleaseAttestCommand(g *globalOptions) *cobra.Command {
	var keyPath, version, commit, source string
	var buildCommands []string
	var started string
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
			t := g.term
			k, err := keys.LoadPrivate(keyPath)
			if err != nil {
				return exitcode.Errorf(exitcode.Precondition, "release key: %v (make one with 'repro keys new --out FILE')", err)
			}
			o := release.Options{Version: version, Commit: commit, Source: source, BuildCommand: map[string]string{}, FinishedOn: time.Now()}
			o.StartedOn = o.FinishedOn
			if started != "" {
				if o.StartedOn, err = time.Parse(time.RFC3339, started); err != nil {
					return exitcode.Errorf(exitcode.Usage, "--started %q: %v", started, err)
				}
			}
			for _, bc := range buildCommands {
				p, c, ok := strings.Cut(bc, "=")
				if !ok {
					return exitcode.Errorf(exitcode.Usage, "--build-command %q: give PLATFORM=COMMAND", bc)
				}
				o.BuildCommand[p] = c
			}
			if err := release.Attest(args[0], k, o); err != nil {
				return err
			}
			t.Printf("release %s (%s): %s and %s written, signed by key %s\n", version, commit, release.SBOMFile, release.ProvenanceFile, keys.ID(k.PublicKey()))
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "release signing key (PKCS #8 PEM, mode 0600)")
	cmd.Flags().StringVar(&version, "version", "", "the release's version")
	cmd.Flags().StringVar(&commit, "commit", "", "the full git commit the binaries were built from")
	cmd.Flags().StringVar(&source, "source", "", "the source repository (default "+release.DefaultSource+")")
	cmd.Flags().StringArrayVar(&buildCommands, "build-command", nil, "PLATFORM=COMMAND that built a binary (repeatable)")
	cmd.Flags().StringVar(&started, "started", "", "when the build started (RFC 3339)")
	_ = cmd.MarkFlagRequired("key")
	return noHome(cmd)
}

func newReleaseVerifyCommand(g *globalOptions) *cobra.Command {
	var keyPath string
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
			t := g.term
			pub, err := release.ReadKey(keyPath)
			if err != nil {
				return err
			}
			v, err := release.Verify(args[0], pub)
			if err != nil {
				return err
			}
			if g.json {
				return t.Document(v)
			}
			t.Printf("release %s of %s at commit %s verifies with key %s: %d binaries, %d modules (%s)\n",
				v.Version, v.Source, v.Commit, v.KeyID, len(v.Binaries), v.Modules, v.Go)
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "the release's public key (PEM)")
	g.jsonFlag(cmd, "print JSON")
	_ = cmd.MarkFlagRequired("key")
	return noHome(cmd)
}
