package main

import (
	"strings"
	"time"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() { register(newKeysCommand) }

func newKeysCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List, export and rotate signing keys, or make a standalone key",
		Long: `Run records are signed with the run key of REPRO_HOME (keys/run-signing.key,
an ed25519 key as PKCS #8 PEM, mode 0600; a key file readable by others is
refused). The trust file (REPRO_HOME/trust.json) lists the public keys
'repro runs verify' accepts, each with a name, purposes and a validity
window; the first signing in a REPRO_HOME makes it, trusting the local key.
Key ids are the hex SHA-256 of the DER SubjectPublicKeyInfo. Private keys are
never printed. See docs/provenance.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.Errorf(exitcode.Usage, "keys needs a subcommand: list, export, rotate or new")
		},
	}
	cmd.AddCommand(newKeysListCommand(g), newKeysExportCommand(g), newKeysRotateCommand(g), newKeysNewCommand(g))
	return noHome(cmd)
}

func newKeysListCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the keys of the trust file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := runs.ListKeys(g.home, g.trust)
			if err != nil {
				return err
			}
			return writeKeyList(g.term, ks)
		},
	}
	g.jsonFlag(cmd, "print JSON")
	g.trustFlag(cmd, "trust file (default REPRO_HOME/trust.json)")
	return cmd
}

// writeKeyList prints ks: one JSON document under --json, else a table.
func writeKeyList(t *ui.Terminal, ks []runs.ListedKey) error {
	if t.JSON() {
		return t.Document(map[string]any{"keys": ks})
	}
	table := [][]string{{"NAME", "KEY ID", "PURPOSES", "NOT BEFORE", "NOT AFTER", "LOCAL"}}
	for _, k := range ks {
		var ps []string
		for _, p := range k.Purposes {
			ps = append(ps, string(p))
		}
		mark := ""
		if k.Local {
			mark = "yes"
		}
		table = append(table, []string{k.Name, k.ID, strings.Join(ps, ","), timeOrDash(k.NotBefore), timeOrDash(k.NotAfter), mark})
	}
	return t.Table(table)
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// keysExportOptions are the flags of repro keys export.
type keysExportOptions struct {
	trustFile bool
}

func newKeysExportCommand(g *globalOptions) *cobra.Command {
	var o keysExportOptions
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print the public run key (PEM SubjectPublicKeyInfo)",
		Long: `export prints the public half of the run key of REPRO_HOME as a PEM
SubjectPublicKeyInfo, the form OpenSSL and Python's cryptography read
(the key is made on first use). --trust-file prints instead a trust file
that trusts this key for run records, with the window the local trust file
gives it, for whoever checks this REPRO_HOME's runs elsewhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := runs.ExportKey(g.home, o.trustFile)
			if err != nil {
				return err
			}
			t := g.term
			switch {
			case k.Trust != nil:
				return t.Document(k.Trust)
			case g.json:
				return t.Document(map[string]string{"key_id": k.ID, "public_key": string(k.PEM)})
			}
			_, err = t.Stdout().Write(k.PEM)
			return err
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().BoolVar(&o.trustFile, "trust-file", false, "print a trust file that trusts this key for run records")
	return cmd
}

func newKeysRotateCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the run key; records the old key signed keep verifying",
		Long: `rotate makes a new run key. In REPRO_HOME/trust.json the old key's window
closes now and the new key is trusted from now, so records signed before
the rotation keep verifying with the old public key. The old private key
is replaced, not kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			oldID, newID, err := runs.RotateKey(g.home, time.Now())
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(map[string]string{"old_key_id": oldID, "new_key_id": newID})
			}
			ui.Fprintf(t.Human(), "run key rotated: %s retired (still trusted for what it signed before now), %s signs from now\n", oldID, newID)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return cmd
}

// keysNewOptions are the flags of repro keys new.
type keysNewOptions struct {
	out string
}

func newKeysNewCommand(g *globalOptions) *cobra.Command {
	var o keysNewOptions
	cmd := &cobra.Command{
		Use:   "new --out FILE",
		Short: "Make a standalone ed25519 key (e.g. an image-signing key)",
		Long: `new writes a new ed25519 private key to FILE (PKCS #8 PEM, mode 0600; an
existing file is never replaced) and its public key to FILE.pub (PEM
SubjectPublicKeyInfo), and prints the key id. Add the public key to a trust
file with the purposes it signs for.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, pubPath, err := runs.NewStandaloneKey(o.out)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(map[string]string{"key_id": id, "private_key": o.out, "public_key": pubPath})
			}
			ui.Fprintf(t.Human(), "key %s: private key %q (mode 0600), public key %q\n", id, o.out, pubPath)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().StringVar(&o.out, "out", "", "private key file to write")
	_ = cmd.MarkFlagRequired("out")
	return noHome(cmd)
}
