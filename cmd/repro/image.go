package main

import (
	"fmt"

	"github.com/reprolab/repro/internal/layout"
	"github.com/reprolab/repro/internal/sandbox"
	"github.com/spf13/cobra"
)

func init() { register(newImageCommand) }

func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and show the evaluator image the sandbox runs",
	}
	cmd.AddCommand(newImageBuildCommand(), newImageShowCommand())
	return cmd
}

func newImageBuildCommand() *cobra.Command {
	var (
		asJSON bool
		fresh  bool
		mirror string
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the evaluator image offline from Debian packages and pin it",
		Long: `build makes the evaluator image without any registry: debootstrap installs a
minimal Debian bookworm with python3 from Debian's packages, the tree becomes one
deterministic layer (sorted entries, fixed times, owner 0, setuid and setgid
bits removed), go-containerregistry writes a docker-format image and the engine
loads it. The image ID (the engine's config digest) and the manifest digest are
printed and pinned in REPRO_HOME; every sandbox run refuses any other image.

Needs root and debootstrap. The layer is cached in REPRO_HOME and reused after
its digest is checked; --fresh bootstraps again.

Where a registry is reachable, a digest-pinned python:3.11-slim@sha256:... base
could serve instead; repro builds its own so that no registry is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := terminal(cmd, asJSON)
			ctx := cmd.Context()
			home, err := layout.DefaultHome()
			if err != nil {
				return err
			}
			e, err := sandbox.Connect(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			opts := sandbox.BuildOptions{Mirror: mirror, Fresh: fresh}
			if log := t.Log(); log != nil {
				opts.Progress = log
			}
			img, err := sandbox.BuildImage(ctx, e, home, opts)
			if err != nil {
				return err
			}
			if asJSON {
				return t.Document(img)
			}
			fmt.Fprintf(t.Stdout(), "image ID        %s\nmanifest digest %s\n", img.ID, img.ManifestDigest)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document on stdout")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "bootstrap again instead of reusing the cached layer")
	cmd.Flags().StringVar(&mirror, "mirror", sandbox.DefaultMirror, "Debian mirror for debootstrap")
	return cmd
}

func newImageShowCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the pinned evaluator image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := terminal(cmd, asJSON)
			home, err := layout.DefaultHome()
			if err != nil {
				return err
			}
			pin, err := sandbox.ReadPin(home)
			if err != nil {
				return err
			}
			if asJSON {
				return t.Document(pin)
			}
			w := t.Stdout()
			fmt.Fprintf(w, "image ID        %s\nmanifest digest %s\nreference       %s\nlayer           %s (%d bytes)\n",
				pin.ID, pin.ManifestDigest, pin.Reference, pin.LayerDigest, pin.LayerSize)
			fmt.Fprintf(w, "debian          %s (%s) + %v from %s\npackages        %d\nbuilt           %s\n",
				pin.Suite, pin.Variant, pin.Included, pin.Mirror, len(pin.Packages), pin.BuiltAt.Format("2006-01-02 15:04:05 UTC"))
			if pin.Layer != nil {
				fmt.Fprintf(w, "setuid/setgid   %d bits removed: %v\n", len(pin.Layer.Stripped), pin.Layer.Stripped)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document on stdout")
	return cmd
}
