package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/reprolab/repro/internal/atomicfile"
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

func newPickleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pickle",
		Short: "Inspect and convert pickled models without executing them",
		Long: `The pickle commands decode Python pickles and torch.save files statically: no
code in the file runs, however the file is built. A profile (an allowlist of
containers, opcodes, globals, classes and structure) decides the verdict.

Profiles: ` + strings.Join(pickle.ProfileNames(), ", ") + `.`,
	}
	cmd.AddCommand(newPickleScanCommand(), newPickleConvertCommand())
	return cmd
}

func newPickleScanCommand() *cobra.Command {
	var profile string
	var asJSON bool
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
			t := terminal(cmd, asJSON)
			p, err := pickle.LookupProfile(profile)
			if err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			path := args[0]
			f, size, err := openPickleInput(path)
			if err != nil {
				return err
			}
			defer f.Close()
			rep, err := pickle.Scan(f, size, p)
			if err != nil {
				return exitcode.Errorf(exitcode.Integrity, "%q: %v", path, err)
			}
			if asJSON {
				if err := t.Document(struct {
					File string `json:"file"`
					*pickle.Report
				}{path, rep}); err != nil {
					return err
				}
			} else {
				printPickleReport(t.Stdout(), path, rep)
			}
			return pickleVerdictError(path, rep)
		},
	}
	cmd.Flags().StringVar(&profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full report as JSON")
	return cmd
}

func newPickleConvertCommand() *cobra.Command {
	var profile, out string
	var asJSON bool
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
			t := terminal(cmd, asJSON)
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
			f, size, err := openPickleInput(path)
			if err != nil {
				return err
			}
			defer f.Close()
			m, err := pickle.Convert(f, size, p)
			if err != nil {
				var pe *pickle.PolicyError
				if errors.As(err, &pe) {
					return exitcode.Errorf(exitcode.Negative, "%q: %v", path, err)
				}
				return exitcode.Errorf(exitcode.Integrity, "%q: %v", path, err)
			}
			st := filepath.Join(out, "model.safetensors")
			sum, n, err := m.WriteSafetensorsFile(st, 0o644)
			if err != nil {
				return err
			}
			cfg, err := m.ConfigJSON()
			if err != nil {
				return err
			}
			cf := filepath.Join(out, "config.json")
			if err := atomicfile.WriteFile(cf, cfg, 0o644); err != nil {
				return err
			}
			res := struct {
				File        string `json:"file"`
				Safetensors string `json:"safetensors"`
				SHA256      string `json:"sha256"`
				Size        int64  `json:"size"`
				Config      string `json:"config"`
				Tensors     int    `json:"tensors"`
			}{path, st, sum.Hex(), n, cf, len(m.Tensors)}
			if asJSON {
				return t.Document(res)
			}
			fmt.Fprintf(t.Stdout(), "wrote %q (%d tensors, %s, sha256:%s)\nwrote %q\n", st, len(m.Tensors), pickleBytes(n), sum.Hex(), cf)
			return nil
		},
	}
	cmd.Flags().StringVar(&profile, "profile", pickle.ProfileTorchStateDict, "allowlist profile: "+strings.Join(pickle.ProfileNames(), ", "))
	cmd.Flags().StringVar(&out, "out", "", "folder to write model.safetensors and config.json into")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was written as JSON")
	return cmd
}

// openPickleInput opens a command-line path for reading without following it
// into anything but a regular file: it opens non-blocking (a FIFO cannot
// stall it), checks the open descriptor, and returns the size to read.
func openPickleInput(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Usage, "%q is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > pickle.MaxInputSize {
		f.Close()
		return nil, 0, exitcode.Errorf(exitcode.Integrity, "%q: %d bytes exceed the limit of %d", path, fi.Size(), int64(pickle.MaxInputSize))
	}
	return f, fi.Size(), nil
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

// printPickleReport writes the human-readable form of a scan report.
func printPickleReport(w io.Writer, path string, r *pickle.Report) {
	format := r.Format
	if format == "" {
		format = "unknown"
	}
	fmt.Fprintf(w, "file       %q\n", path)
	fmt.Fprintf(w, "size       %s (%d bytes)\n", pickleBytes(r.Size), r.Size)
	fmt.Fprintf(w, "sha256     %s\n", r.SHA256.Hex())
	fmt.Fprintf(w, "format     %s, pickle protocol %d\n", format, r.Protocol)
	fmt.Fprintf(w, "profile    %s\n", r.Profile)
	fmt.Fprintf(w, "verdict    %s\n", strings.ToUpper(string(r.Verdict)))
	if r.Error != "" {
		fmt.Fprintf(w, "error      %s\n", r.Error)
	}
	if len(r.Violations) > 0 {
		fmt.Fprintf(w, "\nviolations (%d)\n", len(r.Violations))
		for _, v := range r.Violations {
			if v.Offset >= 0 {
				fmt.Fprintf(w, "  @%-10d %s\n", v.Offset, v.Reason)
			} else {
				fmt.Fprintf(w, "  %-11s %s\n", "", v.Reason)
			}
		}
	}
	opcodes := func(title string, ops []pickle.OpcodeCount) {
		if len(ops) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		var line strings.Builder
		for i, o := range ops {
			item := fmt.Sprintf("%s %d", o.Name, o.Count)
			if line.Len() > 0 && line.Len()+len(item)+2 > 76 {
				fmt.Fprintf(w, "  %s\n", line.String())
				line.Reset()
			}
			if line.Len() > 0 {
				line.WriteString(", ")
			}
			line.WriteString(item)
			if i == len(ops)-1 {
				fmt.Fprintf(w, "  %s\n", line.String())
			}
		}
	}
	opcodes("opcodes", r.Opcodes)
	opcodes("opcodes in nested torch files", r.NestedOpcodes)
	fmt.Fprintf(w, "\nglobals (%d)\n", len(r.Globals))
	for _, g := range r.Globals {
		mark := "ok"
		if !g.Allowed {
			mark = "NO"
		}
		fmt.Fprintf(w, "  %-3s %7d  %s\n", mark, g.Count, g.Name)
	}
	if len(r.Blobs) > 0 {
		var total int64
		for _, b := range r.Blobs {
			total += b.Size
		}
		fmt.Fprintf(w, "\nnested torch files (%d, %s)\n", len(r.Blobs), pickleBytes(total))
		const show = 8
		for i, b := range r.Blobs {
			if i == show {
				fmt.Fprintf(w, "  … %d more (see --json)\n", len(r.Blobs)-show)
				break
			}
			fmt.Fprintf(w, "  @%-10d %9s  %s  %s[%d] on %s\n", b.Offset, pickleBytes(b.Size), b.Format, b.Storage.DType, b.Storage.Numel, b.Storage.Location)
		}
	}
	if len(r.Storages) > 0 {
		fmt.Fprintf(w, "\nstorages (%d)\n", len(r.Storages))
		for i, s := range r.Storages {
			if i == 8 {
				fmt.Fprintf(w, "  … %d more (see --json)\n", len(r.Storages)-8)
				break
			}
			fmt.Fprintf(w, "  %-12s %s[%d] on %s @%d\n", s.Key, s.DType, s.Numel, s.Location, s.Offset)
		}
	}
	if len(r.Sources) > 0 {
		fmt.Fprintf(w, "\nembedded module sources (%d) — executed by pickle.load, never by repro\n", len(r.Sources))
		for _, s := range r.Sources {
			fmt.Fprintf(w, "  sha256:%s  %d bytes  classes %s\n", s.SHA256.Hex(), s.Size, strings.Join(s.Classes, ", "))
		}
	}
	if len(r.Classes) > 0 {
		fmt.Fprintf(w, "\npersistent objects\n")
		for _, c := range r.Classes {
			fmt.Fprintf(w, "  %5d  %s (version %d, source sha256:%.12s…)\n", c.Count, c.Class, c.Version, c.SourceSHA256.Hex())
		}
	}
	if len(r.Tensors) > 0 {
		var elems int64
		for _, t := range r.Tensors {
			n := int64(1)
			for _, d := range t.Shape {
				n *= d
			}
			elems += n
		}
		fmt.Fprintf(w, "\ntensors (%d, %d elements, %s)\n", len(r.Tensors), elems, pickleBytes(r.TensorBytes))
		for _, t := range r.Tensors {
			layout := ""
			if !t.Contiguous {
				layout = fmt.Sprintf("  strides %v", t.Strides)
			}
			fmt.Fprintf(w, "  %-5s %-18s %s%s\n", t.DType, fmt.Sprint(t.Shape), t.Name, layout)
		}
	}
}

func pickleBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
