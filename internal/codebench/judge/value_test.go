package judge

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

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
		wrapv('b', "P", tuplev(intv(1))), wrapv('i', "generator", listv(intv(1))), wrapv('v', "dict_keys", listv(intv(1))),
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
				mbppOracle(1e-6, entry).Check([]byte("[1, 2]"), va, vb)
				mbppOracle(0, entry).Check(a, va, vb)
			}
			findZeroOK([]byte("[[1, 2]]"), va, 1e-4)
		}
	})
}
