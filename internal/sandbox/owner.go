package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// LabelOwnerProcess names the process instance that created a container
// or results volume, so that another repro process on the same host can
// tell, soundly, that its creator is gone and remove it before its
// deadline (see [Engine.Sweep]). Its value is
//
//	BOOT_ID/PID_NS/TIME_NS/PID/START
//
// BOOT_ID is the host's /proc/sys/kernel/random/boot_id (a new one at every
// boot); PID_NS and TIME_NS are the inode numbers of the creator's pid and
// time namespaces (/proc/self/ns/pid, /proc/self/ns/time; 0 where the
// kernel has no time namespaces), within which PID and START mean
// something; PID is its process ID and START its start time in clock ticks
// after boot (field 22 of /proc/PID/stat). A pid alone is reused; the pid
// and its start time, on the same boot and in the same namespaces, name
// one process.
const LabelOwnerProcess = "org.reprolab.repro.owner-process"

// maxPid is the kernel's largest pid_max (PID_MAX_LIMIT, 2^22).
const maxPid = 1 << 22

// processInstance identifies one process on one boot of one host.
type processInstance struct {
	boot          string // boot id, 36 characters
	pidNS, timeNS uint64
	pid           int
	start         uint64
}

func (p processInstance) String() string {
	return fmt.Sprintf("%s/%d/%d/%d/%d", p.boot, p.pidNS, p.timeNS, p.pid, p.start)
}

// readBounded reads at most limit bytes of the file at path; a longer file
// is an error.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: longer than %d bytes", path, limit)
	}
	return b, nil
}

// bootID reads this host's boot id.
func bootID() (string, error) {
	b, err := readBounded("/proc/sys/kernel/random/boot_id", 64)
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(b), "\n")
	if !validBootID(id) {
		return "", fmt.Errorf("boot id %q: not a UUID", id)
	}
	return id, nil
}

// validBootID reports whether s is a lower-case UUID as the kernel writes
// it: 8-4-4-4-12 hex digits.
func validBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// nsInode reads the inode number of one of this process's namespaces from
// the link /proc/self/ns/KIND ("pid:[4026531836]").
func nsInode(kind string) (uint64, error) {
	l, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		return 0, err
	}
	rest, ok := strings.CutPrefix(l, kind+":[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return 0, fmt.Errorf("namespace link %q", l)
	}
	return parseDecimal(strings.TrimSuffix(rest, "]"))
}

// parseDecimal parses a canonical unsigned decimal: digits only, no sign,
// no leading zero (but "0"), at most 20 digits.
func parseDecimal(s string) (uint64, error) {
	if s == "" || len(s) > 20 || s[0] == '0' && len(s) > 1 {
		return 0, fmt.Errorf("%q: not a canonical decimal", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q: not a canonical decimal", s)
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// procStat is what repro reads of /proc/PID/stat: the process's state and
// its start time in clock ticks after boot.
type procStat struct {
	state byte
	start uint64
}

// errNoProcess means no process has the pid (in this pid namespace).
var errNoProcess = errors.New("no such process")

// readProcStat reads /proc/PID/stat. The command name (field 2) may hold
// any bytes, spaces and parentheses included, so the fields are counted
// from the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := readBounded("/proc/"+strconv.Itoa(pid)+"/stat", 4096)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat %.40q: no command name", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); start time is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat %.40q: too few fields", b)
	}
	start, err := parseDecimal(f[19])
	if err != nil {
		return procStat{}, fmt.Errorf("stat start time: %w", err)
	}
	return procStat{state: f[0][0], start: start}, nil
}

// self is this process's instance, read once; an error where the host does
// not say (no /proc): then containers carry no LabelOwnerProcess and no
// process reaps them before their deadline.
var self = sync.OnceValues(func() (processInstance, error) {
	boot, err := bootID()
	if err != nil {
		return processInstance{}, err
	}
	pidNS, err := nsInode("pid")
	if err != nil {
		return processInstance{}, err
	}
	timeNS, err := nsInode("time")
	if errors.Is(err, os.ErrNotExist) {
		timeNS, err = 0, nil // a kernel without time namespaces
	}
	if err != nil {
		return processInstance{}, err
	}
	// /proc must be of this process's pid namespace (a process unshared
	// into a new one without mounting its own /proc sees another's): the
	// pid its /proc/self/stat names is the one the kernel gives us.
	pid := os.Getpid()
	b, err := readBounded("/proc/self/stat", 4096)
	if err != nil {
		return processInstance{}, err
	}
	if head, _, _ := strings.Cut(string(b), " "); head != strconv.Itoa(pid) {
		return processInstance{}, fmt.Errorf("/proc is not of this process's pid namespace: it names pid %.20q, not %d", head, pid)
	}
	st, err := parseProcStat(b)
	if err != nil {
		return processInstance{}, err
	}
	return processInstance{boot: boot, pidNS: pidNS, timeNS: timeNS, pid: pid, start: st.start}, nil
})

// parseOwner parses a LabelOwnerProcess value strictly: anything but the
// exact form is an error.
func parseOwner(v string) (processInstance, error) {
	if len(v) > 160 {
		return processInstance{}, fmt.Errorf("owner label of %d bytes", len(v))
	}
	parts := strings.Split(v, "/")
	if len(parts) != 5 || !validBootID(parts[0]) {
		return processInstance{}, fmt.Errorf("owner label %q: want BOOT_ID/PID_NS/TIME_NS/PID/START", v)
	}
	var n [4]uint64
	for i, s := range parts[1:] {
		x, err := parseDecimal(s)
		if err != nil {
			return processInstance{}, fmt.Errorf("owner label %q: %w", v, err)
		}
		n[i] = x
	}
	if n[2] < 1 || n[2] > maxPid {
		return processInstance{}, fmt.Errorf("owner label %q: pid out of range", v)
	}
	return processInstance{boot: parts[0], pidNS: n[0], timeNS: n[1], pid: int(n[2]), start: n[3]}, nil
}

// orphanReason says why the process that labels name is known to be gone
// ("" when it is not known to be): the labels name, strictly, a process
// of this host's boot and this process's namespaces, with the same pid in
// LabelOwner, and that pid now names no process, a process that has
// exited (a zombie), or a process started at another time (the pid was
// reused). A missing or malformed label, another boot (another host on a
// shared engine, or this host before a reboot, whose containers the
// engine's restart policy does not bring back), other namespaces, or a
// process whose state cannot be read all leave the object to its deadline.
func orphanReason(labels map[string]string) string {
	me, err := self()
	if err != nil {
		return ""
	}
	v, ok := labels[LabelOwnerProcess]
	if !ok {
		return ""
	}
	o, err := parseOwner(v)
	if err != nil || labels[LabelOwner] != strconv.Itoa(o.pid) {
		return ""
	}
	if o.boot != me.boot || o.pidNS != me.pidNS || o.timeNS != me.timeNS {
		return ""
	}
	if o.pid == me.pid {
		if o.start == me.start {
			return ""
		}
		return fmt.Sprintf("pid %d now names another process", o.pid)
	}
	st, err := readProcStat(o.pid)
	switch {
	case errors.Is(err, errNoProcess):
		// hidepid may hide another user's live process from /proc: only
		// the kernel's ESRCH says there is none.
		if syscall.Kill(o.pid, 0) == syscall.ESRCH {
			return fmt.Sprintf("repro process %d has exited", o.pid)
		}
		return ""
	case err != nil:
		return ""
	case st.start != o.start:
		return fmt.Sprintf("pid %d now names another process", o.pid)
	case st.state == 'Z' || st.state == 'X':
		return fmt.Sprintf("repro process %d has exited", o.pid)
	}
	return ""
}
