package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/reprolab/repro/internal/safefile"
)

// The container's cgroup as the host sees it. Under runc the container's
// processes run in it; under runsc gVisor's sandbox, its gofer and the
// processes that run the sandbox's code do, so every CPU cycle and every
// page of any process of the container is charged there, whatever the
// processes inside do (fork, exit unwaited, hide from /proc).

// liveCgroup is the container's cgroup: the files the host reads.
type liveCgroup struct {
	cpu    string // cpuacct.usage (v1, nanoseconds) or cpu.stat (v2, usage_usec)
	v2     bool
	memory string // memory.oom_control (v1) or memory.events (v2), each with an oom_kill line

	mu   sync.Mutex
	cpuF *os.File
	buf  []byte // usage's read buffer, kept: the host reads it at every frame
}

// cgroupRoot is where the host's cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// findCgroup finds the cgroup of the process pid (the container's init, as
// the engine reports it) from /proc/<pid>/cgroup: the v1 cpuacct and memory
// hierarchies if the host has them, else the v2 one.
func findCgroup(pid int) (*liveCgroup, error) {
	raw, err := safefile.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid), 64<<10)
	if err != nil {
		return nil, err
	}
	var cpuacct, memory, unified string
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || strings.Contains(parts[2], "..") {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "cpuacct":
				cpuacct = parts[2]
			case "memory":
				memory = parts[2]
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	if cpuacct != "" && memory != "" {
		for _, dir := range []string{"cpuacct", "cpu,cpuacct"} {
			p := filepath.Join(cgroupRoot, dir, cpuacct, "cpuacct.usage")
			if _, err := os.Stat(p); err == nil {
				return &liveCgroup{cpu: p, memory: filepath.Join(cgroupRoot, "memory", memory, "memory.oom_control")}, nil
			}
		}
	}
	if unified != "" && unified != "/" {
		p := filepath.Join(cgroupRoot, unified, "cpu.stat")
		if _, err := os.Stat(p); err == nil {
			return &liveCgroup{cpu: p, v2: true, memory: filepath.Join(cgroupRoot, unified, "memory.events")}, nil
		}
	}
	return nil, fmt.Errorf("no cpuacct or cgroup v2 hierarchy of process %d under %s", pid, cgroupRoot)
}

// usage reads the cgroup's CPU usage.
func (g *liveCgroup) usage() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cpuF == nil {
		f, err := os.Open(g.cpu)
		if err != nil {
			return 0, err
		}
		g.cpuF = f
	}
	if g.buf == nil {
		g.buf = make([]byte, 4096)
	}
	buf := g.buf
	n, err := g.cpuF.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0, err
	}
	buf = buf[:n]
	if !g.v2 {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(buf)), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s: not a count: %q", g.cpu, clipBytes(buf))
		}
		return time.Duration(v), nil
	}
	v, err := fieldOf(buf, "usage_usec")
	if err != nil {
		return 0, fmt.Errorf("%s: %v", g.cpu, err)
	}
	return time.Duration(v) * time.Microsecond, nil
}

// oomKills reads how many processes the cgroup's OOM killer killed.
func (g *liveCgroup) oomKills() (int64, error) {
	b, err := safefile.ReadFile(g.memory, 4096)
	if err != nil {
		return 0, err
	}
	v, err := fieldOf(b, "oom_kill")
	if err != nil {
		return 0, fmt.Errorf("%s: %v", g.memory, err)
	}
	return v, nil
}

func (g *liveCgroup) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cpuF != nil {
		g.cpuF.Close()
		g.cpuF = nil
	}
}

// fieldOf returns the value of the "key value" line of a cgroup file.
func fieldOf(b []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s is not a count: %q", key, v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no %s line", key)
}

func clipBytes(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// cgroupOf finds the running container's cgroup on the host.
func (e *Engine) cgroupOf(ctx context.Context, id string) (*liveCgroup, error) {
	ins, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	st := ins.Container.State
	if st == nil || !st.Running || st.Pid <= 0 {
		return nil, errors.New("the container is not running")
	}
	return findCgroup(st.Pid)
}

// CPUUsage returns the CPU time the container's cgroup has used so far,
// read by the host from the cgroup file system (see liveCgroup): no process
// of the container can hide CPU time from it. Only differences mean
// anything. It fails when the host cannot read the cgroup (repro itself in
// another cgroup namespace, say); the caller then fails closed.
func (c *Container) CPUUsage() (time.Duration, error) {
	if c.cgroup == nil {
		return 0, fmt.Errorf("the container's cgroup is not readable on this host: %v", c.cgroupErr)
	}
	return c.cgroup.usage()
}
