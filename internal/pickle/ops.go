package pickle

// Opcodes of pickle protocols 0 to 5, as CPython's pickle module defines
// them. The decoder knows every one of them; a profile decides which may
// appear in an accepted file.
const (
	opMark           byte = '('
	opStop           byte = '.'
	opPop            byte = '0'
	opPopMark        byte = '1'
	opDup            byte = '2'
	opFloat          byte = 'F'
	opInt            byte = 'I'
	opBinInt         byte = 'J'
	opBinInt1        byte = 'K'
	opLong           byte = 'L'
	opBinInt2        byte = 'M'
	opNone           byte = 'N'
	opPersID         byte = 'P'
	opBinPersID      byte = 'Q'
	opReduce         byte = 'R'
	opString         byte = 'S'
	opBinString      byte = 'T'
	opShortBinString byte = 'U'
	opUnicode        byte = 'V'
	opBinUnicode     byte = 'X'
	opAppend         byte = 'a'
	opBuild          byte = 'b'
	opGlobal         byte = 'c'
	opDict           byte = 'd'
	opEmptyDict      byte = '}'
	opAppends        byte = 'e'
	opGet            byte = 'g'
	opBinGet         byte = 'h'
	opInst           byte = 'i'
	opLongBinGet     byte = 'j'
	opList           byte = 'l'
	opEmptyList      byte = ']'
	opObj            byte = 'o'
	opPut            byte = 'p'
	opBinPut         byte = 'q'
	opLongBinPut     byte = 'r'
	opSetItem        byte = 's'
	opTuple          byte = 't'
	opEmptyTuple     byte = ')'
	opSetItems       byte = 'u'
	opBinFloat       byte = 'G'

	opProto         byte = 0x80
	opNewObj        byte = 0x81
	opExt1          byte = 0x82
	opExt2          byte = 0x83
	opExt4          byte = 0x84
	opTuple1        byte = 0x85
	opTuple2        byte = 0x86
	opTuple3        byte = 0x87
	opNewTrue       byte = 0x88
	opNewFalse      byte = 0x89
	opLong1         byte = 0x8a
	opLong4         byte = 0x8b
	opBinBytes      byte = 'B'
	opShortBinBytes byte = 'C'

	opShortBinUnicode byte = 0x8c
	opBinUnicode8     byte = 0x8d
	opBinBytes8       byte = 0x8e
	opEmptySet        byte = 0x8f
	opAddItems        byte = 0x90
	opFrozenSet       byte = 0x91
	opNewObjEx        byte = 0x92
	opStackGlobal     byte = 0x93
	opMemoize         byte = 0x94
	opFrame           byte = 0x95

	opByteArray8     byte = 0x96
	opNextBuffer     byte = 0x97
	opReadOnlyBuffer byte = 0x98
)

// opInfo describes one opcode: its name as pickletools spells it and the
// protocol that introduced it.
type opInfo struct {
	name  string
	proto int
}

// opTable is indexed by opcode byte; an empty name marks an unknown opcode.
var opTable = func() (t [256]opInfo) {
	for _, o := range []struct {
		code  byte
		name  string
		proto int
	}{
		{opMark, "MARK", 0}, {opStop, "STOP", 0}, {opPop, "POP", 0}, {opPopMark, "POP_MARK", 1},
		{opDup, "DUP", 0}, {opFloat, "FLOAT", 0}, {opInt, "INT", 0}, {opBinInt, "BININT", 1},
		{opBinInt1, "BININT1", 1}, {opLong, "LONG", 0}, {opBinInt2, "BININT2", 1}, {opNone, "NONE", 0},
		{opPersID, "PERSID", 0}, {opBinPersID, "BINPERSID", 1}, {opReduce, "REDUCE", 0},
		{opString, "STRING", 0}, {opBinString, "BINSTRING", 1}, {opShortBinString, "SHORT_BINSTRING", 1},
		{opUnicode, "UNICODE", 0}, {opBinUnicode, "BINUNICODE", 1}, {opAppend, "APPEND", 0},
		{opBuild, "BUILD", 0}, {opGlobal, "GLOBAL", 0}, {opDict, "DICT", 0}, {opEmptyDict, "EMPTY_DICT", 1},
		{opAppends, "APPENDS", 1}, {opGet, "GET", 0}, {opBinGet, "BINGET", 1}, {opInst, "INST", 0},
		{opLongBinGet, "LONG_BINGET", 1}, {opList, "LIST", 0}, {opEmptyList, "EMPTY_LIST", 1},
		{opObj, "OBJ", 1}, {opPut, "PUT", 0}, {opBinPut, "BINPUT", 1}, {opLongBinPut, "LONG_BINPUT", 1},
		{opSetItem, "SETITEM", 0}, {opTuple, "TUPLE", 0}, {opEmptyTuple, "EMPTY_TUPLE", 1},
		{opSetItems, "SETITEMS", 1}, {opBinFloat, "BINFLOAT", 1},
		{opProto, "PROTO", 2}, {opNewObj, "NEWOBJ", 2}, {opExt1, "EXT1", 2}, {opExt2, "EXT2", 2},
		{opExt4, "EXT4", 2}, {opTuple1, "TUPLE1", 2}, {opTuple2, "TUPLE2", 2}, {opTuple3, "TUPLE3", 2},
		{opNewTrue, "NEWTRUE", 2}, {opNewFalse, "NEWFALSE", 2}, {opLong1, "LONG1", 2}, {opLong4, "LONG4", 2},
		{opBinBytes, "BINBYTES", 3}, {opShortBinBytes, "SHORT_BINBYTES", 3},
		{opShortBinUnicode, "SHORT_BINUNICODE", 4}, {opBinUnicode8, "BINUNICODE8", 4},
		{opBinBytes8, "BINBYTES8", 4}, {opEmptySet, "EMPTY_SET", 4}, {opAddItems, "ADDITEMS", 4},
		{opFrozenSet, "FROZENSET", 4}, {opNewObjEx, "NEWOBJ_EX", 4}, {opStackGlobal, "STACK_GLOBAL", 4},
		{opMemoize, "MEMOIZE", 4}, {opFrame, "FRAME", 4},
		{opByteArray8, "BYTEARRAY8", 5}, {opNextBuffer, "NEXT_BUFFER", 5}, {opReadOnlyBuffer, "READONLY_BUFFER", 5},
	} {
		t[o.code] = opInfo{o.name, o.proto}
	}
	return t
}()

// opByName maps pickletools names back to opcodes, for profiles.
var opByName = func() map[string]byte {
	m := make(map[string]byte)
	for i, o := range opTable {
		if o.name != "" {
			m[o.name] = byte(i)
		}
	}
	return m
}()

// highestProtocol is the newest pickle protocol the decoder understands.
const highestProtocol = 5

func opName(op byte) string {
	if n := opTable[op].name; n != "" {
		return n
	}
	return "unknown"
}
