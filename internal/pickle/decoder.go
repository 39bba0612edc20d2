package pickle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// Decoder limits. Lengths are always checked against the bytes that remain
// (in the current frame, if any) before anything is allocated; these bound
// what the bytes may make the decoder build.
const (
	maxStack      = 1 << 20 // values on the stack
	maxMarks      = 1 << 12 // open MARKs
	maxLine       = 1 << 16 // text-protocol line
	maxLongBytes  = 1 << 12 // LONG1/LONG4 payload
	maxViolations = 64      // violations collected before a scan stops
	baseBudget    = 64 << 20
)

// rules are what one pickle inside a file may contain.
type rules struct {
	what     string      // "top-level pickle", "nested blob", ...
	opcodes  *[256]bool  // allowed opcodes
	calls    bool        // the profile's callable globals and module classes
	storages bool        // the profile's storage types
	persid   persistFunc // persistent_load; nil when BINPERSID is invalid
}

type persistFunc func(m *machine, pid Value) Value

// machine decodes one pickle: from its first opcode up to STOP. It executes
// nothing; every opcode builds or rearranges inert values.
type machine struct {
	s        *session
	r        *rules
	data     []byte
	base     int64 // offset of data[0] in the outermost input
	pos      int
	opStart  int
	op       byte
	frameEnd int // end of the current frame, -1 outside frames
	proto    int
	stack    []Value
	marks    []int
	memo     map[uint64]Value
	err      error
	active   int // opcodes other than PROTO, FRAME, literals and STOP
}

func (s *session) newMachine(data []byte, base int64, r *rules) *machine {
	return &machine{s: s, r: r, data: data, base: base, frameEnd: -1, memo: make(map[uint64]Value)}
}

// fail records a malformed-input error; the first one sticks.
func (m *machine) fail(format string, args ...any) {
	if m.err == nil {
		m.err = &MalformedError{Offset: m.base + int64(m.opStart), Op: opName(m.op), Msg: fmt.Sprintf(format, args...)}
	}
}

// violate records a policy violation; it stops the machine when the session
// is strict or has collected enough.
func (m *machine) violate(format string, args ...any) {
	if err := m.s.violate(m.base+int64(m.opStart), fmt.Sprintf(format, args...)); err != nil && m.err == nil {
		m.err = err
	}
}

func (m *machine) charge(n int64) {
	if m.s.budget -= n; m.s.budget < 0 && m.err == nil {
		m.fail("decoding needs more memory than the decoder allows for this input (limit %d bytes beyond the input)", m.s.budgetTotal)
	}
}

func (m *machine) limit() int {
	if m.frameEnd >= 0 {
		return m.frameEnd
	}
	return len(m.data)
}

// take returns the next n bytes, aliasing the input.
func (m *machine) take(n uint64) ([]byte, bool) {
	left := m.limit() - m.pos
	if n > uint64(left) {
		if m.frameEnd >= 0 {
			m.fail("argument of %d bytes runs past the end of its frame (%d bytes left in the frame)", n, left)
		} else {
			m.fail("length %d exceeds the %d remaining bytes", n, left)
		}
		return nil, false
	}
	b := m.data[m.pos : m.pos+int(n)]
	m.pos += int(n)
	return b, true
}

func (m *machine) u8() (uint64, bool) {
	b, ok := m.take(1)
	if !ok {
		return 0, false
	}
	return uint64(b[0]), true
}

func (m *machine) u16() (uint64, bool) {
	b, ok := m.take(2)
	if !ok {
		return 0, false
	}
	return uint64(binary.LittleEndian.Uint16(b)), true
}

func (m *machine) u32() (uint64, bool) {
	b, ok := m.take(4)
	if !ok {
		return 0, false
	}
	return uint64(binary.LittleEndian.Uint32(b)), true
}

func (m *machine) u64() (uint64, bool) {
	b, ok := m.take(8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// line returns the text up to the next newline, without it.
func (m *machine) line() ([]byte, bool) {
	lim := m.limit()
	end := lim
	if end-m.pos > maxLine+1 {
		end = m.pos + maxLine + 1
	}
	i := bytes.IndexByte(m.data[m.pos:end], '\n')
	if i < 0 {
		if end < lim {
			m.fail("text argument longer than %d bytes", maxLine)
		} else {
			m.fail("text argument without a terminating newline")
		}
		return nil, false
	}
	b := m.data[m.pos : m.pos+i]
	m.pos += i + 1
	return b, true
}

func (m *machine) push(v Value) {
	if len(m.stack) >= maxStack {
		m.fail("more than %d values on the stack", maxStack)
		return
	}
	m.stack = append(m.stack, v)
}

func (m *machine) markBase() int {
	if n := len(m.marks); n > 0 {
		return m.marks[n-1]
	}
	return 0
}

func (m *machine) pop() Value {
	if len(m.stack) <= m.markBase() {
		m.fail("stack underflow")
		return nil
	}
	v := m.stack[len(m.stack)-1]
	m.stack[len(m.stack)-1] = nil
	m.stack = m.stack[:len(m.stack)-1]
	return v
}

func (m *machine) top() Value {
	if len(m.stack) <= m.markBase() {
		m.fail("stack underflow")
		return nil
	}
	return m.stack[len(m.stack)-1]
}

// popMark removes the values above the innermost MARK and the MARK itself
// and returns a copy of those values.
func (m *machine) popMark() []Value {
	n := len(m.marks)
	if n == 0 {
		m.fail("no MARK on the stack")
		return nil
	}
	base := m.marks[n-1]
	m.marks = m.marks[:n-1]
	items := make([]Value, len(m.stack)-base)
	copy(items, m.stack[base:])
	clear(m.stack[base:])
	m.stack = m.stack[:base]
	m.charge(int64(16 * len(items)))
	return items
}

func (m *machine) memoGet(i uint64) {
	v, ok := m.memo[i]
	if !ok {
		m.fail("memo key %d not found", i)
		return
	}
	m.push(v)
}

func (m *machine) memoPut(i uint64) {
	v := m.top()
	if m.err != nil {
		return
	}
	if _, ok := m.memo[i]; !ok {
		m.charge(48)
	}
	m.memo[i] = v
}

func (m *machine) str(b []byte) string {
	if !utf8.Valid(b) {
		m.fail("string is not valid UTF-8")
		return ""
	}
	m.charge(int64(len(b)) + 16)
	return string(b)
}

func (m *machine) bytesVal(b []byte, mutable bool) *Bytes {
	m.charge(48)
	return &Bytes{Data: b, Offset: m.base + int64(m.pos-len(b)), Mutable: mutable}
}

// run decodes up to and including STOP and returns the pickled value.
func (m *machine) run() Value {
	for m.err == nil {
		if m.frameEnd >= 0 && m.pos == m.frameEnd {
			m.frameEnd = -1
		}
		m.opStart = m.pos
		if m.pos >= len(m.data) {
			m.op = 0
			m.fail("pickle ends without STOP")
			break
		}
		m.op = m.data[m.pos]
		m.pos++
		info := &opTable[m.op]
		if info.name == "" {
			m.fail("unknown opcode 0x%02x", m.op)
			break
		}
		if m.op != opProto && info.proto > max(m.proto, 1) {
			m.fail("opcode %s needs protocol %d but the pickle declares protocol %d", info.name, info.proto, m.proto)
			break
		}
		m.s.countOp(m.op)
		if !m.r.opcodes[m.op] {
			m.violate("opcode %s is not allowed in a %s", info.name, m.r.what)
			if m.err != nil {
				break
			}
		}
		if m.op == opStop {
			return m.stop()
		}
		m.exec()
	}
	return nil
}

func (m *machine) stop() Value {
	v := m.pop()
	switch {
	case m.err != nil:
		return nil
	case len(m.stack) != 0 || len(m.marks) != 0:
		m.fail("STOP leaves %d values and %d marks on the stack", len(m.stack), len(m.marks))
	case m.frameEnd >= 0 && m.pos != m.frameEnd:
		m.fail("STOP %d bytes before the end of its frame", m.frameEnd-m.pos)
	}
	if m.err != nil {
		return nil
	}
	return v
}

func (m *machine) exec() {
	op := m.op
	switch op {
	case opProto:
		v, ok := m.u8()
		if !ok {
			return
		}
		if m.opStart != 0 {
			m.fail("PROTO after the first opcode")
		} else if v < 2 || v > highestProtocol {
			m.fail("unsupported pickle protocol %d", v)
		}
		m.proto = int(v)
	case opFrame:
		n, ok := m.u64()
		if !ok {
			return
		}
		if m.frameEnd >= 0 {
			m.fail("FRAME %d bytes before the end of the current frame", m.frameEnd-m.pos)
			return
		}
		if left := uint64(len(m.data) - m.pos); n > left {
			m.fail("frame length %d exceeds the %d remaining bytes", n, left)
			return
		}
		m.frameEnd = m.pos + int(n)
	case opMark:
		if len(m.marks) >= maxMarks {
			m.fail("more than %d nested MARKs", maxMarks)
			return
		}
		m.marks = append(m.marks, len(m.stack))
	case opPop:
		if len(m.stack) > m.markBase() {
			m.pop()
		} else if len(m.marks) > 0 {
			m.popMark()
		} else {
			m.fail("stack underflow")
		}
	case opPopMark:
		m.popMark()
	case opDup:
		if v := m.top(); m.err == nil {
			m.push(v)
		}

	// Literals.
	case opNone:
		m.push(None{})
	case opNewTrue:
		m.push(true)
	case opNewFalse:
		m.push(false)
	case opBinInt:
		if v, ok := m.u32(); ok {
			m.pushInt(int64(int32(uint32(v))))
		}
	case opBinInt1:
		if v, ok := m.u8(); ok {
			m.pushInt(int64(v))
		}
	case opBinInt2:
		if v, ok := m.u16(); ok {
			m.pushInt(int64(v))
		}
	case opLong1:
		if n, ok := m.u8(); ok {
			m.long(n)
		}
	case opLong4:
		if n, ok := m.u32(); ok {
			if int32(uint32(n)) < 0 {
				m.fail("negative LONG4 length")
				return
			}
			m.long(n)
		}
	case opInt:
		b, ok := m.line()
		if !ok {
			return
		}
		switch string(b) {
		case "00":
			m.push(false)
		case "01":
			m.push(true)
		default:
			m.textInt(b)
		}
	case opLong:
		b, ok := m.line()
		if !ok {
			return
		}
		if n := len(b); n > 0 && b[n-1] == 'L' {
			b = b[:n-1]
		}
		m.textInt(b)
	case opBinFloat:
		if b, ok := m.take(8); ok {
			m.charge(16)
			m.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
		}
	case opFloat:
		b, ok := m.line()
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil && !isRangeErr(err) {
			m.fail("invalid FLOAT literal %q", clip(string(b)))
			return
		}
		m.charge(16)
		m.push(f)
	case opBinUnicode:
		if n, ok := m.u32(); ok {
			m.unicode(n)
		}
	case opShortBinUnicode:
		if n, ok := m.u8(); ok {
			m.unicode(n)
		}
	case opBinUnicode8:
		if n, ok := m.u64(); ok {
			m.unicode(n)
		}
	case opBinString:
		if n, ok := m.u32(); ok {
			if int32(uint32(n)) < 0 {
				m.fail("negative BINSTRING length")
				return
			}
			m.unicode(n)
		}
	case opShortBinString:
		if n, ok := m.u8(); ok {
			m.unicode(n)
		}
	case opString:
		b, ok := m.line()
		if !ok {
			return
		}
		s, err := decodeQuoted(b)
		if err != nil {
			m.fail("%v", err)
			return
		}
		m.push(m.str(s))
	case opUnicode:
		b, ok := m.line()
		if !ok {
			return
		}
		s, err := decodeRawUnicodeEscape(b)
		if err != nil {
			m.fail("%v", err)
			return
		}
		m.charge(int64(len(s)) + 16)
		m.push(s)
	case opBinBytes:
		if n, ok := m.u32(); ok {
			m.bytesOp(n, false)
		}
	case opShortBinBytes:
		if n, ok := m.u8(); ok {
			m.bytesOp(n, false)
		}
	case opBinBytes8:
		if n, ok := m.u64(); ok {
			m.bytesOp(n, false)
		}
	case opByteArray8:
		if n, ok := m.u64(); ok {
			m.bytesOp(n, true)
		}
	case opNextBuffer:
		m.fail("out-of-band buffers (NEXT_BUFFER) are not supported")
	case opReadOnlyBuffer:
		v := m.top()
		if m.err != nil {
			return
		}
		b, ok := v.(*Bytes)
		if !ok {
			m.fail("READONLY_BUFFER on a %s", typeName(v))
			return
		}
		m.stack[len(m.stack)-1] = &Bytes{Data: b.Data, Offset: b.Offset}

	// Containers.
	case opEmptyTuple:
		m.push(Tuple{})
	case opTuple1, opTuple2, opTuple3:
		n := int(op-opTuple1) + 1
		if len(m.stack)-m.markBase() < n {
			m.fail("stack underflow")
			return
		}
		t := make(Tuple, n)
		copy(t, m.stack[len(m.stack)-n:])
		clear(m.stack[len(m.stack)-n:])
		m.stack = m.stack[:len(m.stack)-n]
		m.charge(int64(24 + 16*n))
		m.push(t)
	case opTuple:
		items := m.popMark()
		if m.err == nil {
			m.charge(24)
			m.push(Tuple(items))
		}
	case opEmptyList:
		m.charge(48)
		m.push(&List{})
	case opList:
		items := m.popMark()
		if m.err == nil {
			m.charge(48)
			m.push(&List{Items: items})
		}
	case opAppend:
		v := m.pop()
		m.appendItems([]Value{v})
	case opAppends:
		items := m.popMark()
		m.appendItems(items)
	case opEmptyDict:
		m.charge(64)
		m.push(&Dict{})
	case opDict:
		items := m.popMark()
		if m.err != nil {
			return
		}
		d := &Dict{}
		m.charge(64)
		m.setItems(d, items)
		m.push(d)
	case opSetItem:
		v := m.pop()
		k := m.pop()
		if m.err == nil {
			m.setItemsOn([]Value{k, v})
		}
	case opSetItems:
		items := m.popMark()
		if m.err == nil {
			m.setItemsOn(items)
		}
	case opEmptySet:
		m.charge(64)
		m.push(&Set{})
	case opAddItems:
		items := m.popMark()
		if m.err != nil {
			return
		}
		t := m.top()
		set, ok := t.(*Set)
		if m.err != nil {
			return
		}
		if !ok || set.Frozen {
			m.violate("ADDITEMS on a %s", typeName(t))
			return
		}
		m.addToSet(set, items)
	case opFrozenSet:
		items := m.popMark()
		if m.err != nil {
			return
		}
		set := &Set{Frozen: true}
		m.charge(64)
		m.addToSet(set, items)
		m.push(set)

	// Memo.
	case opMemoize:
		m.memoPut(uint64(len(m.memo)))
	case opBinPut:
		if i, ok := m.u8(); ok {
			m.memoPut(i)
		}
	case opLongBinPut:
		if i, ok := m.u32(); ok {
			m.memoPut(i)
		}
	case opPut:
		if i, ok := m.textIndex(); ok {
			m.memoPut(i)
		}
	case opBinGet:
		if i, ok := m.u8(); ok {
			m.memoGet(i)
		}
	case opLongBinGet:
		if i, ok := m.u32(); ok {
			m.memoGet(i)
		}
	case opGet:
		if i, ok := m.textIndex(); ok {
			m.memoGet(i)
		}

	// Globals, calls and objects.
	case opGlobal:
		mod, ok1 := m.line()
		name, ok2 := m.line()
		if ok1 && ok2 {
			m.active++
			m.push(m.global(m.str(mod), m.str(name)))
		}
	case opStackGlobal:
		name := m.pop()
		mod := m.pop()
		if m.err != nil {
			return
		}
		ms, ok1 := mod.(string)
		ns, ok2 := name.(string)
		if !ok1 || !ok2 {
			m.fail("STACK_GLOBAL needs two strings, got %s and %s", typeName(mod), typeName(name))
			return
		}
		m.active++
		m.push(m.global(ms, ns))
	case opReduce:
		args := m.pop()
		f := m.pop()
		if m.err == nil {
			m.active++
			m.push(m.call(f, args))
		}
	case opNewObj:
		args := m.pop()
		cls := m.pop()
		if m.err == nil {
			m.active++
			m.push(m.instantiate(cls, args, nil, "NEWOBJ"))
		}
	case opNewObjEx:
		kwargs := m.pop()
		args := m.pop()
		cls := m.pop()
		if m.err != nil {
			return
		}
		kw, ok := kwargs.(*Dict)
		if !ok {
			m.fail("NEWOBJ_EX keyword arguments are a %s, not a dict", typeName(kwargs))
			return
		}
		m.active++
		m.push(m.instantiate(cls, args, kw, "NEWOBJ_EX"))
	case opInst:
		mod, ok1 := m.line()
		name, ok2 := m.line()
		if !ok1 || !ok2 {
			return
		}
		items := m.popMark()
		if m.err != nil {
			return
		}
		m.active++
		cls := m.global(m.str(mod), m.str(name))
		if m.err == nil {
			m.push(m.instantiate(cls, Tuple(items), nil, "INST"))
		}
	case opObj:
		items := m.popMark()
		if m.err != nil {
			return
		}
		if len(items) == 0 {
			m.fail("OBJ without a class")
			return
		}
		m.active++
		m.push(m.instantiate(items[0], Tuple(items[1:]), nil, "OBJ"))
	case opBuild:
		state := m.pop()
		inst := m.top()
		if m.err == nil {
			m.active++
			m.build(inst, state)
		}
	case opPersID:
		b, ok := m.line()
		if ok {
			m.active++
			m.persistent(m.str(b))
		}
	case opBinPersID:
		pid := m.pop()
		if m.err == nil {
			m.active++
			m.persistent(pid)
		}
	case opExt1, opExt2, opExt4:
		m.fail("extension registry codes (%s) are not supported", opName(op))
	default:
		m.fail("opcode %s is not implemented", opName(op))
	}
}

func (m *machine) pushInt(v int64) {
	m.charge(16)
	m.push(v)
}

func (m *machine) long(n uint64) {
	if n > maxLongBytes {
		m.fail("integer of %d bytes is longer than the decoder's limit of %d", n, maxLongBytes)
		return
	}
	b, ok := m.take(n)
	if !ok {
		return
	}
	m.charge(int64(n) + 16)
	m.push(decodeLong(b))
}

// decodeLong reads a little-endian two's-complement integer.
func decodeLong(b []byte) Value {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 {
		var u uint64
		for i := len(b) - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		shift := uint(64 - 8*len(b))
		return int64(u<<shift) >> shift
	}
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	if v.IsInt64() {
		return v.Int64()
	}
	return v
}

func (m *machine) textInt(b []byte) {
	s := string(b)
	if len(s) > 0 && (s[0] == '+') {
		s = s[1:]
	}
	if !isDecimal(s) {
		m.fail("invalid integer literal %q", clip(string(b)))
		return
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		m.pushInt(v)
		return
	}
	if len(s) > maxLongBytes {
		m.fail("integer literal longer than %d digits", maxLongBytes)
		return
	}
	v, _ := new(big.Int).SetString(s, 10)
	m.charge(int64(len(s)) + 16)
	m.push(v)
}

func isDecimal(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (m *machine) textIndex() (uint64, bool) {
	b, ok := m.line()
	if !ok {
		return 0, false
	}
	if !isDecimal(string(b)) || b[0] == '-' {
		m.fail("invalid memo index %q", clip(string(b)))
		return 0, false
	}
	i, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		m.fail("invalid memo index %q", clip(string(b)))
		return 0, false
	}
	return i, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (m *machine) unicode(n uint64) {
	b, ok := m.take(n)
	if !ok {
		return
	}
	m.push(m.str(b))
}

func (m *machine) bytesOp(n uint64, mutable bool) {
	b, ok := m.take(n)
	if !ok {
		return
	}
	m.push(m.bytesVal(b, mutable))
}

func (m *machine) appendItems(items []Value) {
	t := m.top()
	if m.err != nil {
		return
	}
	l, ok := t.(*List)
	if !ok {
		m.violate("APPEND to a %s (only lists may be appended to)", typeName(t))
		return
	}
	m.charge(int64(16 * len(items)))
	l.Items = append(l.Items, items...)
}

func (m *machine) setItemsOn(items []Value) {
	t := m.top()
	if m.err != nil {
		return
	}
	d, ok := t.(*Dict)
	if !ok {
		m.violate("SETITEM on a %s (only dicts may take items)", typeName(t))
		return
	}
	m.setItems(d, items)
}

func (m *machine) setItems(d *Dict, items []Value) {
	if len(items)%2 != 0 {
		m.fail("odd number of items for a dict")
		return
	}
	m.charge(int64(64 * len(items) / 2))
	for i := 0; i < len(items) && m.err == nil; i += 2 {
		n, err := d.set(items[i], items[i+1], m.s.budget)
		if err != nil {
			m.keyFailure(err)
		}
		m.charge(int64(n))
	}
}

func (m *machine) addToSet(s *Set, items []Value) {
	m.charge(int64(48 * len(items)))
	for _, it := range items {
		n, err := s.add(it, m.s.budget)
		if err != nil {
			m.keyFailure(err)
			if m.err != nil {
				return
			}
		}
		m.charge(int64(n))
	}
}

// keyFailure reports a refused dict key or set item: malformed when CPython
// could not hash it either, a violation otherwise (the item is dropped).
func (m *machine) keyFailure(err error) {
	if be, ok := err.(*keyBudgetError); ok {
		m.fail("decoding needs more memory than the decoder allows for this input (limit %d bytes beyond the input): %v", m.s.budgetTotal, be)
		return
	}
	if ke, ok := err.(*keyError); ok && !ke.unhashable {
		m.violate("%v", err)
		return
	}
	m.fail("%v", err)
}

func (m *machine) persistent(pid Value) {
	if m.r.persid == nil {
		m.fail("persistent id in a %s, which has no persistent loader", m.r.what)
		return
	}
	v := m.r.persid(m, pid)
	if m.err == nil {
		m.push(v)
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
