package main

import (
	"fmt"
	"time"

	"github.com/reprolab/repro/internal/catalog"
	"github.com/reprolab/repro/internal/store"
	"github.com/reprolab/repro/internal/ui"
	"github.com/spf13/cobra"
)

func init() {
	register(newFetchCommand)
	register(newVerifyCommand)
}

// fetchOptions are the flags of repro fetch.
type fetchOptions struct {
	from     string
	mirrors  []string
	minSpeed int64
	deadline time.Duration
}

func newFetchCommand(g *globalOptions) *cobra.Command {
	var o fetchOptions
	cmd := &cobra.Command{
		Use:   "fetch ID...",
		Short: "Download catalog assets into the store and verify them",
		Long: `fetch downloads each catalog asset (several at once), resuming broken
transfers with Range requests, and stores it only if its size and SHA-256 match
the compiled-in pin. Mirrors (--mirror, or REPRO_MIRRORS separated by spaces or
commas) are tried first as MIRROR/sha256/<hex> and MIRROR/<filename>; since
bytes must match the pin, a mirror cannot inject anything and may be plain
HTTP. --from imports a file you already have (one id), verified the same way.

A transfer that stalls (no byte for 30 s) or runs below --min-speed over a
minute is aborted and resumed, three times per source, then the next source
is tried; --deadline bounds the whole download of each id. The message says
which of these ended a download.

The store lives in REPRO_HOME (default $XDG_DATA_HOME/repro, else
~/.local/share/repro).

EXIT STATUS
  0 all stored, 1 a download failed, 2 usage, 3 unpinned or external entry,
  4 bytes did not match the pin.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			t := g.term
			entries, err := store.Get(cmd.Context(), g.home, catalog.Default(), ids, store.GetOptions{
				From: o.from, Mirrors: o.mirrors, MinSpeed: o.minSpeed, Deadline: o.deadline, Progress: storeProgress(t),
			})
			if err != nil {
				return err
			}
			if g.json {
				return t.Message(ui.MessageSummary, map[string]any{"stored": ids})
			}
			for i, e := range entries {
				ui.Fprintf(t.Human(), "%s  %s verified\n", e.SHA256.Hex(), ids[i])
			}
			return nil
		},
	}
	g.jsonFlag(cmd, "print JSON lines (progress events, then a summary)")
	cmd.Flags().StringVar(&o.from, "from", "", "import this local file instead of downloading")
	cmd.Flags().StringArrayVar(&o.mirrors, "mirror", nil, "mirror base URL tried before upstream (repeatable; default from REPRO_MIRRORS)")
	cmd.Flags().Int64Var(&o.minSpeed, "min-speed", store.DefaultMinSpeed, "abort and resume a transfer slower than this many bytes/s over a minute (0: no floor)")
	cmd.Flags().DurationVar(&o.deadline, "deadline", 0, "give up on an id not downloaded within this time, every source and retry included (0: none)")
	return cmd
}

func newVerifyCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [ID...]",
		Short: "Re-hash stored assets; quarantine and report corrupt ones",
		Long: `verify re-hashes the stored blobs of the given ids (all stored ids when none
is given) against the compiled-in pins. A corrupt blob is moved to
REPRO_HOME/quarantine and reported, never silently deleted or used.

EXIT STATUS
  0 all intact, 3 an id is not stored, 4 a blob was corrupt (quarantined).`,
		RunE: func(cmd *cobra.Command, ids []string) error {
			t := g.term
			rep, verr := store.VerifyStored(cmd.Context(), g.home, catalog.Default(), ids)
			if rep == nil {
				return verr
			}
			if g.json {
				if err := t.Document(rep); err != nil {
					return err
				}
				return verr
			}
			for _, r := range rep.Results {
				if r.OK {
					ui.Fprintf(t.Human(), "ok       %s  %s\n", r.SHA256.Hex(), r.ID)
				} else {
					ui.Fprintf(t.Human(), "CORRUPT  %s  %s: %s (moved to %s)\n", r.SHA256.Hex(), r.ID, r.Error, r.Quarantined)
				}
			}
			if len(rep.Results) == 0 && verr == nil {
				t.Notef("repro: the store holds no assets yet")
			}
			return verr
		},
	}
	g.jsonFlag(cmd, "print JSON")
	return cmd
}

// storeProgress returns t's receiver of a store's events: under --json a
// "progress" message per event on stdout, on a terminal one status line
// per asset, and nothing otherwise (the command reports failures itself).
func storeProgress(t *ui.Terminal) func(store.Event) {
	return func(e store.Event) {
		if t.JSON() {
			t.Message(ui.MessageProgress, e)
			return
		}
		var line string
		done := false
		switch e.Phase {
		case store.PhaseWait:
			line = "waiting for another repro process"
		case store.PhaseStart, store.PhaseProgress:
			line = ui.Bar(e.Bytes, e.Total)
		case store.PhaseRetry:
			line, done = "retrying: "+e.Error, true
		case store.PhaseStored:
			line, done = ui.Bar(e.Total, e.Total)+" verified", true
		case store.PhaseCached:
			line, done = "already stored, verified", true
		case store.PhaseFailed:
			line, done = "failed", true
		default:
			return
		}
		line = fmt.Sprintf("%-28s %s", e.ID, line)
		if done {
			t.StatusDone(line)
		} else {
			t.Status(line)
		}
	}
}
