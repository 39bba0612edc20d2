package pickle

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/reprolab/repro/internal/digest"
)

// Value is a node of the inert object graph the decoder builds. It is one of
//
//	None, bool, int64, *big.Int, float64, string, *Bytes, Tuple, *List,
//	*Dict, *Set, *Global, *Object, *Storage, *Tensor, *Parameter,
//	*Persistent, *NumpyDtype, *NumpyScalar
//
// No Value refers to executable code: a global is only a name, and a call
// of a global without an inert implementation is recorded as an *Object.
type Value = any

// None is Python's None.
type None struct{}

// Bytes is a bytes (or, with Mutable set, bytearray) value. Data aliases the
// decoded input where possible; it must not be modified.
type Bytes struct {
	Data    []byte
	Offset  int64 // offset of Data in the outermost input, -1 when built
	Mutable bool
}

// Tuple is a Python tuple.
type Tuple []Value

// List is a Python list.
type List struct{ Items []Value }

// Dict is a Python dict or collections.OrderedDict. Keys keep insertion
// order; assigning an existing key replaces its value in place, as Python
// does.
type Dict struct {
	Ordered bool // collections.OrderedDict
	Keys    []Value
	Values  []Value
	Attrs   *Dict // attributes set by BUILD on an OrderedDict, or nil
	index   map[string]int
}

// Len returns the number of entries.
func (d *Dict) Len() int { return len(d.Keys) }

// Get returns the value stored under the string key k.
func (d *Dict) Get(k string) (Value, bool) {
	if d == nil {
		return nil, false
	}
	i, ok := d.index["s"+k]
	if !ok {
		return nil, false
	}
	return d.Values[i], true
}

// set assigns d[k] = v with Python's key equality. The key's canonical
// form is built only if its size fits room (else a *keyBudgetError); set
// returns that size, the memory a caller must account for.
func (d *Dict) set(k, v Value, room int64) (int, error) {
	ck, err := boundedKey(k, room)
	if err != nil {
		return 0, err
	}
	if d.index == nil {
		d.index = make(map[string]int)
	}
	if i, ok := d.index[ck]; ok {
		d.Values[i] = v
		return len(ck), nil
	}
	d.index[ck] = len(d.Keys)
	d.Keys = append(d.Keys, k)
	d.Values = append(d.Values, v)
	return len(ck), nil
}

// StringKeys returns the keys if all of them are strings.
func (d *Dict) StringKeys() ([]string, bool) {
	ks := make([]string, len(d.Keys))
	for i, k := range d.Keys {
		s, ok := k.(string)
		if !ok {
			return nil, false
		}
		ks[i] = s
	}
	return ks, true
}

// Set is a Python set or frozenset.
type Set struct {
	Frozen bool
	Items  []Value
	index  map[string]struct{}
}

func (s *Set) add(v Value, room int64) (int, error) {
	ck, err := boundedKey(v, room)
	if err != nil {
		return 0, err
	}
	if s.index == nil {
		s.index = make(map[string]struct{})
	}
	if _, ok := s.index[ck]; !ok {
		s.index[ck] = struct{}{}
		s.Items = append(s.Items, v)
	}
	return len(ck), nil
}

// Has reports whether the string s is a member.
func (s *Set) Has(str string) bool {
	if s == nil {
		return false
	}
	_, ok := s.index["s"+str]
	return ok
}

// Global is a reference to module.name. It is never resolved to code.
type Global struct {
	Module  string
	Name    string
	Allowed bool // allowed by the profile in use
	kind    globalKind
	impl    *impl
}

func (g *Global) String() string { return g.Module + "." + g.Name }

// Object is the inert result of constructing or calling a global that has no
// dedicated inert implementation: NEWOBJ, NEWOBJ_EX, INST, OBJ or a REDUCE.
type Object struct {
	Class  *Global
	Func   Value // callable when it is not a global (REDUCE on a computed value)
	How    string
	Args   Tuple
	Kwargs *Dict
	State  Value // merged BUILD state, or nil
}

// Persistent is a persistent-class record: the argument of
// torch_utils.persistence._reconstruct_persistent_obj. Unpickling it with
// Python would execute ModuleSrc; the decoder only records it.
type Persistent struct {
	Type         string
	Version      int64
	ClassName    string
	ModuleSrc    string
	SourceSHA256 digest.SHA256
	State        Value
}

// NumpyDtype is numpy.dtype(Name, align, copy) with BUILD state applied.
type NumpyDtype struct {
	Name      string
	ByteOrder string // "<", ">", "|" or "=" once BUILD ran; "" before
	State     Tuple
}

// NumpyScalar is numpy.core.multiarray.scalar(dtype, data).
type NumpyScalar struct {
	Dtype *NumpyDtype
	Data  []byte
}

// Number returns the scalar as float64, int64 or bool when the dtype is a
// plain numeric one.
func (s *NumpyScalar) Number() (Value, bool) {
	if s.Dtype == nil {
		return nil, false
	}
	le := s.Dtype.ByteOrder != ">"
	u := func() uint64 {
		var x uint64
		for i := range s.Data {
			j := i
			if le {
				j = len(s.Data) - 1 - i
			}
			x = x<<8 | uint64(s.Data[j])
		}
		return x
	}
	k, n := numpyKind(s.Dtype.Name)
	if n == 0 || len(s.Data) != n {
		return nil, false
	}
	switch k {
	case 'f':
		switch n {
		case 8:
			return math.Float64frombits(u()), true
		case 4:
			return float64(math.Float32frombits(uint32(u()))), true
		}
	case 'i':
		shift := 64 - 8*n
		return int64(u()<<shift) >> shift, true
	case 'u':
		if v := u(); v <= math.MaxInt64 {
			return int64(v), true
		}
	case 'b':
		return s.Data[0] != 0, true
	}
	return nil, false
}

// numpyKind parses the dtype names numpy pickles ("f8", "i4", "b1", ...).
func numpyKind(name string) (kind byte, size int) {
	if len(name) != 2 || !strings.ContainsRune("fiub", rune(name[0])) {
		return 0, 0
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil {
		return 0, 0
	}
	switch {
	case name[0] == 'f' && (n == 4 || n == 8),
		(name[0] == 'i' || name[0] == 'u') && (n == 1 || n == 2 || n == 4 || n == 8),
		name[0] == 'b' && n == 1:
		return name[0], n
	}
	return 0, 0
}

// maxKeyDepth bounds tuples nested inside dict keys.
const maxKeyDepth = 32

// keyBudgetError refuses a key whose canonical form would not fit the
// decoder's memory budget.
type keyBudgetError struct{ size, room int64 }

func (e *keyBudgetError) Error() string {
	return fmt.Sprintf("a dict key or set item whose canonical form takes %d bytes exceeds the %d bytes left in the decoder's memory budget", e.size, e.room)
}

// boundedKey returns canonicalKey(v) after checking, without building
// it, that its size fits room. Shared sub-tuples (a tuple holding the
// level below twice, nested deep) make the form exponentially larger than
// the pickle; the size is computed with one visit per distinct tuple.
func boundedKey(v Value, room int64) (string, error) {
	n, err := keySize(v, 0, room, map[tupleID]int64{})
	if err != nil {
		return "", err
	}
	if n > room {
		return "", &keyBudgetError{n, room}
	}
	return canonicalKeyMemo(v, 0, map[tupleID]string{})
}

// tupleID identifies a tuple by its backing array and length.
type tupleID struct {
	p *Value
	n int
}

// keySize is len(canonicalKey(v)), saturating just above limit; errors are
// left to canonicalKey, which finds them within the same bound.
func keySize(v Value, depth int, limit int64, memo map[tupleID]int64) (int64, error) {
	if depth > maxKeyDepth {
		return 0, fmt.Errorf("dict key nested deeper than %d", maxKeyDepth)
	}
	switch x := v.(type) {
	case string:
		return 1 + int64(len(x)), nil
	case *Bytes:
		return 1 + int64(len(x.Data)), nil
	case Tuple:
		if len(x) == 0 {
			return 3, nil
		}
		id := tupleID{&x[0], len(x)}
		if n, ok := memo[id]; ok {
			return n, nil
		}
		n := int64(3)
		for _, e := range x {
			k, err := keySize(e, depth+1, limit, memo)
			if err != nil {
				return 0, err
			}
			n += int64(len(strconv.FormatInt(k, 10))) + 1 + k
			if n > limit {
				n = limit + 1 // saturate: the caller refuses it anyway
				break
			}
		}
		memo[id] = n
		return n, nil
	case *NumpyScalar, *Global, *big.Int, float64:
		// small, or bounded by the input: build it
		ck, err := canonicalKey(v, depth)
		return int64(len(ck)), err
	}
	return 24, nil // None, bool, int64: at most 21 bytes; others fail in canonicalKey
}

// canonicalKey encodes a hashable value so that values Python considers
// equal (1, 1.0 and True; equal strings; equal tuples) get equal keys.
// Values Python cannot hash, and objects whose hash an inert decoder cannot
// know, are refused.
func canonicalKey(v Value, depth int) (string, error) {
	return canonicalKeyMemo(v, depth, nil)
}

// canonicalKeyMemo is canonicalKey building each distinct tuple once when
// memo is not nil.
func canonicalKeyMemo(v Value, depth int, memo map[tupleID]string) (string, error) {
	if depth > maxKeyDepth {
		return "", fmt.Errorf("dict key nested deeper than %d", maxKeyDepth)
	}
	switch x := v.(type) {
	case None:
		return "n", nil
	case bool:
		if x {
			return "i1", nil
		}
		return "i0", nil
	case int64:
		return "i" + strconv.FormatInt(x, 10), nil
	case *big.Int:
		return "i" + x.String(), nil
	case float64:
		if math.IsNaN(x) {
			return "", fmt.Errorf("NaN used as a dict key")
		}
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			var b big.Float
			b.SetFloat64(x)
			i, _ := b.Int(nil)
			return "i" + i.String(), nil
		}
		return "f" + strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		return "s" + x, nil
	case *Bytes:
		if x.Mutable {
			return "", &keyError{"bytearray", true}
		}
		return "b" + string(x.Data), nil
	case Tuple:
		var id tupleID
		if memo != nil && len(x) > 0 {
			id = tupleID{&x[0], len(x)}
			if k, ok := memo[id]; ok {
				return k, nil
			}
		}
		var sb strings.Builder
		sb.WriteString("t(")
		for _, e := range x {
			k, err := canonicalKeyMemo(e, depth+1, memo)
			if err != nil {
				return "", err
			}
			sb.WriteString(strconv.Itoa(len(k)))
			sb.WriteByte(':')
			sb.WriteString(k)
		}
		sb.WriteByte(')')
		if memo != nil && len(x) > 0 {
			memo[id] = sb.String()
		}
		return sb.String(), nil
	case *Global:
		return "g" + x.String(), nil
	case *NumpyScalar:
		if n, ok := x.Number(); ok {
			return canonicalKeyMemo(n, depth+1, memo)
		}
	case *List, *Dict:
		return "", &keyError{typeName(v), true}
	case *Set:
		if !x.Frozen {
			return "", &keyError{typeName(v), true}
		}
	}
	return "", &keyError{typeName(v), false}
}

// keyError refuses a dict key or set item. Unhashable values (lists,
// dicts, sets, bytearrays) make CPython fail, so the pickle is malformed;
// other values are hashable in Python, by identity or by a value the
// decoder does not model, so they are outside every profile.
type keyError struct {
	typ        string
	unhashable bool
}

func (e *keyError) Error() string {
	if e.unhashable {
		return fmt.Sprintf("unhashable %s used as a dict key or set item", e.typ)
	}
	return fmt.Sprintf("%s used as a dict key or set item (only plain data keys are supported)", e.typ)
}

// typeName names a value's Python-level type for messages.
func typeName(v Value) string {
	switch x := v.(type) {
	case None:
		return "None"
	case bool:
		return "bool"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *Bytes:
		if x.Mutable {
			return "bytearray"
		}
		return "bytes"
	case Tuple:
		return "tuple"
	case *List:
		return "list"
	case *Dict:
		if x.Ordered {
			return "OrderedDict"
		}
		return "dict"
	case *Set:
		if x.Frozen {
			return "frozenset"
		}
		return "set"
	case *Global:
		return "global " + x.String()
	case *Object:
		switch {
		case x.Class != nil && x.How == "REDUCE":
			return "result of calling " + x.Class.String()
		case x.Class != nil:
			return x.Class.String() + " object"
		}
		return "object"
	case *Storage:
		return "storage"
	case *Tensor:
		return "tensor"
	case *Parameter:
		return "parameter"
	case *Persistent:
		return "persistent " + x.ClassName
	case *NumpyDtype:
		return "numpy dtype"
	case *NumpyScalar:
		return "numpy scalar"
	}
	return fmt.Sprintf("%T", v)
}

// sortedStrings returns the keys of m in order.
func sortedStrings[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
