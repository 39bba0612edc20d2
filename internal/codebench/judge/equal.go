package judge

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"slices"
)

// Equal reports whether a == b in Python for two values that come from
// different processes. Python's rules for the builtin types apply: numbers
// compare by value across int, bool, float and complex (1 == True == 1.0 ==
// 1+0j, and an int equals a float only if their values are exactly equal);
// str never equals bytes; a list never equals a tuple; set and frozenset
// compare by their elements and equal each other; dicts compare by keys and
// values; None equals None. NaN equals nothing, also inside a container,
// because Python's identity shortcut cannot apply across processes. An
// "other" marker equals nothing.
func Equal(a, b Value) bool { return eqAt(a, 0, b, 0) }

func eqAt(a []byte, i int, b []byte, j int) bool {
	i, j = base(a, i), base(b, j)
	if a[i] == tagWrapped || b[j] == tagWrapped {
		return viewEqual(a, i, b, j)
	}
	na, oka := numberAt(a, i)
	nb, okb := numberAt(b, j)
	if oka || okb {
		return oka && okb && numEqual(na, nb)
	}
	ta, tb := a[i], b[j]
	switch ta {
	case tagNone:
		return tb == tagNone
	case tagStr, tagBytes, tagStrHash, tagBytesHash:
		return ta == tb && bytes.Equal(a[i:skip(a, i)], b[j:skip(b, j)])
	case tagList, tagTuple:
		if ta != tb || count(a, i) != count(b, j) {
			return false
		}
		n := count(a, i)
		ia, jb := i+5, j+5
		for k := 0; k < n; k++ {
			if !eqAt(a, ia, b, jb) {
				return false
			}
			ia, jb = skip(a, ia), skip(b, jb)
		}
		return true
	case tagSet, tagFrozenset:
		if (tb != tagSet && tb != tagFrozenset) || count(a, i) != count(b, j) {
			return false
		}
		ka, ok := elementKeys(a, i)
		if !ok {
			return false
		}
		kb, ok := elementKeys(b, j)
		if !ok {
			return false
		}
		for k := range ka {
			if !bytes.Equal(ka[k], kb[k]) {
				return false
			}
		}
		return true
	case tagDict:
		return tb == tagDict && dictEqual(a, i, b, j)
	case tagDigest:
		return tb == tagDigest && bytes.Equal(a[i:i+digestLen], b[j:j+digestLen])
	}
	return false // tagOther
}

// viewEqual compares values of which one is an iterator or a view (mode
// 'i' or 'v'): an iterator equals nothing; a keys or items view equals a
// set, a frozenset or another such view of the same elements.
func viewEqual(a []byte, i int, b []byte, j int) bool {
	ma, ia := wrapped(a, i)
	mb, jb := wrapped(b, j)
	setLike := func(m, t byte) bool { return m == wrapView || (m == 0 && (t == tagSet || t == tagFrozenset)) }
	if !setLike(ma, a[i]) || !setLike(mb, b[j]) {
		return false
	}
	ka, ok := elementKeys(a, ia)
	if !ok {
		return false
	}
	kb, ok := elementKeys(b, jb)
	if !ok || len(ka) != len(kb) {
		return false
	}
	for k := range ka {
		if !bytes.Equal(ka[k], kb[k]) {
			return false
		}
	}
	return true
}

// dictEqual compares two dicts: same number of keys, every key of a matched
// by exactly one key of b, equal values.
func dictEqual(a []byte, i int, b []byte, j int) bool {
	n := count(a, i)
	if n != count(b, j) {
		return false
	}
	if n == 0 {
		return true
	}
	index := make(map[string]int, n)
	for _, p := range pairs(b, j) {
		k, ok := canonKey(b, p)
		if !ok {
			return false
		}
		if _, dup := index[string(k)]; dup {
			return false // not a dict Python can make
		}
		index[string(k)] = skip(b, p)
	}
	used := make(map[string]bool, n)
	for _, p := range pairs(a, i) {
		k, ok := canonKey(a, p)
		if !ok || used[string(k)] {
			return false
		}
		v, found := index[string(k)]
		if !found {
			return false
		}
		used[string(k)] = true
		if !eqAt(a, skip(a, p), b, v) {
			return false
		}
	}
	return true
}

// pairs returns the starts of the keys of the dict at i.
func pairs(b []byte, i int) []int {
	all := items(b, i)
	keys := make([]int, 0, len(all)/2)
	for k := 0; k < len(all); k += 2 {
		keys = append(keys, all[k])
	}
	return keys
}

// elementKeys returns the sorted canonical keys of the elements of a set,
// or false if one of them can equal nothing (NaN, other), cannot be hashed,
// or two are equal.
func elementKeys(b []byte, i int) ([][]byte, bool) {
	its := items(b, i)
	keys := make([][]byte, len(its))
	for k, p := range its {
		key, ok := canonKey(b, p)
		if !ok || !hashable(b, p) {
			return nil, false
		}
		keys[k] = key
	}
	slices.SortFunc(keys, bytes.Compare)
	for k := 1; k < len(keys); k++ {
		if bytes.Equal(keys[k-1], keys[k]) {
			return nil, false
		}
	}
	return keys, true
}

func numEqual(x, y number) bool {
	if x.kind == 'c' || y.kind == 'c' {
		if x.kind == 'c' && y.kind == 'c' {
			return x.f == y.f && x.im == y.im
		}
		if y.kind == 'c' {
			x, y = y, x
		}
		return x.im == 0 && realEqual(number{kind: 'f', f: x.f}, y)
	}
	return realEqual(x, y)
}

func realEqual(x, y number) bool {
	switch {
	case x.kind == 'f' && y.kind == 'f':
		return x.f == y.f
	case x.kind == 'i' && y.kind == 'i':
		if x.big == nil && y.big == nil {
			return x.small == y.small
		}
		return x.bigInt().Cmp(y.bigInt()) == 0
	case x.kind == 'f':
		return intFloatEqual(y, x.f)
	default:
		return intFloatEqual(x, y.f)
	}
}

// intFloatEqual compares an int and a float exactly, as Python does.
func intFloatEqual(n number, f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	if n.big == nil && math.Abs(f) < 1<<63 {
		return int64(f) == n.small
	}
	fi, _ := new(big.Float).SetFloat64(f).Int(nil)
	return fi.Cmp(n.bigInt()) == 0
}

// Canonical keys: two NaN-free plain values are equal in Python exactly when
// their keys are equal. Keys are self-delimiting, so a container's key is its
// items' keys in a row (sorted for sets and dicts).
const (
	keyNone    = 0x01
	keyInt     = 0x02 // sign byte, length, magnitude
	keyReal    = 0x03 // non-integral finite float bits
	keyInf     = 0x04 // sign byte
	keyComplex = 0x05 // real bits, imaginary bits (imaginary part non-zero)
	keyStr     = 0x06
	keyStrHash = 0x07
	keyBytes   = 0x08
	keyBytesH  = 0x09
	keyList    = 0x0a
	keyTuple   = 0x0b
	keyDict    = 0x0c
	keySet     = 0x0d
)

// canonKey returns the key of the value at i, or false if the value holds a
// NaN, an "other" marker, or a set or dict with two equal members.
func canonKey(b []byte, i int) ([]byte, bool) {
	return appendKey(nil, b, i)
}

func appendKey(dst []byte, b []byte, i int) ([]byte, bool) {
	i = base(b, i)
	if n, ok := numberAt(b, i); ok {
		return appendNumberKey(dst, n)
	}
	switch t := b[i]; t {
	case tagNone:
		return append(dst, keyNone), true
	case tagStr, tagBytes, tagStrHash, tagBytesHash:
		k := map[byte]byte{tagStr: keyStr, tagBytes: keyBytes, tagStrHash: keyStrHash, tagBytesHash: keyBytesH}[t]
		return append(append(dst, k), b[i+1:skip(b, i)]...), true
	case tagList, tagTuple:
		k := byte(keyList)
		if t == tagTuple {
			k = keyTuple
		}
		dst = append(dst, k)
		dst = binary.BigEndian.AppendUint32(dst, uint32(count(b, i)))
		var ok bool
		for _, p := range items(b, i) {
			if dst, ok = appendKey(dst, b, p); !ok {
				return nil, false
			}
		}
		return dst, true
	case tagSet, tagFrozenset:
		keys, ok := elementKeys(b, i)
		if !ok {
			return nil, false
		}
		dst = append(dst, keySet)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(keys)))
		for _, k := range keys {
			dst = append(dst, k...)
		}
		return dst, true
	case tagDict:
		its := items(b, i)
		entries := make([][]byte, 0, len(its)/2)
		seen := make(map[string]bool, len(its)/2)
		for k := 0; k < len(its); k += 2 {
			e, ok := appendKey(nil, b, its[k])
			if !ok || seen[string(e)] {
				return nil, false // NaN key, or two equal keys: not a dict Python can make
			}
			seen[string(e)] = true
			if e, ok = appendKey(e, b, its[k+1]); !ok {
				return nil, false
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, bytes.Compare)
		dst = append(dst, keyDict)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(entries)))
		for _, e := range entries {
			dst = append(dst, e...)
		}
		return dst, true
	}
	return nil, false
}

func appendNumberKey(dst []byte, n number) ([]byte, bool) {
	switch n.kind {
	case 'i':
		return appendIntKey(dst, n.bigOrNil(), n.small), true
	case 'c':
		if math.IsNaN(n.f) || math.IsNaN(n.im) {
			return nil, false
		}
		if n.im != 0 {
			dst = append(dst, keyComplex)
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(n.f+0))
			return binary.BigEndian.AppendUint64(dst, math.Float64bits(n.im)), true
		}
	}
	f := n.f
	switch {
	case math.IsNaN(f):
		return nil, false
	case math.IsInf(f, 1):
		return append(dst, keyInf, 1), true
	case math.IsInf(f, -1):
		return append(dst, keyInf, 0), true
	case f == math.Trunc(f):
		if math.Abs(f) < 1<<63 {
			return appendIntKey(dst, nil, int64(f)), true
		}
		fi, _ := new(big.Float).SetFloat64(f).Int(nil)
		return appendIntKey(dst, fi, 0), true
	}
	dst = append(dst, keyReal)
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), true
}

func (n number) bigOrNil() *big.Int { return n.big }

// appendIntKey writes sign, magnitude length and minimal magnitude bytes.
func appendIntKey(dst []byte, x *big.Int, small int64) []byte {
	var sign byte
	var mag []byte
	if x != nil {
		sign = byte(x.Sign() + 1)
		mag = x.Bytes()
	} else {
		u := uint64(small)
		switch {
		case small < 0:
			sign, u = 0, uint64(-small) // -MinInt64 wraps to 1<<63, the right magnitude
		case small == 0:
			sign = 1
		default:
			sign = 2
		}
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], u)
		k := 0
		for k < 8 && buf[k] == 0 {
			k++
		}
		mag = buf[k:]
	}
	dst = append(dst, keyInt, sign)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(mag)))
	return append(dst, mag...)
}
