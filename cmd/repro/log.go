package main

import (
	"github.com/reprolab/repro/internal/boardlog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/spf13/cobra"
)

func init() { register(newLogCommand) }

func newLogCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Check a leaderboard's append-only history (its board log)",
		Long: `Every run a leaderboard accepts is appended to the board's log, a
transparency log in the tiled format of Go's checksum database: the entries
are the leaves of a Merkle tree, published as tiles beside a checkpoint
(the tree's size and root hash) signed with the log key of the REPRO_HOME
that keeps the board. ` + "`repro report --leaderboard`" + ` writes the log into the
exported folder (log/), and ` + "`repro serve`" + ` serves it at /board/log/DATASET/.
See docs/dashboard.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.Errorf(exitcode.Usage, "log needs a subcommand: verify or key")
		},
	}
	cmd.AddCommand(newLogVerifyCommand(g), newLogKeyCommand(g))
	return noHome(cmd)
}

// logVerifyOptions are the flags of repro log verify.
type logVerifyOptions struct {
	key, run, since string
}

func newLogVerifyCommand(g *globalOptions) *cobra.Command {
	var o logVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify SOURCE --key KEY [--run RUN] [--since CHECKPOINT]",
		Short: "Check that a board's history is intact, holds a run and extends an older checkpoint",
		Long: `verify reads a board log from SOURCE (a folder, or an http(s) address of a
published or served board; a board's root with the log in log/ will do) and
checks, with the log's verifier key:

  - that the checkpoint is signed by that key;
  - that every entry in the data tiles is the leaf the signed tree holds at
    its place (so no entry was changed, removed, added or moved);
  - with --run RUN, that the run has an entry, with an inclusion proof;
  - with --since CHECKPOINT (a checkpoint file saved earlier, or an older
    copy of the board: a folder or address), that the log extends that
    older checkpoint, with a consistency proof. A log whose history was
    rewritten since, or that forked, fails.

--key is the log's verifier key as ` + "`repro log key`" + ` prints it where the board
is kept (name+hash+key); get it from the board's maintainer by a channel you
trust, never from the board itself. Every download is bounded (a checkpoint
16 KiB, a tile 256 hashes or 256 entries of 2 KiB).

EXIT STATUS
  0 the log checks out, 2 bad flag, 3 no --key, or SOURCE or its checkpoint
  cannot be read, 4 a check failed (bad signature, an entry or tile that does
  not match the signed tree, the run not in the log, the log not extending
  --since).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t := g.term
			rep, err := boardlog.VerifyAt(cmd.Context(), args[0], o.key, o.run, o.since)
			if err != nil {
				return err
			}
			if g.json {
				return t.Document(rep)
			}
			t.Printf("board log %q at %s: %d entries, every one matches the tree signed by %s\n", rep.Origin, rep.Source, rep.Size, rep.Key)
			t.Printf("root hash %s\n", rep.RootHash)
			for _, in := range rep.Run {
				t.Printf("run %s is entry %d (label %q, signer %s): inclusion proof checks\n", in.Entry.RunID, in.Index, in.Entry.Label, in.Entry.SignerKeyID)
			}
			if rep.Since != nil {
				t.Printf("extends the checkpoint of %d entries from %s: consistency proof checks\n", rep.Since.Size, rep.Since.From)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.key, "key", "", "the log's verifier key (name+hash+key, as `repro log key` prints it)")
	cmd.Flags().StringVar(&o.run, "run", "", "check that this run id has an entry (inclusion proof)")
	cmd.Flags().StringVar(&o.since, "since", "", "an older checkpoint (file, or board folder or address) the log must extend (consistency proof)")
	g.jsonFlag(cmd, "print JSON")
	return noHome(cmd)
}

func newLogKeyCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Print the verifier key of this REPRO_HOME's board logs",
		Long: `key prints the verifier key of the log key of REPRO_HOME
(keys/board-log.key, a note signer key of mode 0600, made on first use),
the text readers pass to ` + "`repro log verify --key`" + `. Publish it where readers
of your board can get it apart from the board itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := boardlog.LoadKey(g.home, true)
			if err != nil {
				return err
			}
			t := g.term
			if g.json {
				return t.Document(map[string]string{"verifier_key": k.VerifierKey})
			}
			t.Printf("%s\n", k.VerifierKey)
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return cmd
}
