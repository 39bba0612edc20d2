package pickle

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func decodePlain(t *testing.T, data []byte) (Value, error) {
	t.Helper()
	s := newSession(plainProfile(t), data, true)
	return s.decodeTop(data)
}

func TestDecoderStructure(t *testing.T) {
	long := bytes.Repeat([]byte{'z'}, 300)
	for _, c := range []struct {
		name string
		data []byte
		err  string // "" when the pickle must decode
	}{
		{"frames around an unframed large payload", func() []byte {
			a := newAsm(4).frame(3).op(opEmptyList, opMark, opNone)
			a.bytes(long)
			return a.frame(3).op(opNewTrue, opAppends, opNone).op(opPop).stop()
		}(), ""},
		{"FRAME inside an unfinished frame", newAsm(4).frame(12).op(opNone).frame(1).op(opPop, opNone).stop(), "before the end of the current frame"},
		{"STOP before the end of its frame", newAsm(4).frame(4).op(opNone, opStop, opNone, opNone).b, "before the end of its frame"},
		{"op split across a frame boundary", newAsm(4).frame(2).op(opBinInt1).op(5).stop(), ""},
		{"argument split across a frame boundary", newAsm(4).frame(2).op(opBinInt2, 5, 0).stop(), "runs past the end of its frame"},
		{"PROTO after the first opcode", append(newAsm(2).op(opNone).b, opProto, 2, opStop), "PROTO after the first opcode"},
		{"protocol 6", newAsm(6).op(opNone).stop(), "unsupported pickle protocol 6"},
		{"STACK_GLOBAL in a protocol 2 pickle", newAsm(2).str("a").op(opPop, opNone).stop(), "needs protocol 4"},
		{"missing STOP", newAsm(4).op(opNone).b, "ends without STOP"},
		{"values left on the stack", newAsm(4).op(opNone, opNone).stop(), "STOP leaves 1 values"},
		{"mark left on the stack", newAsm(4).op(opMark, opNone).stop(), "STOP leaves"},
		{"stack underflow", newAsm(4).op(opPop).stop(), "stack underflow"},
		{"pop below a mark", newAsm(4).op(opNone, opMark, opTuple1).stop(), "stack underflow"},
		{"memo key not found", newAsm(4).binget(3).stop(), "memo key 3 not found"},
		{"unhashable dict key", newAsm(4).op(opEmptyDict, opEmptyList, opNone, opSetItem).stop(), "unhashable list used as a dict key"},
		{"odd SETITEMS", newAsm(4).op(opEmptyDict, opMark, opNone, opSetItems).stop(), "odd number of items"},
		{"LONG4 beyond the limit", append(newAsm(4).op(opLong4).b, 0, 0, 1, 0, opStop), "longer than the decoder's limit"},
		{"negative BINSTRING length", append([]byte{opBinString}, 0xff, 0xff, 0xff, 0xff, opStop), "negative BINSTRING"},
		{"string not UTF-8", newAsm(4).raw([]byte{opShortBinUnicode, 2, 0xc3, 0x28}).stop(), "not valid UTF-8"},
		{"EXT1", newAsm(4).op(opExt1, 1).stop(), "extension registry"},
		{"NEXT_BUFFER", newAsm(5).op(opNextBuffer).stop(), "out-of-band buffers"},
		{"persistent id in a plain pickle", newAsm(4).str("x").op(opBinPersID).stop(), "no persistent loader"},
		{"text opcodes of protocol 0", []byte("(lp0\nI1\naI-7\naL12345678901234567890123L\naF0.25\naS'a\\x41\\n'\naVcaf\\u00e9\nag0\na."), ""},
		{"bad INT literal", []byte("I0x10\n."), "invalid integer literal"},
		{"unterminated line", []byte("I12"), "without a terminating newline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodePlain(t, c.data)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("decoded; want an error about %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("error %q, want it to mention %q", err, c.err)
			}
		})
	}
}

func TestDictKeysFollowPythonEquality(t *testing.T) {
	// {1: "a", True: "b", 1.0: "c", "1": "d"} is {1: "c", "1": "d"} in Python.
	data := newAsm(4).op(opEmptyDict, opMark).int(1).str("a").op(opNewTrue).str("b").
		op(opBinFloat).raw([]byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}).str("c").str("1").str("d").op(opSetItems).stop()
	v, err := decodePlain(t, data)
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*Dict)
	if d.Len() != 2 || d.Keys[0] != int64(1) || d.Values[0] != "c" || d.Keys[1] != "1" {
		t.Fatalf("dict %#v", d)
	}
}

func TestMemoryBudget(t *testing.T) {
	// Each 2-byte EMPTY_DICT MEMOIZE pair costs far more than 2 bytes of
	// objects; the budget stops it before it grows without bound.
	body := bytes.Repeat([]byte{opEmptyDict, opMemoize, opPop}, 700_000)
	data := append(append(newAsm(4).b, body...), opNone, opStop)
	_, err := decodePlain(t, data)
	if err == nil || !strings.Contains(err.Error(), "more memory than the decoder allows") {
		t.Fatalf("error %v, want the memory budget", err)
	}
}

func TestMarkLimit(t *testing.T) {
	data := append(newAsm(4).b, bytes.Repeat([]byte{opMark}, maxMarks+1)...)
	if _, err := decodePlain(t, append(data, opStop)); err == nil || !strings.Contains(err.Error(), "nested MARKs") {
		t.Fatalf("error %v", err)
	}
}

// tensorPickle is a protocol-2 data pickle {"w": tensor} whose tensor views
// a persistent storage with the given geometry.
func tensorPickle(key string, numel, offset int, shape, stride []int, legacy ...bool) []byte {
	a := newAsm(2).op(opEmptyDict).ustr("w").global("torch._utils", "_rebuild_tensor_v2").op(opMark)
	a.op(opMark).ustr("storage").global("torch", "FloatStorage").ustr(key).ustr("cpu").int(numel)
	if len(legacy) > 0 {
		a.op(opNone)
	}
	a.op(opTuple, opBinPersID)
	a.int(offset).op(opMark)
	for _, s := range shape {
		a.int(s)
	}
	a.op(opTuple, opMark)
	for _, s := range stride {
		a.int(s)
	}
	a.op(opTuple, opNewFalse).global("collections", "OrderedDict").op(opEmptyTuple, opReduce, opTuple, opReduce, opSetItem)
	return a.stop()
}

type testZipEntry struct {
	name   string
	data   []byte
	method uint16
}

func buildZip(t *testing.T, entries []testZipEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTorchZip(t *testing.T) {
	p := mustProfile(t, ProfileTorchStateDict)
	floats := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}
	good := []testZipEntry{
		{"archive/data.pkl", tensorPickle("0", 3, 1, []int{2}, []int{1}), zip.Store},
		{"archive/data/0", floats, zip.Store},
		{"archive/version", []byte("3\n"), zip.Store},
	}
	with := func(mod func([]testZipEntry) []testZipEntry) []byte {
		return buildZip(t, mod(append([]testZipEntry(nil), good...)))
	}
	m, err := ConvertBytes(buildZip(t, good), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 1 || !bytes.Equal(m.Tensors[0].Bytes(), floats[4:]) || m.Report.Format != FormatTorchZip {
		t.Fatalf("tensors %+v", m.Tensors)
	}
	flipped := buildZip(t, good)
	flipped[bytes.Index(flipped, floats)] ^= 0xff
	for _, c := range []struct {
		name    string
		data    []byte
		verdict Verdict
		msg     string
	}{
		{"compressed record", with(func(e []testZipEntry) []testZipEntry { e[1].method = zip.Deflate; return e }), Malformed, "is compressed"},
		{"trailing data", append(buildZip(t, good), "cos\nsystem\n"...), Malformed, "trailing data"},
		{"CRC mismatch", flipped, Malformed, "CRC-32"},
		{"TorchScript code", with(func(e []testZipEntry) []testZipEntry {
			return append(e, testZipEntry{"archive/code/__torch__.py", []byte("import os"), zip.Store})
		}), Rejected, "TorchScript"},
		{"unreferenced storage", with(func(e []testZipEntry) []testZipEntry {
			return append(e, testZipEntry{"archive/data/9", floats, zip.Store})
		}), Rejected, "not referenced"},
		{"storage size mismatch", with(func(e []testZipEntry) []testZipEntry { e[1].data = floats[:8]; return e }), Malformed, "holds 8 bytes, the storage needs 12"},
		{"view past the storage", with(func(e []testZipEntry) []testZipEntry {
			e[0].data = tensorPickle("0", 3, 2, []int{2}, []int{1})
			return e
		}), Malformed, "reaches element 3 of a storage of 3"},
		{"key that is a path", with(func(e []testZipEntry) []testZipEntry {
			e[0].data = tensorPickle("../0", 3, 0, []int{3}, []int{1})
			return e
		}), Malformed, "not a plain name"},
		{"records outside one folder", with(func(e []testZipEntry) []testZipEntry { return append(e, testZipEntry{"other/x", nil, zip.Store}) }), Malformed, "outside folder"},
		{"no data.pkl", with(func(e []testZipEntry) []testZipEntry { return e[1:] }), Malformed, "no archive/data.pkl"},
		{"big-endian", with(func(e []testZipEntry) []testZipEntry {
			return append(e, testZipEntry{"archive/byteorder", []byte("big"), zip.Store})
		}), Rejected, "big-endian"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ScanBytes(c.data, p)
			msg := r.Error
			for _, v := range r.Violations {
				msg += "; " + v.Reason
			}
			if r.Verdict != c.verdict || !strings.Contains(msg, c.msg) {
				t.Fatalf("verdict %s %q, want %s mentioning %q", r.Verdict, msg, c.verdict, c.msg)
			}
			if _, err := ConvertBytes(c.data, p); err == nil {
				t.Fatal("convert accepted it")
			}
		})
	}
}

func TestTorchLegacy(t *testing.T) {
	p := mustProfile(t, ProfileTorchStateDict)
	data := []byte{9, 0, 0, 0, 8, 0, 0, 0}
	obj := tensorPickle("5", 2, 0, []int{2, 1}, []int{1, 5}, true)
	good := legacyTorch(nil, obj, []string{"5"}, []int64{2}, [][]byte{data})
	m, err := ConvertBytes(good, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Report.Format != FormatTorchLegacy || !bytes.Equal(m.Tensors[0].Bytes(), data) {
		t.Fatalf("format %s tensors %+v", m.Report.Format, m.Tensors)
	}
	countLie := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(countLie[len(countLie)-16:], 3)
	for _, c := range []struct {
		name, msg string
		data      []byte
	}{
		{"element count differs from the persistent id", "holds 3 elements", countLie},
		{"trailing data", "trailing data after the last storage", append(append([]byte(nil), good...), 0)},
		{"listed but never referenced", "listed but never referenced", legacyTorch(nil, obj, []string{"5", "6"}, []int64{2, 2}, [][]byte{data, data})},
		{"referenced but without data", "has no data section", legacyTorch(nil, obj, nil, nil, nil)},
		{"storage data cut short", "exceed the", good[:len(good)-2]},
		{"wrong protocol version", "torch protocol version", bytes.Replace(good, []byte{opBinInt2, 0xe9, 0x03}, []byte{opBinInt2, 0xea, 0x03}, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ScanBytes(c.data, p)
			if r.Verdict != Malformed || !strings.Contains(r.Error, c.msg) {
				t.Fatalf("verdict %s %q, want malformed mentioning %q", r.Verdict, r.Error, c.msg)
			}
		})
	}
}

// persistentEMA assembles the start of an EDM snapshot: {"ema": a
// persistent EDMPrecond whose state holds one parameter "w" and empty
// buffers and modules}, left open after "_modules" for the caller's
// extra state keys.
func persistentEMA() *asm {
	a := newAsm(4).op(opEmptyDict).str("ema")
	a.stackGlobal("torch_utils.persistence", "_reconstruct_persistent_obj").op(opEmptyDict, opMark)
	a.str("type").str("class").str("version").int(6).str("module_src").str("").str("class_name").str("EDMPrecond")
	a.str("state").op(opEmptyDict, opMark)
	a.str("_parameters").orderedDict().str("w").param(2).op(opSetItem)
	a.str("_buffers").orderedDict().str("_modules").orderedDict()
	return a
}

func TestStateDictHooksAreRefused(t *testing.T) {
	a := persistentEMA()
	a.str("_state_dict_hooks").orderedDict().int(0).str("hook").op(opSetItem)
	a.op(opSetItems, opSetItems, opTuple1, opReduce, opSetItem)
	r := ScanBytes(a.stop(), mustProfile(t, ProfileEDMCheckpoint))
	if r.Verdict != Rejected || !strings.Contains(r.Violations[0].Reason, "state_dict hooks") {
		t.Fatalf("verdict %s %v", r.Verdict, r.Violations)
	}
}

func TestSafetensorsLayout(t *testing.T) {
	st := &Storage{DType: DType{"F32", 4}, Numel: 6, Data: []byte("abcdefghijklmnopqrstuvwx")}
	b := &Storage{DType: DType{"U8", 1}, Numel: 1, Data: []byte{7}}
	ts := []NamedTensor{
		{"z.u8", &Tensor{Storage: b, DType: b.DType, Shape: []int64{1}, Strides: []int64{1}}},
		{"a.t", &Tensor{Storage: st, DType: st.DType, Shape: []int64{3, 2}, Strides: []int64{1, 3}}},
	}
	var buf bytes.Buffer
	if _, err := EncodeSafetensors(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	n := binary.LittleEndian.Uint64(out)
	header := string(out[8 : 8+n])
	want := `{"__metadata__":{"format":"pt"},"a.t":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]},"z.u8":{"dtype":"U8","shape":[1],"data_offsets":[24,25]}}`
	if strings.TrimRight(header, " ") != want || n%8 != 0 {
		t.Fatalf("header %q (length %d)", header, n)
	}
	// The transposed view comes out in C order: elements 0,3,1,4,2,5.
	if got := string(out[8+n:]); got != "abcdmnopefghqrstijkluvwx\x07" {
		t.Fatalf("data %q", got)
	}
	h, err := ReadSafetensorsHeader(bytes.NewReader(out), int64(len(out)))
	if err != nil || len(h.Tensors) != 2 || h.Metadata["format"] != "pt" {
		t.Fatalf("read back: %v %+v", err, h)
	}
	ts = append(ts, NamedTensor{"a.t", ts[1].Tensor})
	if _, err := EncodeSafetensors(&buf, ts, nil); err == nil {
		t.Fatal("duplicate names accepted")
	}
}

func TestReadTorchZipEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		err  string
	}{
		{"short zip64 locator", append([]byte("PK\x06\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), append([]byte("PK\x05\x06"), 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)...), "zip64 end locator does not point"},
		{"no end record", []byte("PK\x03\x04 nothing that ends like a zip archive"), "missing or followed by trailing data"},
	} {
		if _, err := readTorchZip(c.data); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}
