package main

import (
	"github.com/reprolab/repro/internal/handoff"
	"github.com/reprolab/repro/internal/imagetrust"
	"github.com/reprolab/repro/internal/trust"
	"github.com/spf13/cobra"
)

func init() { register(newHandoffCommand) }

func newHandoffCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "handoff",
		Short: "Prepare MiniGo and DLRM runs for a GPU cluster, and check what comes back",
		Long: `handoff prepares an MLPerf Training workload that needs a GPU cluster for a run
there, under the controls of the security review, and checks the logs that come
back.

  repro handoff minigo|dlrm --out DIR [--config FILE] [--target slurm|kubernetes]
      checks every requirement that can be checked on this machine and writes a
      bundle (manifest, fail-closed preflight, Slurm batch script or Kubernetes
      objects, operator README) only if all of them hold; otherwise it prints one
      line per unmet requirement, saying how to satisfy it, and exits 3.
      --plan writes the bundle anyway, marked not ready, for review.
  repro handoff requirements [minigo|dlrm]   lists the requirements and their checks
  repro handoff verify BUNDLE                checks that a bundle is unchanged
  repro handoff ingest BUNDLE RESULTS        verifies returned logs and records the run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, w := range handoff.WorkloadNames() {
		cmd.AddCommand(newHandoffWorkloadCommand(g, w))
	}
	cmd.AddCommand(newHandoffRequirementsCommand(g), newHandoffVerifyCommand(g), newHandoffIngestCommand(g))
	return noHome(cmd)
}

// handoffWorkloadOptions are the flags of repro handoff minigo|dlrm.
type handoffWorkloadOptions struct {
	out, target, config, container string
	plan                           bool
}

func newHandoffWorkloadCommand(g *globalOptions, workload string) *cobra.Command {
	var o handoffWorkloadOptions
	cmd := &cobra.Command{
		Use:   workload + " --out DIR [--config FILE] [--target slurm|kubernetes] [--plan]",
		Short: "Check the " + workload + " requirements and write a handoff bundle",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			p, err := handoff.HandoffAt(cmd.Context(), g.home, handoff.Request{
				Workload: workload, Target: o.target, ConfigPath: o.config, Container: o.container,
				Out: o.out, Plan: o.plan, Version: versionString(), Progress: t.HashProgress(),
				LoadTrust: func() (*trust.File, string, error) { return imagetrust.LoadTrust(g.home, g.trust) },
			})
			if p == nil {
				return err
			}
			failed := p.Failed()
			for _, r := range failed {
				t.Notef("%s", r.Line())
			}
			report := struct {
				Workload string           `json:"workload"`
				Ready    bool             `json:"ready"`
				Written  string           `json:"written,omitempty"`
				Digest   string           `json:"manifest_digest,omitempty"`
				Results  []handoff.Result `json:"requirements"`
			}{Workload: workload, Ready: p.Ready(), Results: p.Results}
			if err != nil {
				if g.json {
					if jerr := t.Document(report); jerr != nil {
						return jerr
					}
				}
				return err
			}
			report.Written, report.Digest = o.out, p.Manifest.Digest
			if g.json {
				return t.Document(report)
			}
			t.Printf("wrote %s to %q\n", p.Manifest.Summary(), o.out)
			if !p.Ready() {
				t.Printf("this is a plan for review: its preflight refuses to run until the %d requirement(s) above hold\n", len(failed))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "folder to write the bundle to (new or empty)")
	cmd.Flags().StringVar(&o.target, "target", handoff.TargetSlurm, "where the bundle runs: slurm or kubernetes")
	cmd.Flags().StringVar(&o.config, "config", "", "handoff configuration (JSON; see docs/handoff.md)")
	cmd.Flags().StringVar(&o.container, "container", "", "Slurm container runtime: pyxis (default), apptainer or podman")
	cmd.Flags().BoolVar(&o.plan, "plan", false, "write the bundle even if requirements are unmet, marked not ready")
	g.trustFlag(cmd, "trust file whose image policy the image must meet: signature, SBOM, scan (default REPRO_HOME/trust.json when present)")
	g.jsonFlag(cmd, "print the requirement results as JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newHandoffRequirementsCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requirements [minigo|dlrm]",
		Short: "List each workload's requirements, what is checked where, and how to satisfy them",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := handoff.LookupAll(args)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(ws)
			}
			handoff.WriteRequirements(t.Human(), ws)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return noHome(cmd)
}

func newHandoffVerifyCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify BUNDLE [--trust FILE]",
		Short: "Check that a bundle's manifest digest holds, its files are the ones repro wrote, and its image evidence verifies",
		Long: `verify checks the manifest digest of BUNDLE, renders its files again and
compares them, and checks the image evidence it keeps: when the bundle was
made under a trust file's image policy, the kept signature, SBOM and scan
envelopes must hash to what the manifest records and verify again, as of the
bundle's making, against the trust file (--trust, default REPRO_HOME/trust.json)
with the same signers.

Exit status: 0 verified, 3 no trust file for a bundle that needs one, 4
anything changed or no longer verifying.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := handoff.VerifyBundleAt(args[0], func() (*trust.File, error) {
				tf, _, err := imagetrust.LoadTrust(g.home, g.trust)
				return tf, err
			})
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(m)
			}
			t.Printf("ok: %s\n", m.Summary())
			if v := m.ImageVerification; v != nil && v.Verified != nil {
				t.Printf("image %s admitted under policy %s; its evidence verifies again:\n", m.Image, v.Policy)
				v.Verified.WriteText(t.Human())
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print the manifest as JSON")
	g.trustFlag(cmd, "trust file that lists the image keys (default REPRO_HOME/trust.json when present)")
	return cmd
}

func newHandoffIngestCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest BUNDLE RESULTS",
		Short: "Verify the logs a bundle's job returned against its manifest, and record the run",
		Long: `ingest verifies BUNDLE (its manifest digest and every file it renders), the
preflight reports in RESULTS (every pin the node hashed equals the manifest's, the
preflight passed on the node and inside the image) and each result_N.txt (its
:::REPRO header names this manifest, image, run and seed; its MLLOG passes the
strict compliance check of the benchmark; logged seeds equal the manifest's and
are distinct), then scores the set and records the run, whatever the verdict,
in REPRO_HOME/runs/<id>/ (see repro runs): the verified copies of the reports
and result files, the manifest, ingest.json and the signed run record.

Exit status: 0 all verified, 1 something missing or not compliant, 4 something
differs from the manifest.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, ierr := handoff.Ingest(cmd.Context(), args[0], args[1], handoff.IngestOptions{Home: g.home, Version: versionString()})
			t := g.term
			if rec == nil {
				return ierr
			}
			if g.json {
				if err := t.Document(rec); err != nil {
					return err
				}
				return ierr
			}
			rec.WriteText(t.Human(), t.Stderr())
			return ierr
		},
	}
	g.jsonFlag(cmd, "print the record as JSON")
	return cmd
}
