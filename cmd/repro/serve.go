package main

import (
	"log"
	"net"

	"github.com/reprolab/repro/internal/dashboard"
	"github.com/spf13/cobra"
)

func init() { register(newServeCommand) }

func newServeCommand(g *globalOptions) *cobra.Command {
	var addr string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a local, read-only dashboard of the runs",
		Long: `serve shows the runs of REPRO_HOME in a browser: the run list (filter by
kind, dataset and status), a page per run (its report, checked against its
signed record as ` + "`repro report`" + ` does) and a compare page for two runs (as
` + "`repro runs diff`" + ` prints it). Pages need no network and no JavaScript; the
server changes nothing and answers only GET and HEAD.

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
			home := g.home
			l, loopback, err := dashboard.Listen(addr, allowRemote)
			if err != nil {
				return err
			}
			s := &dashboard.Server{Home: home, Loopback: loopback, Log: log.New(t.Human(), "repro serve: ", 0)}
			url := "http://" + displayAddr(l.Addr(), addr) + "/"
			if !loopback {
				if s.Token, err = dashboard.NewToken(); err != nil {
					l.Close()
					return err
				}
				url += "?token=" + s.Token
			}
			t.Printf("dashboard of %s at %s (read-only; Ctrl-C stops it)\n", home, url)
			return s.Serve(cmd.Context(), l)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", dashboard.DefaultAddr, "host:port to listen on")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --addr (a token is then required)")
	return cmd
}

// displayAddr is the address to print: the listener's, with the host as
// given when it was a name or an unspecified address.
func displayAddr(got net.Addr, asked string) string {
	host, _, _ := net.SplitHostPort(asked)
	gotHost, port, _ := net.SplitHostPort(got.String())
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if gotIP := net.ParseIP(gotHost); gotIP != nil && !gotIP.IsUnspecified() {
			host = gotHost
		} else {
			host = "HOST"
		}
	}
	return net.JoinHostPort(host, port)
}
