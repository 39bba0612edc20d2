package runstest

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/reprolab/repro/internal/runs"
	"golang.org/x/sys/unix"
)

// RecordReads runs f and counts, per run id, the opens of each run's
// record.json under home meanwhile, by any code in the process, as the
// kernel reports them (inotify). Opens and closes are both watched so
// that two opens in a row are never merged into one event. A run whose
// record was not opened has no count.
func RecordReads(t testing.TB, home string, ids []string, f func()) map[string]int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	defer unix.Close(fd)
	byWatch := map[uint32]string{}
	for _, id := range ids {
		wd, err := unix.InotifyAddWatch(fd, runs.RecordPath(home, id), unix.IN_OPEN|unix.IN_CLOSE_NOWRITE|unix.IN_CLOSE_WRITE)
		if err != nil {
			t.Fatalf("watch the record of %s: %v", id, err)
		}
		byWatch[uint32(wd)] = id
	}
	f()
	reads := map[string]int{}
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return reads
		}
		if err != nil {
			t.Fatalf("read inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := binary.NativeEndian.Uint32(buf[off:])
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			if mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflowed: reads were lost")
			}
			if mask&unix.IN_OPEN != 0 {
				reads[byWatch[wd]]++
			}
			off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
		}
	}
}

// Each is the count n for every id of ids, in RecordReads's form (no
// entries when n is 0).
func Each(ids []string, n int) map[string]int {
	m := map[string]int{}
	for _, id := range ids {
		if n > 0 {
			m[id] = n
		}
	}
	return m
}
