package pickle

import (
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

// orderedDict pushes collections.OrderedDict().
func (a *asm) orderedDict() *asm {
	return a.stackGlobal("collections", "OrderedDict").op(opEmptyTuple, opReduce)
}

// param pushes a Parameter over a 1-D float tensor of n elements held in a
// nested blob.
func (a *asm) param(n int) *asm {
	a.stackGlobal("torch._utils", "_rebuild_parameter")
	a.stackGlobal("torch._utils", "_rebuild_tensor_v2").op(opMark)
	a.stackGlobal("torch.storage", "_load_from_bytes").bytes(floatBlob(n)).op(opTuple1, opReduce)
	a.int(0).int(n).op(opTuple1).int(1).op(opTuple1).op(opNewFalse).orderedDict().op(opTuple, opReduce)
	return a.op(opNewFalse).orderedDict().op(opTuple3, opReduce)
}

// tinySnapshot assembles an EDM-shaped snapshot: a dict whose entry key is
// a persistent class record of class with one parameter "w".
func tinySnapshot(key, class string) []byte {
	a := newAsm(4).op(opEmptyDict).str(key)
	a.stackGlobal("torch_utils.persistence", "_reconstruct_persistent_obj")
	a.op(opEmptyDict, opMark)
	a.str("type").str("class").str("version").int(6)
	a.str("module_src").str("class " + class + ":\n    pass\n").str("class_name").str(class)
	a.str("state").op(opEmptyDict, opMark)
	a.str("_parameters").orderedDict().str("w").param(2).op(opSetItem)
	a.str("_buffers").orderedDict().str("_modules").orderedDict()
	a.str("_init_kwargs").op(opEmptyDict).str("img_resolution").int(32).op(opSetItem)
	a.op(opSetItems, opSetItems, opTuple1, opReduce, opSetItem)
	return a.stop()
}

func mustProfile(t testing.TB, name string) *Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTinySnapshotIsClean(t *testing.T) {
	data := tinySnapshot("ema", "EDMPrecond")
	p := mustProfile(t, ProfileEDMCheckpoint)
	r := ScanBytes(data, p)
	if r.Verdict != Clean {
		t.Fatalf("verdict %s: %v", r.Verdict, r.Err())
	}
	m, err := ConvertBytes(data, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 1 || m.Tensors[0].Name != "w" || string(m.Tensors[0].Bytes()) != "\x00\x01\x02\x03\x04\x05\x06\x07" {
		t.Fatalf("tensors %+v", m.Tensors)
	}
	if string(m.Config.InitKwargs) != `{"img_resolution":32}` || m.Config.NetworkClass != "EDMPrecond" {
		t.Fatalf("config %+v", m.Config)
	}
	if len(r.Blobs) != 1 || r.Blobs[0].Storage.DType != "F32" || r.Blobs[0].Storage.Numel != 2 {
		t.Fatalf("blobs %+v", r.Blobs)
	}
	pinned := digest.Of(data)
	mv, err := ConvertVerified(data, pinned, p)
	if err != nil || mv.Config.Asset.SHA256 != pinned || m.Config.Asset.SHA256 != pinned {
		t.Fatalf("ConvertVerified: %v, asset %s", err, mv.Config.Asset.SHA256)
	}
}

// payload is a shell command that would create the canary file.
func payload(canary string) string { return "touch " + canary }

type hostile struct {
	name    string
	build   func(cmd string) []byte
	verdict Verdict
	reason  string // part of the first violation or the malformation
	global  string // a global the report must name, if any
}

// hostileCases are one test each from the malicious-pickle technique list;
// every one must be refused by scan and convert, and its payload never runs.
var hostileCases = []hostile{
	{"os.system via GLOBAL and REDUCE (protocol 0)", func(cmd string) []byte {
		return []byte("cos\nsystem\n(S'" + cmd + "'\ntR.")
	}, Rejected, "global os.system is not allowed", "os.system"},
	{"posix.system (protocol 2)", func(cmd string) []byte {
		return newAsm(2).global("posix", "system").ustr(cmd).op(opTuple1, opReduce).stop()
	}, Rejected, "global posix.system is not allowed", "posix.system"},
	{"subprocess.run via STACK_GLOBAL", func(cmd string) []byte {
		a := newAsm(4).stackGlobal("subprocess", "run").op(opEmptyList, opMark)
		for _, f := range strings.Fields(cmd) {
			a.str(f)
		}
		return a.op(opAppends, opTuple1, opReduce).stop()
	}, Rejected, "global subprocess.run is not allowed", "subprocess.run"},
	{"builtins.eval", func(cmd string) []byte {
		return newAsm(4).stackGlobal("builtins", "eval").str("__import__('os').system('"+cmd+"')").op(opTuple1, opReduce).stop()
	}, Rejected, "global builtins.eval is not allowed", "builtins.eval"},
	{"__builtin__.exec in protocol 0 resolves to builtins.exec", func(cmd string) []byte {
		return []byte("c__builtin__\nexec\n(Vimport os; os.system('" + cmd + "')\ntR.")
	}, Rejected, "global builtins.exec is not allowed", "builtins.exec"},
	{"INST calling exec", func(cmd string) []byte {
		return []byte("(Vimport os; os.system('" + cmd + "')\nibuiltins\nexec\n.")
	}, Rejected, "", "builtins.exec"},
	{"memo overwrite hides the module behind a harmless name", func(cmd string) []byte {
		// BINPUT 1 stores "torch._utils"; MEMOIZE then stores at len(memo) == 1,
		// overwriting it with "os"; likewise "_rebuild_tensor_v2" at 2 is
		// overwritten by "system". A scanner that trusts the explicit PUTs sees
		// torch._utils._rebuild_tensor_v2; the unpickler resolves os.system.
		return newAsm(4).str("torch._utils").binput(1).op(opPop).
			str("os").op(opMemoize, opPop).
			str("_rebuild_tensor_v2").binput(2).op(opPop).
			str("system").op(opMemoize, opPop).
			binget(1).binget(2).op(opStackGlobal).str(cmd).op(opTuple1, opReduce).stop()
	}, Rejected, "global os.system is not allowed", "os.system"},
	{"decoy storage name next to a memo-supplied module", func(cmd string) []byte {
		return newAsm(4).str("os").op(opMemoize, opPop).
			str("torch").str("FloatStorage").op(opPop, opPop).
			binget(0).str("system").op(opStackGlobal).str(cmd).op(opTuple1, opReduce).stop()
	}, Rejected, "global os.system is not allowed", "os.system"},
	{"dotted attribute path behind an allowed name", func(cmd string) []byte {
		return newAsm(4).stackGlobal("torch._utils", "_rebuild_tensor_v2.__globals__").op(opPop).
			stackGlobal("collections", "OrderedDict.__init__.__globals__").str(cmd).op(opTuple1, opReduce).stop()
	}, Rejected, "dotted attribute path", ""},
	{"odd global name with whitespace", func(cmd string) []byte {
		return newAsm(4).stackGlobal("os ", "system").str(cmd).op(opTuple1, opReduce).stop()
	}, Rejected, "module name is not a dotted sequence", ""},
	{"opcode 0xff", func(cmd string) []byte {
		return append(newAsm(4).str(cmd).b, 0xff, opStop)
	}, Malformed, "unknown opcode 0xff", ""},
	{"BINBYTES8 with a 2^62 length", func(cmd string) []byte {
		return newAsm(4).binbytes8(1 << 62).stop()
	}, Malformed, "exceeds the", ""},
	{"trailing data after STOP", func(cmd string) []byte {
		good := newAsm(4).op(opEmptyDict).stop()
		return append(good, []byte("cos\nsystem\n(S'"+cmd+"'\ntR.")...)
	}, Malformed, "trailing data", ""},
	{"second pickle after STOP in a torch-looking file", func(cmd string) []byte {
		return append(newAsm(2).int(1).stop(), newAsm(2).global("os", "system").ustr(cmd).op(opTuple1, opReduce).stop()...)
	}, Malformed, "trailing data", ""},
	{"malicious nested blob: magic pickle that calls os.system", func(cmd string) []byte {
		magic := newAsm(2).global("os", "system").ustr(cmd).op(opTuple1, opReduce).stop()
		blob := legacyTorch(magic, storagePickle("FloatStorage", "1", 1), []string{"1"}, []int64{1}, [][]byte{make([]byte, 4)})
		return newAsm(4).stackGlobal("torch.storage", "_load_from_bytes").bytes(blob).op(opTuple1, opReduce).stop()
	}, Rejected, "global os.system is not allowed in a torch header pickle", "os.system"},
	{"malicious nested blob: object pickle that calls os.system", func(cmd string) []byte {
		obj := newAsm(2).global("os", "system").ustr(cmd).op(opTuple1, opReduce).stop()
		blob := legacyTorch(nil, obj, nil, nil, nil)
		return newAsm(4).stackGlobal("torch.storage", "_load_from_bytes").bytes(blob).op(opTuple1, opReduce).stop()
	}, Rejected, "global os.system is not allowed in a nested torch file", "os.system"},
	{"frame length lie: BINBYTES runs past its frame over a hidden call", func(cmd string) []byte {
		hidden := newAsm(4).b[2:]
		hidden = append(hidden, newAsm(0).global("os", "system").str(cmd).op(opTuple1, opReduce, opPop).b...)
		a := newAsm(4).frame(5)
		a.op(opBinBytes).raw([]byte{byte(len(hidden)), 0, 0, 0}).raw(hidden)
		return a.op(opPop).op(opNone).stop()
	}, Malformed, "runs past the end of its frame", ""},
	{"frame length beyond the input", func(cmd string) []byte {
		return newAsm(4).frame(1 << 40).op(opNone).stop()
	}, Malformed, "frame length", ""},
	{"snapshot without ema", func(cmd string) []byte {
		return tinySnapshot("net", "EDMPrecond")
	}, Rejected, `no "ema" entry`, ""},
	{"ema of the wrong class", func(cmd string) []byte {
		return tinySnapshot("ema", "SongUNet")
	}, Rejected, `"ema" is a SongUNet`, ""},
	{"ema that is not a persistent object", func(cmd string) []byte {
		return newAsm(4).op(opEmptyDict).str("ema").orderedDict().op(opSetItem).stop()
	}, Rejected, "not a persistent module", ""},
}

func TestHostilePicklesAreRefused(t *testing.T) {
	p := mustProfile(t, ProfileEDMCheckpoint)
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			canary := filepath.Join(t.TempDir(), "canary")
			data := hc.build(payload(canary))
			r := ScanBytes(data, p)
			if r.Verdict != hc.verdict {
				t.Fatalf("scan verdict %s, want %s (error %q, violations %v)", r.Verdict, hc.verdict, r.Error, r.Violations)
			}
			msg := r.Error
			if len(r.Violations) > 0 && hc.verdict == Rejected {
				msg = r.Violations[0].Reason
				for _, v := range r.Violations[1:] {
					msg += "; " + v.Reason
				}
			}
			if !strings.Contains(msg, hc.reason) {
				t.Errorf("scan says %q, want it to mention %q", msg, hc.reason)
			}
			if hc.global != "" && !hasGlobal(r, hc.global, false) {
				t.Errorf("report globals %+v do not name %s as refused", r.Globals, hc.global)
			}
			_, err := ConvertBytes(data, p)
			var pe *PolicyError
			var me *MalformedError
			switch {
			case err == nil:
				t.Fatal("convert accepted the file")
			case hc.verdict == Rejected && !errors.As(err, &pe):
				t.Errorf("convert error %T %v, want a policy error", err, err)
			case hc.verdict == Malformed && !errors.As(err, &me):
				t.Errorf("convert error %T %v, want a malformed-input error", err, err)
			}
			if _, err := os.Stat(canary); !os.IsNotExist(err) {
				t.Fatalf("canary %s exists: the payload ran", canary)
			}
		})
	}
}

func hasGlobal(r *Report, name string, allowed bool) bool {
	for _, g := range r.Globals {
		if g.Name == name && g.Allowed == allowed {
			return true
		}
	}
	return false
}

// TestHugeLengthAllocatesNothing checks that lengths are compared with the
// remaining input before anything is allocated.
func TestHugeLengthAllocatesNothing(t *testing.T) {
	p := mustProfile(t, ProfileEDMCheckpoint)
	for _, data := range [][]byte{
		newAsm(4).binbytes8(1 << 62).stop(),
		newAsm(4).op(opBinUnicode8).raw([]byte{0, 0, 0, 0, 0, 0, 0, 0x40}).stop(),
		newAsm(4).op(opByteArray8).raw([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}).stop(),
		newAsm(4).op(opBinBytes).raw([]byte{0xff, 0xff, 0xff, 0x7f}).stop(),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := ScanBytes(data, p)
		runtime.ReadMemStats(&after)
		if r.Verdict != Malformed {
			t.Errorf("verdict %s, want malformed", r.Verdict)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
			t.Errorf("scanning %d bytes allocated %d bytes", len(data), grown)
		}
	}
}

func TestLegacyMagicMustBeLiteral(t *testing.T) {
	// The PyTorch magic-number bypass: a magic pickle computed by a call.
	magic := newAsm(2).global("collections", "OrderedDict").op(opEmptyTuple, opReduce, opPop).long(legacyMagic).stop()
	f := legacyTorch(magic, newAsm(2).op(opEmptyDict).stop(), nil, nil, nil)
	r := ScanBytes(f, mustProfile(t, ProfileTorchStateDict))
	if r.Verdict == Clean {
		t.Fatal("accepted a torch file whose magic pickle makes a call")
	}
	// A magic number of the right value but the wrong type is not magic.
	if isLegacyMagic(new(big.Int).Add(legacyMagic, big.NewInt(1))) || !isLegacyMagic(legacyMagic) {
		t.Fatal("magic comparison is wrong")
	}
}

// TestDetectorProfile decodes a detector-shaped file: a persistent module
// at the top level holding a plain torch.nn.Linear (NEWOBJ and BUILD).
func TestDetectorProfile(t *testing.T) {
	a := newAsm(4).stackGlobal("torch_utils.persistence", "_reconstruct_persistent_obj").op(opEmptyDict, opMark)
	a.str("type").str("class").str("version").int(6).str("module_src").str("class InceptionV3: pass\n").str("class_name").str("InceptionV3")
	a.str("state").op(opEmptyDict, opMark)
	a.str("_parameters").orderedDict().str("_buffers").orderedDict()
	a.str("_modules").orderedDict().str("output")
	a.stackGlobal("torch.nn.modules.linear", "Linear").op(opEmptyTuple, opNewObj)
	a.op(opEmptyDict, opMark).str("_parameters").orderedDict().op(opMark).str("weight").param(2).str("bias").op(opNone, opSetItems)
	a.str("_buffers").orderedDict().str("_modules").orderedDict().op(opSetItems, opBuild)
	a.op(opSetItem)
	a.op(opSetItems, opSetItems, opTuple1, opReduce)
	data := a.stop()
	p := mustProfile(t, ProfileInceptionDetector)
	m, err := ConvertBytes(data, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 1 || m.Tensors[0].Name != "output.weight" || m.Config.NetworkClass != "InceptionV3" {
		t.Fatalf("tensors %+v config %+v", m.Tensors, m.Config)
	}
	// The same file is not an EDM checkpoint.
	if r := ScanBytes(data, mustProfile(t, ProfileEDMCheckpoint)); r.Verdict != Rejected {
		t.Fatalf("edm-checkpoint verdict %s", r.Verdict)
	}
}

// TestSharedReferencesStayCheap feeds shared references that would
// multiply work: one nested blob called many times through the memo, and
// constructor arguments whose JSON would be a gigabyte.
func TestSharedReferencesStayCheap(t *testing.T) {
	p := mustProfile(t, ProfileTorchStateDict)
	a := newAsm(4).stackGlobal("torch.storage", "_load_from_bytes").binput(0).op(opPop)
	a.bytes(floatBlob(1<<16)).binput(1).op(opPop).op(opEmptyList, opMark)
	for i := 0; i < 5000; i++ {
		a.binget(0).binget(1).op(opTuple1, opReduce)
	}
	r := ScanBytes(a.op(opAppends).stop(), p)
	if len(r.Blobs) != 1 {
		t.Errorf("the same blob was decoded %d times", len(r.Blobs))
	}

	kw := newAsm(4).str(strings.Repeat("x", 1024)).binput(0).op(opPop).op(opEmptyList, opMark)
	for i := 0; i < 1000; i++ {
		kw.binget(0)
	}
	kw.op(opAppends).binput(1).op(opPop).op(opEmptyList, opMark)
	for i := 0; i < 1000; i++ {
		kw.binget(1)
	}
	kw.op(opAppends)
	if _, err := InertJSON(decodeOrFail(t, kw.stop())); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("rendering a gigabyte of JSON: %v", err)
	}
}

func decodeOrFail(t *testing.T, data []byte) Value {
	t.Helper()
	v, err := decodePlain(t, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConfigProblemRejects checks that a problem found while building the
// config (constructor arguments without an inert form) rejects the file in
// the error and in the report alike.
func TestConfigProblemRejects(t *testing.T) {
	a := persistentEMA()
	a.str("_init_kwargs").op(opEmptyDict).str("weights").param(2).op(opSetItem)
	a.op(opSetItems, opSetItems, opTuple1, opReduce, opSetItem)
	data := a.stop()
	m, err := ConvertBytes(data, mustProfile(t, ProfileEDMCheckpoint))
	var pe *PolicyError
	if !errors.As(err, &pe) || m.Report.Verdict != Rejected || m.Report.Err() == nil {
		t.Fatalf("error %v, verdict %s", err, m.Report.Verdict)
	}
	if r := ScanBytes(data, mustProfile(t, ProfileEDMCheckpoint)); r.Verdict != Rejected || !strings.Contains(r.Violations[0].Reason, "_init_kwargs of EDMPrecond") {
		t.Fatalf("scan verdict %s %v", r.Verdict, r.Violations)
	}
}
