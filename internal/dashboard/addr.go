package dashboard

import (
	"net"
	"net/netip"
	"strings"

	"github.com/reprolab/repro/internal/exitcode"
)

// DefaultAddr is where the dashboard listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7878"

// CheckAddr decides whether the dashboard may listen on addr (host:port):
// a loopback address (an IP literal in 127.0.0.0/8 or ::1, or
// "localhost") always; any other, including an empty host (every
// interface), only with allowRemote. It reports whether addr is loopback.
// A refused or malformed address is a usage error.
func CheckAddr(addr string, allowRemote bool) (loopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, exitcode.Errorf(exitcode.Usage, "--addr %q is not host:port: %v", addr, err)
	}
	loopback = isLoopbackHost(host)
	if !loopback && !allowRemote {
		return false, exitcode.Errorf(exitcode.Usage, "--addr %q is not a loopback address; the dashboard serves other machines only with --allow-remote (and then asks for the token it prints)", addr)
	}
	return loopback, nil
}

// isLoopbackHost reports whether host names only this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback() && ip.Zone() == ""
}
