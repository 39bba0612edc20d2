package dashboard

import (
	"log"
	"net"
)

// Open makes the dashboard of home ready to serve on addr: it listens
// there (Listen, with its checks and errors) and, where the address is
// not loopback, makes a fresh access token that every request must carry.
// It returns the server, its listener (for Serve) and the URL to open,
// with the token where there is one. logger gets the server's errors.
func Open(home, addr string, allowRemote bool, logger *log.Logger) (*Server, net.Listener, string, error) {
	l, loopback, err := Listen(addr, allowRemote)
	if err != nil {
		return nil, nil, "", err
	}
	s := &Server{Home: home, Loopback: loopback, Log: logger}
	url := "http://" + displayAddr(l.Addr(), addr) + "/"
	if !loopback {
		if s.Token, err = NewToken(); err != nil {
			l.Close()
			return nil, nil, "", err
		}
		url += "?token=" + s.Token
	}
	return s, l, url, nil
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
