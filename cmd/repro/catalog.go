package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() { register(newCatalogCommand) }

func newCatalogCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List, show and review the compiled-in asset catalog",
		Long: `The catalog is compiled into repro: every upstream file with its URLs, size,
SHA-256 and license, and every source tree with its tree digest. No flag,
environment variable or file can replace a pin at run time; a pin changes only
through a reviewed commit (see "repro catalog review").`,
	}
	cmd.AddCommand(newCatalogListCommand(g), newCatalogShowCommand(g), newCatalogReviewCommand(g), newCatalogDigestTreeCommand(g))
	return cmd
}

func newCatalogListCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List catalog entries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeCatalogList(g.term, catalog.Default().Entries())
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return noHome(cmd)
}

// writeCatalogList prints entries: one JSON document under --json, else
// a table with each pin shortened.
func writeCatalogList(t *ui.Terminal, entries []catalog.Entry) error {
	if t.JSON() {
		return t.Document(map[string]any{"entries": entries})
	}
	table := [][]string{{"ID", "KIND", "PIN", "SIZE", "SHA256"}}
	for _, e := range entries {
		size, sum := "-", "-"
		if e.Size > 0 {
			size = fmt.Sprint(e.Size)
		}
		if e.SHA256 != nil {
			sum = e.SHA256.Hex()[:16] + "…"
		} else if e.TreeDigest != nil {
			sum = "tree:" + e.TreeDigest.Hex()[:11] + "…"
		}
		table = append(table, []string{e.ID, string(e.Kind), string(e.Pin), size, sum})
	}
	return t.Table(table)
}

func newCatalogShowCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one catalog entry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := catalog.Default().Lookup(args[0])
			if err != nil {
				return err
			}
			return writeCatalogEntry(g.term, e)
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return noHome(cmd)
}

// writeCatalogEntry prints e: one JSON document under --json, else one
// "field: value" line per field it has.
func writeCatalogEntry(t *ui.Terminal, e catalog.Entry) error {
	if t.JSON() {
		return t.Document(e)
	}
	w := t.Human()
	ui.Fprintf(w, "id:          %s\nkind:        %s\npin:         %s\ndescription: %s\nlicense:     %s\n", e.ID, e.Kind, e.Pin, e.Description, e.License)
	if e.Filename != "" {
		ui.Fprintf(w, "filename:    %s\n", e.Filename)
	}
	if e.Size > 0 {
		ui.Fprintf(w, "size:        %d\n", e.Size)
	}
	if e.SHA256 != nil {
		ui.Fprintf(w, "sha256:      %s\n", e.SHA256.Hex())
	}
	if e.TreeDigest != nil {
		ui.Fprintf(w, "tree digest: %s\n", e.TreeDigest.Hex())
	}
	for _, u := range e.URLs {
		ui.Fprintf(w, "url:         %s\n", u)
	}
	keys := make([]string, 0, len(e.Facts))
	for k := range e.Facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ui.Fprintf(w, "fact:        %s = %s\n", k, e.Facts[k])
	}
	if e.Notes != "" {
		ui.Fprintf(w, "notes:       %s\n", e.Notes)
	}
	return nil
}

// catalogReviewOptions are the flags of repro catalog review.
type catalogReviewOptions struct {
	file string
}

func newCatalogReviewCommand(g *globalOptions) *cobra.Command {
	var o catalogReviewOptions
	cmd := &cobra.Command{
		Use:   "review ID --file FILE",
		Short: "Print the pinned catalog entry a reviewer would commit for a local file",
		Long: `review computes size and SHA-256 of a local copy of an entry's upstream file
and prints the catalog entry, pinned to those bytes, as JSON. A reviewer who has
checked the file commits that entry to internal/catalog/entries/. It changes
nothing at run time: repro only ever uses the pins compiled into it.

EXIT STATUS
  0 printed, 2 unknown id or bad file, 3 file missing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.file == "" {
				return exitcode.Errorf(exitcode.Usage, "review needs --file FILE, a local copy of the upstream bytes")
			}
			e, err := catalog.Default().Review(args[0], o.file, time.Now())
			if err != nil {
				return err
			}
			t := g.term
			if err := t.Document(e); err != nil {
				return err
			}
			t.Notef("repro: review only prints; commit this entry to internal/catalog/entries/ after checking the file (nothing changed at run time)")
			return nil
		},
	}
	cmd.Flags().StringVar(&o.file, "file", "", "local copy of the upstream file")
	return noHome(cmd)
}

// catalogDigestTreeOptions are the flags of repro catalog digest-tree.
type catalogDigestTreeOptions struct {
	manifest bool
}

func newCatalogDigestTreeCommand(g *globalOptions) *cobra.Command {
	var o catalogDigestTreeOptions
	cmd := &cobra.Command{
		Use:   "digest-tree DIR",
		Short: "Compute the tree digest of a source folder",
		Long: `digest-tree prints the SHA-256 of the canonical manifest of DIR: every regular
file and symbolic link (a .git folder at the top is left out), sorted by path,
with its mode and SHA-256. Source trees are pinned in the catalog by this
digest. --manifest prints the manifest itself.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := catalog.DigestTree(args[0])
			if err != nil {
				return err
			}
			t := g.term
			switch {
			case g.json:
				return t.Document(map[string]any{"tree_digest": m.Digest().Hex(), "files": len(m)})
			case o.manifest:
				_, err := t.Stdout().Write(m.Marshal())
				return err
			}
			ui.Fprintf(t.Human(), "%s  %q (%d files)\n", m.Digest().Hex(), strings.TrimRight(args[0], "/"), len(m))
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON")
	cmd.Flags().BoolVar(&o.manifest, "manifest", false, "print the canonical manifest")
	return noHome(cmd)
}
