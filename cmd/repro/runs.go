package main

import (
	"strings"
	"time"

	"github.com/reprolab/repro/internal/report"
	"github.com/reprolab/repro/internal/runimport"
	"github.com/reprolab/repro/internal/runindex"
	"github.com/reprolab/repro/internal/runs"
	"github.com/spf13/cobra"
)

func init() { register(newRunsCommand) }

func newRunsCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, verify and export the records of past runs",
		Long: `Every workload run leaves a folder REPRO_HOME/runs/<id> with its results and a
record (record.json) of what ran: assets and their digests, image, harness,
limits, host facts, self-check and results, with the SHA-256 of every file in
the folder. The record is the predicate of an in-toto Statement v1 whose
subjects are the folder's files, signed with the local run key
(REPRO_HOME/keys) as a DSSE envelope (record.dsse.json). See
docs/provenance.md. REPRO_HOME/index/runs.db indexes the folders for list;
it is a cache that reindex rebuilds from them (docs/runs.md).`,
	}
	cmd.AddCommand(newRunsListCommand(g), newRunsShowCommand(g), newRunsVerifyCommand(g), newRunsExportCommand(g), newRunsImportCommand(g), newRunsReproduceCommand(g), newRunsDiffCommand(g), newRunsReindexCommand(g))
	return cmd
}

// runsListOptions are the flags of repro runs list.
type runsListOptions struct {
	req runindex.ListRequest
}

func newRunsListCommand(g *globalOptions) *cobra.Command {
	var o runsListOptions
	f := &o.req.Filter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first, from the run index",
		Long: `list reads the run index (REPRO_HOME/index/runs.db), after bringing it up to
date with the run folders: a new folder is indexed, a vanished one dropped, and
every run shown is checked against its record.json first. A corrupt index is
reported on stderr and rebuilt from the folders. The columns are what each
record says; ` + "`repro runs verify ID`" + ` checks a record's signature and files.

Filters combine: --kind and --status match exactly, --dataset matches the
catalog id of any asset the run read (a dataset or a model checkpoint),
--digest a SHA-256 prefix of any input (asset or samples), --since and
--until the start time (YYYY-MM-DD, both days included, or RFC 3339),
--label and --model what the run scored (repro score --label, --model)
exactly, --sampling the runs whose sampling states every value given
(e.g. --sampling temperature=0 or n=10).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			rows, err := runindex.ListHome(cmd.Context(), g.home, o.req, func(w string) { t.Warnf("%s", w) })
			if err != nil {
				return err
			}
			if f.Limit > 0 && len(rows) == f.Limit && !cmd.Flags().Changed("limit") {
				t.Notef("the newest %d runs that match; --limit 0 lists all", f.Limit)
			}
			out := make([]listedRun, len(rows))
			for i, r := range rows {
				out[i] = listedRun{Entry: r, Started: listTime(r.Started), Finished: listTime(r.Finished)}
			}
			if g.json {
				return t.Document(map[string]any{"runs": out})
			}
			table := [][]string{{"ID", "KIND", "STATUS", "FINISHED", "LABEL"}}
			for _, r := range out {
				table = append(table, []string{r.ID, r.Kind, r.Status, r.Finished, r.Label})
			}
			return t.Table(table)
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().StringVar(&f.Kind, "kind", "", "only runs of this kind (humaneval, edm-fid, handoff-minigo, ...)")
	cmd.Flags().StringVar(&f.Status, "status", "", "only runs with this status (ok, negative, usage, precondition, integrity; incomplete, unreadable)")
	cmd.Flags().StringVar(&f.Input, "dataset", "", "only runs that read this catalog asset (dataset or model)")
	cmd.Flags().StringVar(&o.req.Digest, "digest", "", "only runs with an input (asset or samples) whose SHA-256 starts with this")
	cmd.Flags().StringVar(&o.req.Since, "since", "", "only runs started on or after this date")
	cmd.Flags().StringVar(&o.req.Until, "until", "", "only runs started on or before this date")
	cmd.Flags().StringVar(&f.Label, "label", "", "only runs with this label (repro score --label)")
	cmd.Flags().StringVar(&f.Model, "model", "", "only runs of this model (repro score --model)")
	cmd.Flags().StringVar(&o.req.Sampling, "sampling", "", "only runs whose sampling states these values, e.g. temperature=0,n=1")
	cmd.Flags().IntVar(&f.Limit, "limit", 50, "at most this many runs, newest first (0: all)")
	return cmd
}

// listedRun is a run as `runs list` prints it: times in the format the
// list has always used, "" when the record has none.
type listedRun struct {
	runindex.Entry
	Started  string `json:"started_at"`
	Finished string `json:"finished_at"`
}

func listTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func newRunsReindexCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "Rebuild the run index from the run folders",
		Long: `reindex deletes the run index (REPRO_HOME/index/runs.db) and builds it again
from the run folders alone. The index is a cache; the folders are the record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			n, err := runindex.Reindex(cmd.Context(), g.home, func(w string) { t.Warnf("%s", w) })
			if err != nil {
				return err
			}
			if g.json {
				return t.Document(map[string]any{"indexed": n})
			}
			t.Printf("indexed %d runs\n", n)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return cmd
}

func newRunsShowCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print the record of a run (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := runs.ReadRecordOf(g.home, args[0])
			if err != nil {
				return err
			}
			return g.term.JSONText(raw)
		},
	}
	return cmd
}

// runsVerifyOptions are the flags of repro runs verify.
type runsVerifyOptions struct {
	bundle, extract, vsa string
}

func newRunsVerifyCommand(g *globalOptions) *cobra.Command {
	var o runsVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify ID | verify --bundle FILE.tar [--extract DIR] [--vsa OUT]",
		Short: "Check a run folder or an evidence bundle against its signed record",
		Long: `verify checks that the record's DSSE envelope is signed by a key the trust
file trusts for run records at the time the record was signed, that its
in-toto statement names record.json and every other file of the run with
the SHA-256 they have now and no other file, and that record.json is the
signed predicate. Records signed before records became in-toto statements
verify too and are reported as legacy.

With --bundle it checks an evidence bundle made by 'repro runs export' on a
machine that need not have seen the run: also that the bundle holds nothing
else, that signer.pub is the signing key, and that an SBOM or scan
 attestation in it is the one the record names. A bundle is read only in
 repro's own tar form (what 'runs export' writes), so every tar reader sees
 the bytes that were checked. --extract DIR then writes those bytes, and
 nothing else, into DIR (new or empty), only when the bundle verifies. The
 trust file is --trust, else REPRO_HOME/trust.json (made when a REPRO_HOME
 first signs a run); a run added with 'repro runs import' is checked against
 the key it was imported with unless --trust is given. See docs/provenance.md.

A run also carries a SLSA Provenance v1 (provenance.sigstore.json) and an
in-toto Test Result (test-result.sigstore.json) over its outputs, signed
with the same key; verify checks them too. --vsa OUT writes a SLSA Verification Summary
Attestation of the check (PASSED or FAILED, as a DSSE envelope) signed with
this REPRO_HOME's run key, the verifier's key.

EXIT STATUS
  0 the run matches its signed record, 2 unknown run or unreadable bundle,
  3 no trust file, 4 anything differs (each difference is named).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, verr := report.VerifyRun(cmd.Context(), g.home, report.VerifyRequest{
				IDs: args, Bundle: o.bundle, Extract: o.extract, VSA: o.vsa, Trust: g.trust, Version: versionString(),
			})
			if res == nil {
				return verr
			}
			t := g.term
			v, checks, board := res.Verification, res.Checks, res.NotRanked
			if g.json {
				doc := map[string]any{"id": v.Record.ID, "ok": verr == nil, "legacy": v.Legacy, "problems": v.Problems, "attestations": v.Attestations}
				if v.Attestations == nil {
					doc["attestations"] = []runs.Attestation{}
				}
				if o.vsa != "" {
					doc["vsa"] = o.vsa
				}
				if v.Problems == nil {
					doc["problems"] = []runs.Problem{}
				}
				if o.bundle != "" {
					doc["bundle"] = o.bundle
				}
				if o.extract != "" && verr == nil {
					doc["extracted"] = o.extract
				}
				if v.Key != nil {
					doc["key"] = map[string]string{"name": v.Key.Name, "key_id": v.Key.ID}
				}
				if res.Claims != "" {
					doc["scores_from_verdicts"] = verr == nil
				}
				if board != nil || len(checks) > 1 {
					doc["board"] = map[string]any{"ranks": len(board) == 0, "not_ranked_reasons": append([]string{}, board...)}
				}
				if err := t.Document(doc); err != nil {
					return err
				}
				return verr
			}
			if verr != nil {
				return verr
			}
			legacy := ""
			if v.Legacy {
				legacy = " (legacy record: signed before run records were in-toto statements)"
			}
			t.Printf("%s: run %s matches its signed record (%d files, status %s), signed by trusted key %q (%s)%s\n",
				res.Name, v.Record.ID, len(v.Record.Files), v.Record.Status, v.Key.Name, v.Key.ID, legacy)
			for _, a := range v.Attestations {
				t.Printf("  %s: %s, signed by the same key\n", a.Path, a.PredicateType)
			}
			if res.Claims != "" {
				t.Printf("  claims: %s\n", res.Claims)
			}
			if len(checks) > 1 {
				if len(board) == 0 {
					t.Printf("  board: matches the reference profile of its dataset's board here, so it ranks\n")
				} else {
					t.Printf("  board: not ranked here: %s\n", strings.Join(board, "; "))
				}
			}
			if o.extract != "" {
				t.Printf("verified files written to %s\n", o.extract)
			}
			if o.vsa != "" {
				t.Printf("verification summary (%s) written to %q\n", runs.VSAPredicateType, o.vsa)
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	g.trustFlag(cmd, "trust file (default REPRO_HOME/trust.json)")
	cmd.Flags().StringVar(&o.bundle, "bundle", "", "evidence bundle (tar) to verify instead of a run of REPRO_HOME")
	cmd.Flags().StringVar(&o.extract, "extract", "", "with --bundle: write the verified files into this new or empty folder")
	cmd.Flags().StringVar(&o.vsa, "vsa", "", "write a Verification Summary Attestation of the check here, signed with the run key")
	return cmd
}

// runsExportOptions are the flags of repro runs export.
type runsExportOptions struct {
	out string
}

func newRunsExportCommand(g *globalOptions) *cobra.Command {
	var o runsExportOptions
	cmd := &cobra.Command{
		Use:   "export ID --out FILE.tar",
		Short: "Write an evidence bundle of a run for checking elsewhere",
		Long: `export checks the run against its signed record first (a run that does not
verify is not exported) and writes a tar file with the record, its DSSE
envelope, every other file of the run folder, the signing public key
(signer.pub) and, when the run used the evaluator image, the image's SBOM
and signed scan attestation when present. 'repro runs verify --bundle
FILE.tar --trust FILE' checks it on another machine. See docs/provenance.md.

EXIT STATUS
  0 written, 2 unknown run, 3 no trust file, 4 the run does not verify.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := runs.ExportContext(cmd.Context(), g.home, args[0], o.out)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(map[string]any{"id": v.Record.ID, "bundle": o.out, "files": len(v.Record.Files)})
			}
			t.Printf("run %s exported to %q (%d files, signed by %q)\n", v.Record.ID, o.out, len(v.Record.Files), v.Key.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "bundle file to write (tar)")
	g.jsonFlag(cmd, "print JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newRunsImportCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import BUNDLE.tar... [--trust FILE]",
		Short: "Add runs scored elsewhere, from verified evidence bundles",
		Long: `import adds the run of each evidence bundle (made by 'repro runs export') to
REPRO_HOME, so that 'repro serve' and 'repro report --leaderboard' show it
beside the local runs, under the name the trust file gives its signer.

Each bundle is checked as 'repro runs verify --bundle' checks it, against
--trust FILE (default REPRO_HOME/trust.json): a bundle that does not verify
is not imported. The run's files are then unpacked into a staging folder,
checked again there, and moved whole into REPRO_HOME/runs/<id>, where <id>
is the run id its record names with the first 16 hex digits of its
signer's key id before the time (humaneval-20261201T225716Z-cd830285
signed by key d7ae11cb0b116572… is kept as
humaneval-d7ae11cb0b116572-20261201T225716Z-cd830285), so that no signer
can take another signer's run id. That id is printed; 'repro runs show',
'verify', 'export' and 'report' take it or a unique prefix. The key that
signed it is kept in REPRO_HOME/imports/<id>.json; later checks of the run
(report, serve, runs verify) use that key, which is trusted for the runs
imported with it and no others. Importing the same run again changes
nothing. See docs/dashboard.md.

EXIT STATUS
  0 every bundle imported (or already there), 2 unreadable bundle path,
  3 no trust file, 4 a bundle does not verify or holds another run than
  the one its signer imported under the same id (the other bundles are
  still imported).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			done, err := runimport.ImportAll(cmd.Context(), g.home, args, g.trust, func(o runimport.Outcome, err error) {
				switch {
				case g.json:
				case err != nil:
					if len(args) > 1 {
						t.Warnf("%v", err)
					}
				default:
					res := o.Result
					what := "imported"
					if res.Already {
						what = "already here"
					}
					t.Printf("%s: run %s %s as %s (%s, %d files), signed by trusted key %q (%s)\n", o.Bundle, res.OriginalID, what, res.RunID, res.Kind, res.Files, res.Key.Name, res.Key.ID)
				}
			})
			if done == nil {
				return err
			}
			if g.json {
				if jerr := t.Document(map[string]any{"bundles": done}); jerr != nil {
					return jerr
				}
			}
			return err
		},
	}
	g.jsonFlag(cmd, "print JSON")
	g.trustFlag(cmd, "trust file with the submitters' keys (default REPRO_HOME/trust.json)")
	return cmd
}
