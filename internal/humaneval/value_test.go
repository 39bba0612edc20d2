package humaneval

import (
	"encoding/binary"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/digest"
)

// Builders of encoded values for tests; they write what the harness's
// encoder writes.

type v []byte

func none() v        { return v{tagNone} }
func boolv(b bool) v { return map[bool]v{true: {tagTrue}, false: {tagFalse}}[b] }
func intv(x int64) v { return bigv(big.NewInt(x)) }

func bigv(x *big.Int) v {
	n := (x.BitLen() + 8) / 8
	raw := make([]byte, n)
	if x.Sign() >= 0 {
		x.FillBytes(raw)
	} else {
		// two's complement: 2^(8n) + x
		t := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n)), x)
		t.FillBytes(raw)
	}
	return append(lenv(tagInt, n), raw...)
}

// paddedInt encodes x in exactly n bytes, as the harness's bulk path does.
func paddedInt(x int64, n int) v {
	raw := make([]byte, 8)
	binary.BigEndian.PutUint64(raw, uint64(x))
	pad := byte(0)
	if x < 0 {
		pad = 0xff
	}
	for len(raw) < n {
		raw = append([]byte{pad}, raw...)
	}
	return append(lenv(tagInt, n), raw[len(raw)-n:]...)
}

func lenv(tag byte, n int) v {
	b := v{tag}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func floatv(f float64) v {
	return binary.BigEndian.AppendUint64(v{tagFloat}, math.Float64bits(f))
}

func complexv(re, im float64) v {
	b := binary.BigEndian.AppendUint64(v{tagComplex}, math.Float64bits(re))
	return binary.BigEndian.AppendUint64(b, math.Float64bits(im))
}

func strv(s string) v   { return textv(tagStr, tagStrHash, s) }
func bytesv(s string) v { return textv(tagBytes, tagBytesHash, s) }

func textv(full, hashed byte, s string) v {
	if len(s) > HashThreshold {
		h := digest.Of([]byte(s))
		return append(lenv(hashed, len(s)), h[:]...)
	}
	return append(lenv(full, len(s)), s...)
}

func seqv(tag byte, items ...v) v {
	b := lenv(tag, len(items))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func listv(items ...v) v      { return seqv(tagList, items...) }
func tuplev(items ...v) v     { return seqv(tagTuple, items...) }
func setv(items ...v) v       { return seqv(tagSet, items...) }
func frozensetv(items ...v) v { return seqv(tagFrozenset, items...) }
func otherv(name string) v    { return append(lenv(tagOther, len(name)), name...) }

// dictv takes key, value, key, value, ...
func dictv(kv ...v) v {
	b := lenv(tagDict, len(kv)/2)
	for _, it := range kv {
		b = append(b, it...)
	}
	return b
}

func mustParse(t testing.TB, b v) Value {
	t.Helper()
	val, err := ParseValue(b, DefaultBounds)
	if err != nil {
		t.Fatalf("ParseValue(%x): %v", []byte(b), err)
	}
	return val
}

func TestParseValueAccepts(t *testing.T) {
	huge, _ := new(big.Int).SetString(strings.Repeat("9", 5000), 10)
	for _, b := range []v{
		none(), boolv(true), intv(0), intv(-1), intv(1 << 62), bigv(huge), bigv(new(big.Int).Neg(huge)),
		floatv(math.NaN()), floatv(math.Inf(-1)), complexv(1, -2), strv(""), strv("héllo"),
		strv(strings.Repeat("x", HashThreshold+1)), bytesv("\x00\xff"), listv(), tuplev(intv(1), strv("a")),
		dictv(strv("k"), listv(intv(1))), setv(intv(1), intv(2)), frozensetv(), otherv("MyInt"),
		paddedInt(-5, 8), paddedInt(7, 12),
	} {
		mustParse(t, b)
	}
}

func TestParseValueRejects(t *testing.T) {
	deep := v{}
	for i := 0; i < 100; i++ {
		deep = append(deep, lenv(tagList, 1)...)
	}
	deep = append(deep, tagNone)
	for name, b := range map[string]v{
		"empty":            {},
		"unknown tag":      {'?'},
		"trailing":         append(none(), 0),
		"short float":      {tagFloat, 1, 2},
		"zero-length int":  lenv(tagInt, 0),
		"int past end":     append(lenv(tagInt, 9), 1),
		"list count lies":  lenv(tagList, 1000),
		"dict half pair":   append(lenv(tagDict, 1), none()...),
		"long str in full": append(lenv(tagStr, HashThreshold+1), strings.Repeat("x", HashThreshold+1)...),
		"short str hashed": append(lenv(tagStrHash, 3), make([]byte, 32)...),
		"too deep":         deep,
		"huge count":       {tagList, 0xff, 0xff, 0xff, 0xff},
		"long type name":   append(lenv(tagOther, 300), strings.Repeat("x", 300)...),
	} {
		if _, err := ParseValue(b, DefaultBounds); err == nil {
			t.Errorf("%s: accepted %x", name, []byte(b))
		}
	}
}

func FuzzParseValue(f *testing.F) {
	for _, b := range []v{
		none(), intv(-300), floatv(0.5), listv(intv(1), floatv(1)), dictv(intv(1), setv(strv("a"))),
		tuplev(frozensetv(intv(1)), complexv(0, 1)), strv(strings.Repeat("y", 5000)),
	} {
		f.Add([]byte(b), []byte(listv(b)))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, errA := ParseValue(a, DefaultBounds)
		vb, errB := ParseValue(b, DefaultBounds)
		if errA == nil {
			_ = va.Kind()
			_, _ = canonKey(va, 0)
			_, _ = toArray(va)
			isFloats(va)
		}
		if errA == nil && errB == nil {
			if Equal(va, vb) != Equal(vb, va) {
				t.Fatalf("Equal not symmetric for %x and %x", a, b)
			}
			ka, okA := canonKey(va, 0)
			kb, okB := canonKey(vb, 0)
			if okA && okB && (string(ka) == string(kb)) != Equal(va, vb) {
				t.Fatalf("canonical keys and Equal disagree for %x and %x", a, b)
			}
			for _, entry := range []string{"f", "similar_elements", "check_str", "surface_Area", "digit_distance_nums", "sum_div"} {
				testOracle(MBPPPlus, 1e-6, entry).check([]byte("[1, 2]"), va, vb)
				testOracle(MBPPPlus, 0, entry).check(a, va, vb)
			}
			findZeroOK([]byte("[[1, 2]]"), va, 1e-4)
		}
	})
}
