package main

import (
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/pickle"
	"github.com/spf13/cobra"
)

func init() { register(newPickleCommand) }

const pickleExitStatus = `
EXIT STATUS
  0 the file is well-formed and inside the profile (verdict "clean")
  1 the file is well-formed but outside the profile (verdict "rejected")
  2 usage error: unknown profile, FILE not a regular file
  3 FILE cannot be opened
  4 FILE is not a well-formed pickle or torch file, or exceeds the
    decoder's limits (verdict "malformed")`

func newPickleCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pickle",
		Short: "Inspect and convert pickled models without executing them",
		Long: `The pickle commands decode Python pickles and torch.save files statically: no
code in the file runs, however the file is built. A profile (an allowlist of
containers, opcodes, globals, classes and structure) decides the verdict.

Profiles: ` + strings.Join(pickle.ProfileNames(), ", ") + `.`,
	}
	cmd.AddCommand(newPickleScanCommand(g), newPickleConvertCommand(g))
	return cmd
}

// pickleScanOptions are the flags of repro pickle scan.
type pickleScanOptions struct {
	profile string
}

func newPickleScanCommand(g *globalOptions) *cobra.Command {
	var o pickleScanOptions
	cmd := &cobra.Command{
		Use:   "scan FILE",
		Short: "List what a pickle holds and judge it against a profile",
		Long: `Scan decodes FILE without executing it and prints its container, opcodes,
globals, nested torch files, embedded module sources with their SHA-256,
tensors (name, dtype, shape) and the verdict against the profile. It is safe
on any file.

--profile selects the allowlist (default torch-state-dict, the narrowest):
  edm-checkpoint      an EDM training snapshot (dict with a persistent 'ema')
  inception-detector  the pickled Inception feature detector
  torch-state-dict    a state_dict saved with torch.save or pickle.dump
` + pickleExitStatus,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pickle.LookupProfile(o.profile)
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			path := args[0]
			rep, err := pickle.ScanFile(path, p)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				if err := t.Document(struct {
					File string `json:"file"`
					*pickle.Report
				}{path, rep}); err != nil {
					return err
				}
			} else {
				rep.WriteText(t.Human(), path)
			}
			return rep.VerdictError(path)
		},
	}
	cmd.Flags().StringVar(&o.profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	g.jsonFlag(cmd, "print the full report as JSON")
	return noHome(cmd)
}

// pickleConvertOptions are the flags of repro pickle convert.
type pickleConvertOptions struct {
	profile, out string
}

func newPickleConvertCommand(g *globalOptions) *cobra.Command {
	var o pickleConvertOptions
	cmd := &cobra.Command{
		Use:   "convert FILE --out DIR",
		Short: "Convert a pickled model to safetensors without executing it",
		Long: `Convert decodes FILE like scan and, when the verdict is clean, writes the
exported module's state_dict to DIR/model.safetensors and its description
(class, constructor arguments, embedded-source digests, input digest) to
DIR/config.json. Both files are written atomically. For an EDM snapshot the
exported module is its 'ema' network.
` + pickleExitStatus,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pickle.LookupProfile(o.profile)
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			if o.out == "" {
				return exitcode.Errorf(exitcode.Usage, "--out is required")
			}
			path := args[0]
			res, err := pickle.ConvertFile(path, p, o.out)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(struct {
					File string `json:"file"`
					*pickle.WrittenModel
				}{path, res})
			}
			t.Printf("wrote %q (%d tensors, %s, sha256:%s)\nwrote %q\n", res.Safetensors, res.Tensors, pickle.DecimalBytes(res.Size), res.SHA256, res.Config)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	cmd.Flags().StringVar(&o.out, "out", "", "folder to write model.safetensors and config.json into")
	g.jsonFlag(cmd, "print what was written as JSON")
	return noHome(cmd)
}
