package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/pickle"
	"github.com/reprolab/repro/internal/safefile"
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

func newPickleScanCommand(g *globalOptions) *cobra.Command {
	var profile string
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
			t := g.term
			p, err := pickle.LookupProfile(profile)
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			path := args[0]
			rep, err := decodePickleInput(path, p, pickle.Scan)
			if err != nil {
				return err
			}
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
			return pickleVerdictError(path, rep)
		},
	}
	cmd.Flags().StringVar(&profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	g.jsonFlag(cmd, "print the full report as JSON")
	return noHome(cmd)
}

func newPickleConvertCommand(g *globalOptions) *cobra.Command {
	var profile, out string
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
			t := g.term
			p, err := pickle.LookupProfile(profile)
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			if out == "" {
				return exitcode.Errorf(exitcode.Usage, "--out is required")
			}
			if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
				return exitcode.Errorf(exitcode.Precondition, "output folder %q does not exist; create it first", out)
			}
			path := args[0]
			m, err := decodePickleInput(path, p, pickle.Convert)
			if err != nil {
				return err
			}
			res, err := m.WriteFiles(out, 0o644)
			if err != nil {
				return err
			}
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
	cmd.Flags().StringVar(&profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	cmd.Flags().StringVar(&out, "out", "", "folder to write model.safetensors and config.json into")
	g.jsonFlag(cmd, "print what was written as JSON")
	return noHome(cmd)
}

// openPickleInput opens a command-line path for reading (safefile.OpenNamed:
// a regular file, a FIFO cannot stall it) and returns the size to read.
func openPickleInput(path string) (*os.File, int64, error) {
	f, err := safefile.OpenNamed(path)
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, 0, exitcode.New(exitcode.Usage, err)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot open %q: %v", path, errors.Unwrap(err))
		}
		return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot open %q: %v", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Precondition, "cannot stat %q: %v", path, err)
	}
	if fi.Size() > pickle.MaxInputSize {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Integrity, "%q: %d bytes exceed the limit of %d", path, fi.Size(), int64(pickle.MaxInputSize))
	}
	return f, fi.Size(), nil
}

// decodePickleInput opens path with openPickleInput and decodes it with
// decode (pickle.Scan or pickle.Convert) against p. A decoding error is
// exit 1 when the profile rejects the file (*pickle.PolicyError) and exit 4
// otherwise.
func decodePickleInput[T any](path string, p *pickle.Profile, decode func(io.ReaderAt, int64, *pickle.Profile) (T, error)) (T, error) {
	var zero T
	f, size, err := openPickleInput(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := decode(f, size, p)
	if err != nil {
		var pe *pickle.PolicyError
		if errors.As(err, &pe) {
			return zero, exitcode.Errorf(exitcode.Negative, "%q: %v", path, err)
		}
		return zero, exitcode.Errorf(exitcode.Integrity, "%q: %v", path, err)
	}
	return v, nil
}

func pickleVerdictError(path string, rep *pickle.Report) error {
	switch rep.Verdict {
	case pickle.Clean:
		return nil
	case pickle.Rejected:
		return exitcode.Errorf(exitcode.Negative, "%q: %v", path, rep.Err())
	default:
		return exitcode.Errorf(exitcode.Integrity, "%q: %v", path, rep.Err())
	}
}
