package runs

import (
	"bufio"
	"os"
	"runtime"

	"strings"

	"golang.org/x/sys/unix"
)

// HostFacts describes this machine for a run record.
func HostFacts() Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), CPUModel: CPUModel()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return h
}

// CPUModel returns the CPU model name from /proc/cpuinfo ("unknown" if it
// cannot be read). Timing caches key on it.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
