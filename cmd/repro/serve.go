package main

import (
	"log"

	"github.com/reprolab/repro/internal/dashboard"
	"github.com/spf13/cobra"
)

func init() { register(newServeCommand) }

// serveOptions are the flags of repro serve.
type serveOptions struct {
	addr        string
	allowRemote bool
}

func newServeCommand(g *globalOptions) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a local, read-only dashboard of the runs",
		Long: `serve shows the runs of REPRO_HOME in a browser: the run list (filter by
kind, dataset and status), a page per run (its report, checked against its
signed record as ` + "`repro report`" + ` does) and a compare page for two runs (as
` + "`repro runs diff`" + ` prints it). The list comes from the run index
(REPRO_HOME/index, as ` + "`repro runs list`" + ` reads it), which the server
keeps up to date; it changes nothing else, and answers only GET and HEAD.
Pages need no network and no JavaScript.

By default it listens on ` + dashboard.DefaultAddr + ` and answers only requests
addressed to a loopback host. Any other --addr (another interface, or all of
them) is refused unless --allow-remote is given; then a random access token
is printed at start, and every request must carry it: open the printed URL
once (?token=...), which sets a cookie for the rest of the visit.

EXIT STATUS
  0 stopped by Ctrl-C or SIGTERM, 2 bad --addr (a remote one without
  --allow-remote), 3 the address cannot be listened on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := g.term
			s, l, url, err := dashboard.Open(g.home, o.addr, o.allowRemote, log.New(t.Human(), "repro serve: ", 0))
			if err != nil {
				return err
			}
			t.Printf("dashboard of %s at %s (read-only; Ctrl-C stops it)\n", g.home, url)
			return s.Serve(cmd.Context(), l)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", dashboard.DefaultAddr, "host:port to listen on")
	cmd.Flags().BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --addr (a token is then required)")
	return cmd
}
