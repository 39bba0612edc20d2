package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const testBoot = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

// TestParseOwner: only the exact BOOT_ID/PID_NS/TIME_NS/PID/START form
// names an owner; anything else is not ours to reap early.
func TestParseOwner(t *testing.T) {
	good := testBoot + "/4026531836/4026531834/1234/98765"
	o, err := parseOwner(good)
	if err != nil || o.String() != good || o.pid != 1234 || o.start != 98765 {
		t.Fatalf("parseOwner(%q) = %+v, %v", good, o, err)
	}
	for _, bad := range []string{
		"", "1234", good + "/1", strings.TrimSuffix(good, "/98765"),
		strings.ToUpper(testBoot) + "/4026531836/4026531834/1234/98765",
		"0f1e2d3c4b5a697887a5b4c3d2e1f0aa1234/4026531836/4026531834/1234/98765",
		testBoot + "/4026531836/4026531834/+1234/98765",
		testBoot + "/4026531836/4026531834/01234/98765",
		testBoot + "/4026531836/4026531834/-1/98765",
		testBoot + "/4026531836/4026531834/0/98765",
		testBoot + "/4026531836/4026531834/4194305/98765",
		testBoot + "/4026531836/4026531834/1234/ 98765",
		testBoot + "/4026531836/4026531834/1234/98765\n",
		testBoot + "/4026531836/4026531834/1234/99999999999999999999999",
		testBoot + "/4026531836//1234/98765",
	} {
		if o, err := parseOwner(bad); err == nil {
			t.Errorf("parseOwner(%q) = %+v, want an error", bad, o)
		}
	}
}

// TestParseProcStat reads the state and start time past a command name
// that holds spaces and parentheses.
func TestParseProcStat(t *testing.T) {
	line := "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777123 1000 200 18446744073709551615\n"
	st, err := parseProcStat([]byte(line))
	if err != nil || st.state != 'S' || st.start != 777123 {
		t.Fatalf("parseProcStat = %+v, %v", st, err)
	}
	for _, bad := range []string{"", "4242 (x S 1 2", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 1000"} {
		if st, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) = %+v, want an error", bad, st)
		}
	}
	me, err := self()
	if err != nil {
		t.Fatalf("this host's process instance: %v", err)
	}
	if me.pid != os.Getpid() || me.start == 0 || me.pidNS == 0 {
		t.Errorf("self() = %+v", me)
	}
}

// TestOrphanReason decides from labels alone, against this process and
// the process table: a live owner keeps its container, a gone or reused
// pid does not, and every label that is not exactly ours keeps it too.
func TestOrphanReason(t *testing.T) {
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	labels := func(p processInstance) map[string]string {
		return map[string]string{LabelOwnerProcess: p.String(), LabelOwner: strconv.Itoa(p.pid)}
	}
	if r := orphanReason(labels(me)); r != "" {
		t.Errorf("this live process is taken for gone: %s", r)
	}
	reused := me
	reused.start++
	if r := orphanReason(labels(reused)); !strings.Contains(r, "another process") {
		t.Errorf("a reused pid: %q", r)
	}
	other := reused
	other.boot = testBoot
	if r := orphanReason(labels(other)); r != "" {
		t.Errorf("another boot's owner is judged here: %s", r)
	}
	ns := reused
	ns.pidNS++
	if r := orphanReason(labels(ns)); r != "" {
		t.Errorf("another pid namespace's owner is judged here: %s", r)
	}
	l := labels(reused)
	l[LabelOwner] = strconv.Itoa(reused.pid + 1)
	if r := orphanReason(l); r != "" {
		t.Errorf("disagreeing owner labels are judged: %s", r)
	}
	if r := orphanReason(map[string]string{LabelOwner: strconv.Itoa(me.pid + 1)}); r != "" {
		t.Errorf("a bare pid is judged: %s", r)
	}
}

func FuzzParseOwner(f *testing.F) {
	f.Add(testBoot + "/4026531836/4026531834/1234/98765")
	f.Add(testBoot + "/4026531836/0/1/0")
	f.Add("x/1/2/3/4")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := parseOwner(s)
		if err != nil {
			return
		}
		if o.String() != s {
			t.Fatalf("parseOwner(%q) = %+v, which writes %q", s, o, o.String())
		}
		if o.pid < 1 || o.pid > maxPid {
			t.Fatalf("pid %d accepted", o.pid)
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777123 1000 200\n"))
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5 1000 200\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseProcStat(b)
		if err == nil && st.start != 0 && !strings.Contains(string(b), strconv.FormatUint(st.start, 10)) {
			t.Fatalf("start time %d is not in %q", st.start, b)
		}
	})
}
