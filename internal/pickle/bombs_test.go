package pickle

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// keyBomb is a dict whose key is a tuple nested depth deep, each level
// holding the level below twice: 7 + 2*depth bytes, a canonical form of
// about 2^depth bytes.
func keyBomb(depth int) []byte {
	a := newAsm(2).op(opEmptyDict, opNone)
	for range depth {
		a.op(opDup, opTuple2)
	}
	return a.op(opNone, opSetItem).stop()
}

// TestKeyBombChargedBeforeBuilt: a 59-byte pickle whose one dict key has a
// canonical form of gigabytes is refused for the memory budget before the
// form is built.
func TestKeyBombChargedBeforeBuilt(t *testing.T) {
	data := keyBomb(26)
	if len(data) != 59 {
		t.Fatalf("bomb of %d bytes, want 59", len(data))
	}
	p := mustProfile(t, ProfileTorchStateDict)
	var r *Report
	n := allocated(func() { r = ScanBytes(data, p) })
	if r.Verdict != Malformed || !strings.Contains(r.Error, "memory") {
		t.Fatalf("verdict %s %q, want malformed for the memory budget", r.Verdict, r.Error)
	}
	if n > 64<<20 {
		t.Fatalf("scanning the 59-byte key bomb allocated %d bytes", n)
	}
	// A key that fits still decodes: equal tuples are one key.
	small := newAsm(2).op(opEmptyDict, opNone, opDup, opTuple2, opNone, opSetItem, opNone, opNone, opTuple2, opNone, opSetItem).stop()
	r = ScanBytes(small, plainProfile(t))
	if r.Verdict == Malformed || r.Error != "" {
		t.Fatalf("small tuple keys: %s %q", r.Verdict, r.Error)
	}
}

// overlapZip is a zip whose central directory has n entries, with
// different names, all pointing at one record of size bytes, whose CRC-32
// is wrong in every entry.
func overlapZip(n, size int) []byte {
	le := binary.LittleEndian
	body := make([]byte, size)
	crc := crc32.ChecksumIEEE(body) ^ 1
	var out bytes.Buffer
	name0 := "archive/data/0"
	h := make([]byte, zipLocalLen)
	copy(h, "PK\x03\x04")
	le.PutUint32(h[14:], crc)
	le.PutUint32(h[18:], uint32(size))
	le.PutUint32(h[22:], uint32(size))
	le.PutUint16(h[26:], uint16(len(name0)))
	out.Write(h)
	out.WriteString(name0)
	out.Write(body)
	cdOff := out.Len()
	for i := range n {
		name := fmt.Sprintf("archive/data/%d", i)
		c := make([]byte, zipCentralLen)
		copy(c, "PK\x01\x02")
		le.PutUint32(c[16:], crc)
		le.PutUint32(c[20:], uint32(size))
		le.PutUint32(c[24:], uint32(size))
		le.PutUint16(c[28:], uint16(len(name)))
		out.Write(c)
		out.WriteString(name)
	}
	e := make([]byte, zipEndLen)
	copy(e, "PK\x05\x06")
	le.PutUint16(e[8:], uint16(n))
	le.PutUint16(e[10:], uint16(n))
	le.PutUint32(e[12:], uint32(out.Len()-cdOff))
	le.PutUint32(e[16:], uint32(cdOff))
	out.Write(e)
	return out.Bytes()
}

// TestZipOverlapBeforeCRC: directory entries that share one record are
// refused from the layout alone, before any CRC is computed (which would
// cost entries times record size).
func TestZipOverlapBeforeCRC(t *testing.T) {
	data := overlapZip(1000, 1<<20)
	_, err := readTorchZip(data)
	if err == nil || strings.Contains(err.Error(), "CRC") || !strings.Contains(err.Error(), "not right after the previous record") {
		t.Fatalf("error %v, want the layout refused before any CRC check", err)
	}
	r := ScanBytes(data, mustProfile(t, ProfileTorchStateDict))
	if r.Verdict != Malformed || strings.Contains(r.Error, "CRC") {
		t.Fatalf("scan: %s %q", r.Verdict, r.Error)
	}
}

// reportBomb is a state dict whose entry is a tuple nested depth deep, each
// level holding the level below twice, over one parameter: 2^depth paths
// to the same tensor. Walked once, the innermost tuple lists the tensor
// twice and the 19 levels above it each meet their repeat once.
func reportBomb(depth int) []byte {
	a := newAsm(4).op(opEmptyDict).str("w").param(1)
	for range depth {
		a.op(opDup, opTuple2)
	}
	return a.op(opSetItem).stop()
}

// TestReportWalksSharedStructureOnce: the report of a file with 2^20 paths
// to one tensor stays small and says what it elided; a listing of more
// tensors than the cap says how many it left out.
func TestReportWalksSharedStructureOnce(t *testing.T) {
	data := reportBomb(20)
	p := mustProfile(t, ProfileTorchStateDict)
	r := ScanBytes(data, p)
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) > 64<<10 || len(r.Tensors) != 2 || r.ElidedRepeats != 19 {
		t.Fatalf("report of a %d-byte file: %d bytes of JSON, %d tensors, %d elided repeats", len(data), len(js), len(r.Tensors), r.ElidedRepeats)
	}
	// A list of 70000 references to one tensor: every entry is its own
	// path, listed up to the cap.
	a := newAsm(4).op(opEmptyDict).str("w").param(1).binput(200).op(opSetItem)
	a.str("l").op(opEmptyList, opMark)
	for range 70000 {
		a.binget(200)
	}
	data = a.op(opAppends, opSetItem).stop()
	r = ScanBytes(data, p)
	if len(r.Tensors) != maxReportTensors || r.TensorsUnlisted != 70001-maxReportTensors {
		t.Fatalf("%d tensors listed, %d unlisted (%s %q)", len(r.Tensors), r.TensorsUnlisted, r.Verdict, r.Error)
	}
}

// moduleBomb is an EDM-shaped snapshot whose ema module holds, depth levels
// deep, a module whose _modules are the level below twice: 2^depth
// state_dict paths from a few kilobytes.
func moduleBomb(depth int) []byte {
	a := newAsm(4).op(opEmptyDict).str("ema")
	module := func(state func()) {
		a.stackGlobal("torch_utils.persistence", "_reconstruct_persistent_obj")
		a.op(opEmptyDict, opMark)
		a.str("type").str("class").str("version").int(6)
		a.str("module_src").str("class EDMPrecond:\n    pass\n").str("class_name").str("EDMPrecond")
		a.str("state").op(opEmptyDict, opMark)
		state()
		a.op(opSetItems, opSetItems, opTuple1, opReduce)
	}
	module(func() {
		a.str("_parameters").orderedDict().str("w").param(1).op(opSetItem)
		a.str("_buffers").orderedDict().str("_modules").orderedDict()
	})
	for range depth {
		a.binput(250).op(opPop)
		module(func() {
			a.str("_parameters").orderedDict().str("_buffers").orderedDict()
			a.str("_modules").orderedDict().op(opMark).str("a").binget(250).str("b").binget(250).op(opSetItems)
		})
	}
	return a.op(opSetItem).stop()
}

// TestModuleSharingBombBounded: the state_dict walk of a module graph that
// shares submodules at every level is bounded by the input's size (a 7 KB
// file cost 3.4 s and 196 MB before), and refused.
func TestModuleSharingBombBounded(t *testing.T) {
	data := moduleBomb(22)
	p := mustProfile(t, ProfileEDMCheckpoint)
	var r *Report
	n := allocated(func() { r = ScanBytes(data, p) })
	if r.Verdict == Clean {
		t.Fatal("module-sharing bomb scans clean")
	}
	if n > 32<<20 {
		t.Fatalf("scanning a %d-byte module-sharing bomb allocated %d bytes", len(data), n)
	}
	if _, err := ConvertBytes(data, p); err == nil {
		t.Fatal("module-sharing bomb converts")
	}
	// Shallow sharing (tied submodules) is still exported, under every path,
	// as state_dict() does.
	m, err := ConvertBytes(moduleBomb(3), p)
	if err != nil || len(m.Tensors) != 8 || m.Tensors[0].Name != "a.a.a.w" || m.Tensors[7].Name != "b.b.b.w" {
		t.Fatalf("tied submodules: %v, %d tensors", err, len(m.Tensors))
	}
}
