package main

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/keys"
	"github.com/reprolab/repro/internal/runs"
	"github.com/reprolab/repro/internal/trust"
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
			t := g.term
			home := g.home
			tf, err := runs.LoadTrust(home, g.trust)
			if err != nil {
				return err
			}
			local := ""
			if pub, err := keys.LoadPublic(runs.LocalPublicKeyPath(home)); err == nil {
				local = keys.ID(pub)
			}
			type row struct {
				Name      string          `json:"name"`
				ID        string          `json:"key_id"`
				Purposes  []trust.Purpose `json:"purposes"`
				NotBefore *time.Time      `json:"not_before,omitempty"`
				NotAfter  *time.Time      `json:"not_after,omitempty"`
				Local     bool            `json:"local"`
			}
			rows := []row{}
			table := [][]string{{"NAME", "KEY ID", "PURPOSES", "NOT BEFORE", "NOT AFTER", "LOCAL"}}
			for _, k := range tf.Keys {
				rows = append(rows, row{k.Name, k.ID, k.Purposes, k.NotBefore, k.NotAfter, k.ID == local})
				var ps []string
				for _, p := range k.Purposes {
					ps = append(ps, string(p))
				}
				mark := ""
				if k.ID == local {
					mark = "yes"
				}
				table = append(table, []string{k.Name, k.ID, strings.Join(ps, ","), timeOrDash(k.NotBefore), timeOrDash(k.NotAfter), mark})
			}
			if g.json {
				return t.Document(map[string]any{"keys": rows})
			}
			return t.Table(table)
		},
	}
	g.jsonFlag(cmd, "print JSON")
	g.trustFlag(cmd, "trust file (default REPRO_HOME/trust.json)")
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newKeysExportCommand(g *globalOptions) *cobra.Command {
	var trustFile bool
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
			t := g.term
			home := g.home
			s, err := runs.LocalKey(home)
			if err != nil {
				return exitcode.New(exitcode.Precondition, err)
			}
			pub := s.PublicKey()
			if trustFile {
				entry := trust.NewKey(runs.LocalKeyName, pub, []trust.Purpose{trust.RunRecords}, nil, nil)
				if tf, err := runs.LoadTrust(home, ""); err == nil {
					for _, k := range tf.Keys {
						if k.ID == entry.ID {
							entry.Name, entry.NotBefore, entry.NotAfter = k.Name, k.NotBefore, k.NotAfter
						}
					}
				}
				return t.Document(&trust.File{Version: trust.Version, Keys: []trust.Key{entry}})
			}
			if g.json {
				return t.Document(map[string]string{"key_id": keys.ID(pub), "public_key": string(keys.MarshalPublic(pub))})
			}
			_, err = t.Stdout().Write(keys.MarshalPublic(pub))
			return err
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().BoolVar(&trustFile, "trust-file", false, "print a trust file that trusts this key for run records")
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
			t := g.term
			home := g.home
			oldID, newID, err := runs.RotateKey(home, time.Now())
			if err != nil {
				return err
			}
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

func newKeysNewCommand(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "new --out FILE",
		Short: "Make a standalone ed25519 key (e.g. an image-signing key)",
		Long: `new writes a new ed25519 private key to FILE (PKCS #8 PEM, mode 0600; an
existing file is never replaced) and its public key to FILE.pub (PEM
SubjectPublicKeyInfo), and prints the key id. Add the public key to a trust
file with the purposes it signs for.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			s, err := keys.Generate()
			if err != nil {
				return err
			}
			pubPath := out + ".pub"
			if _, err := os.Lstat(pubPath); !errors.Is(err, os.ErrNotExist) {
				return exitcode.Errorf(exitcode.Usage, "%q already exists; refusing to replace a key", pubPath)
			}
			if err := keys.WritePrivate(out, s); err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			if err := atomicfile.WriteFile(pubPath, keys.MarshalPublic(s.PublicKey()), 0o644); err != nil {
				return err
			}
			id := keys.ID(s.PublicKey())
			if g.json {
				return t.Document(map[string]string{"key_id": id, "private_key": out, "public_key": pubPath})
			}
			ui.Fprintf(t.Human(), "key %s: private key %q (mode 0600), public key %q\n", id, out, pubPath)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().StringVar(&out, "out", "", "private key file to write")
	_ = cmd.MarkFlagRequired("out")
	return noHome(cmd)
}
