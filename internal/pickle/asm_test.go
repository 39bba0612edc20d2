package pickle

import (
	"encoding/binary"
	"math/big"
)

// asm assembles pickles opcode by opcode for tests; it never runs them.
type asm struct{ b []byte }

func newAsm(proto int) *asm {
	a := &asm{}
	if proto >= 2 {
		a.b = append(a.b, opProto, byte(proto))
	}
	return a
}

func (a *asm) op(ops ...byte) *asm { a.b = append(a.b, ops...); return a }

func (a *asm) raw(b []byte) *asm { a.b = append(a.b, b...); return a }

// str pushes a string with SHORT_BINUNICODE or BINUNICODE.
func (a *asm) str(s string) *asm {
	if len(s) < 256 {
		a.b = append(a.b, opShortBinUnicode, byte(len(s)))
	} else {
		a.b = append(a.b, opBinUnicode)
		a.b = binary.LittleEndian.AppendUint32(a.b, uint32(len(s)))
	}
	a.b = append(a.b, s...)
	return a
}

// ustr pushes a string with BINUNICODE (protocol 1+).
func (a *asm) ustr(s string) *asm {
	a.b = append(a.b, opBinUnicode)
	a.b = binary.LittleEndian.AppendUint32(a.b, uint32(len(s)))
	a.b = append(a.b, s...)
	return a
}

// bytes pushes bytes with BINBYTES.
func (a *asm) bytes(b []byte) *asm {
	a.b = append(a.b, opBinBytes)
	a.b = binary.LittleEndian.AppendUint32(a.b, uint32(len(b)))
	a.b = append(a.b, b...)
	return a
}

func (a *asm) int(v int) *asm {
	switch {
	case v >= 0 && v < 256:
		a.b = append(a.b, opBinInt1, byte(v))
	case v >= 0 && v < 65536:
		a.b = append(a.b, opBinInt2)
		a.b = binary.LittleEndian.AppendUint16(a.b, uint16(v))
	default:
		a.b = append(a.b, opBinInt)
		a.b = binary.LittleEndian.AppendUint32(a.b, uint32(int32(v)))
	}
	return a
}

// long pushes a big integer with LONG1.
func (a *asm) long(v *big.Int) *asm {
	be := v.Bytes()
	le := make([]byte, len(be)+1)
	for i := range be {
		le[i] = be[len(be)-1-i]
	}
	if len(le) > 1 && le[len(le)-2]&0x80 == 0 {
		le = le[:len(le)-1]
	}
	a.b = append(a.b, opLong1, byte(len(le)))
	a.b = append(a.b, le...)
	return a
}

// global pushes module.name with the text GLOBAL opcode.
func (a *asm) global(mod, name string) *asm {
	a.b = append(a.b, opGlobal)
	a.b = append(a.b, mod+"\n"+name+"\n"...)
	return a
}

// stackGlobal pushes module.name with STACK_GLOBAL.
func (a *asm) stackGlobal(mod, name string) *asm {
	return a.str(mod).str(name).op(opStackGlobal)
}

func (a *asm) binput(i byte) *asm { return a.op(opBinPut, i) }
func (a *asm) binget(i byte) *asm { return a.op(opBinGet, i) }

func (a *asm) frame(n uint64) *asm {
	a.b = append(a.b, opFrame)
	a.b = binary.LittleEndian.AppendUint64(a.b, n)
	return a
}

func (a *asm) binbytes8(n uint64) *asm {
	a.b = append(a.b, opBinBytes8)
	a.b = binary.LittleEndian.AppendUint64(a.b, n)
	return a
}

func (a *asm) stop() []byte { return append(a.b, opStop) }

// legacyTorch assembles a legacy torch.save file around the object pickle
// obj, whose persistent ids reference storages; data holds each listed
// storage's element count and bytes.
func legacyTorch(magic []byte, obj []byte, keys []string, numel []int64, data [][]byte) []byte {
	var out []byte
	if magic == nil {
		magic = newAsm(2).long(legacyMagic).stop()
	}
	out = append(out, magic...)
	out = append(out, newAsm(2).int(legacyProtocolVersion).stop()...)
	out = append(out, sysInfoPickle()...)
	out = append(out, obj...)
	k := newAsm(2).op(opEmptyList, opMark)
	for _, key := range keys {
		k.ustr(key)
	}
	out = append(out, k.op(opAppends).stop()...)
	for i := range keys {
		out = binary.LittleEndian.AppendUint64(out, uint64(numel[i]))
		out = append(out, data[i]...)
	}
	return out
}

func sysInfoPickle() []byte {
	return newAsm(2).op(opEmptyDict, opMark).
		ustr("protocol_version").int(legacyProtocolVersion).
		ustr("little_endian").op(opNewTrue).
		ustr("type_sizes").op(opEmptyDict, opMark).ustr("short").int(2).ustr("int").int(4).ustr("long").int(4).op(opSetItems).
		op(opSetItems).stop()
}

// storagePickle is the object pickle of a nested blob: one persistent id
// for a storage of the given type and size.
func storagePickle(typ, key string, numel int) []byte {
	return newAsm(2).op(opMark).ustr("storage").global("torch", typ).ustr(key).ustr("cpu").int(numel).op(opNone, opTuple, opBinPersID).stop()
}

// floatBlob is a nested torch file holding a FloatStorage of n elements.
func floatBlob(n int) []byte {
	data := make([]byte, 4*n)
	for i := range data {
		data[i] = byte(i)
	}
	return legacyTorch(nil, storagePickle("FloatStorage", "7", n), []string{"7"}, []int64{int64(n)}, [][]byte{data})
}
