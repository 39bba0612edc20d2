package main

import (
	"fmt"
	"path/filepath"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/edm"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() { register(newEDMCommand) }

const edmExitStatus = `
EXIT STATUS
  0 done
  2 usage error (unknown model, bad seed list)
  3 a precondition is missing and nothing ran: an unpinned catalog entry (all
    real EDM entries are unpinned until a reviewer pins them with
    ` + "`repro catalog review`" + `), an asset not in the store, no EDM source tree,
    no GPU, no CUDA in PyTorch, too little GPU memory
  4 integrity violation: an asset, the EDM source tree or the runtime differs
    from its pin, a descriptor changed before it was deserialized, or a file
    is not what it must be (no 'ema' network, not a torch.nn.Module)`

func newEDMCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edm",
		Short: "Reproduce EDM's FID figures under the review's pickle controls",
		Long: `The edm commands reproduce the FID figures of EDM (Karras et al., 2022).

The checkpoints and the Inception detector are upstream pickles. repro uses
them only as the bytes a reviewer pinned in the compiled-in catalog: each is
copied into a sealed memory file while hashed, and the Python runtime hashes
that descriptor again right before it deserializes it. ` + "`convert`" + ` turns a
pinned pickle into safetensors without executing it; ` + "`fid --safe`" + ` runs
without unpickling anything.

NVIDIA publishes no digests for these files, so every EDM entry of the
catalog is unpinned and these commands stop until a reviewer downloads the
files once, checks them and pins them with ` + "`repro catalog review`" + `.`,
	}
	cmd.AddCommand(newEDMModelsCommand(g), newEDMConvertCommand(g), newEDMFIDCommand(g))
	return cmd
}

func newEDMModelsCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the EDM models, their sampler settings and the paper's FID",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows := edm.ListModels(catalog.Default())
			t := g.term
			if g.json {
				return t.Document(rows)
			}
			table := [][]string{{"MODEL", "PAPER FID", "SAMPLER", "PINNED"}}
			for _, r := range rows {
				table = append(table, []string{r.ID, fmt.Sprintf("%.2f", r.PaperFID), fmt.Sprint(r.Sampler), fmt.Sprint(r.Pinned)})
			}
			return t.Table(table)
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return noHome(cmd)
}

func newEDMConvertCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert MODEL-ID",
		Short: "Convert a pinned EDM checkpoint (or the detector) to safetensors without executing it",
		Long: `Convert reads the pinned checkpoint of MODEL-ID (or, given its catalog id,
the Inception detector) from the store as sealed verified bytes, decodes it
statically with the allowlist profile for its kind (no pickle code runs) and
writes the exported network's state_dict as model.safetensors plus
config.json (network class, constructor arguments, embedded-source digests,
asset digest) to REPRO_HOME/state/edm/<id>/<asset sha256>/, each atomically.
` + edmExitStatus,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := edm.ConvertPinned(cmd.Context(), g.home, args[0])
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(res)
			}
			match := ""
			if p := res.Record.SourceMatchesPin; p != nil {
				match = map[bool]string{true: " (embedded networks.py matches the pinned EDM source)", false: " (embedded networks.py differs from the pinned EDM source: fid --safe will refuse it)"}[*p]
			}
			ui.Fprintf(t.Human(), "%s: %s, %d tensors%s\nwrote %q (sha256:%s)\nwrote %q\n", res.Record.ID, res.Record.Class,
				res.Record.Tensors, match, res.Safetensors, res.Record.SafetensorsSHA256.Hex(), res.Config)
			return nil
		},
	}
	g.jsonFlag(cmd, "print what was written as JSON")
	return cmd
}

// edmFIDOptions are the flags of repro edm fid.
type edmFIDOptions struct {
	seeds, source, python, out string
	batch                      int
	safe                       bool
}

func newEDMFIDCommand(g *globalOptions) *cobra.Command {
	var o edmFIDOptions
	cmd := &cobra.Command{
		Use:   "fid MODEL-ID",
		Short: "Generate images with EDM's sampler on the GPU and compute their FID",
		Long: `Fid reproduces one FID figure of the EDM paper: it generates one image per
seed with EDM's sampler and the paper's settings for MODEL-ID (see
` + "`repro edm models`" + `), computes Inception features in the trusted Python runtime
(PyTorch with CUDA) and the FID against the pinned reference statistics in
Go, and prints it next to the paper's figure. The paper's figure is the
minimum over seeds 0-49999, 50000-99999 and 100000-149999.

Before Python starts, every asset must be pinned and verified, the EDM
source tree (--edm-source, a clean checkout of NVlabs/edm at the pinned
commit) must match its tree digest, and nvidia-smi must list a GPU; then
PyTorch must report CUDA and enough free memory. With --safe the checkpoint
and the detector are converted to safetensors first and nothing is
unpickled. Results go to --out, or by default to a new run folder
REPRO_HOME/runs/edm-fid-... with a signed run record (repro runs):
features.npy and result.json.
` + edmExitStatus,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			// Without --out the run gets a signed run record under
			// REPRO_HOME/runs, whatever its outcome.
			res, out, err := edm.FIDAt(cmd.Context(), g.home, edm.FIDRequest{
				Options: edm.FIDOptions{Model: args[0], Batch: o.batch, Safe: o.safe,
					SourceDir: o.source, Python: o.python, RunDir: o.out, Log: t.Log()},
				Seeds: o.seeds, Version: versionString(),
			})
			if err != nil {
				return err
			}
			t.Printf("%s\n", res.Summary())
			if g.json {
				return t.Document(res)
			}
			if res.Note != "" {
				t.Printf("note: %s\n", res.Note)
			}
			t.Printf("wrote %q\n", filepath.Join(out, "result.json"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.seeds, "seeds", "0-49999", "seeds of the generated images, e.g. 0-49999 or 1,2,5-10")
	f.IntVar(&o.batch, "batch", edm.DefaultBatch, "largest batch of images on the GPU")
	f.BoolVar(&o.safe, "safe", false, "load converted safetensors into classes rebuilt from source: unpickle nothing")
	f.StringVar(&o.source, "edm-source", "", "clean checkout of "+edm.EDMRepository+" at commit "+edm.EDMCommit[:7])
	f.StringVar(&o.python, "python", edm.DefaultPython, "Python interpreter with PyTorch and CUDA (absolute path)")
	f.StringVar(&o.out, "out", "", "folder for features.npy and result.json (must be new or empty)")
	g.jsonFlag(cmd, "print the result as JSON")
	return cmd
}
