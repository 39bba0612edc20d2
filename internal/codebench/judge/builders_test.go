package judge

import (
	"testing"

	"github.com/reprolab/repro/internal/codebench/judge/judgetest"
)

// Short names for judgetest's builders in this package's tests.
type v = judgetest.V

var (
	none          = judgetest.None
	boolv         = judgetest.Bool
	intv          = judgetest.Int
	bigv          = judgetest.Big
	paddedInt     = judgetest.PaddedInt
	lenv          = judgetest.Len
	floatv        = judgetest.Float
	complexv      = judgetest.Complex
	strv          = judgetest.Str
	bytesv        = judgetest.Bytes
	listv         = judgetest.List
	tuplev        = judgetest.Tuple
	setv          = judgetest.Set
	frozensetv    = judgetest.Frozenset
	otherv        = judgetest.Other
	dictv         = judgetest.Dict
	bigFromString = judgetest.BigFromString
)

// TestBuildersWriteJudgeTags keeps judgetest's encoder on this package's
// wire format.
func TestBuildersWriteJudgeTags(t *testing.T) {
	if judgetest.HashThreshold != HashThreshold {
		t.Fatalf("judgetest.HashThreshold %d, judge %d", judgetest.HashThreshold, HashThreshold)
	}
	for name, c := range map[string]struct {
		b   v
		tag byte
	}{
		"None": {none(), tagNone}, "True": {boolv(true), tagTrue}, "False": {boolv(false), tagFalse},
		"int": {intv(1), tagInt}, "float": {floatv(1), tagFloat}, "complex": {complexv(1, 1), tagComplex},
		"str": {strv("a"), tagStr}, "long str": {strv(string(make([]byte, HashThreshold+1))), tagStrHash},
		"bytes": {bytesv("a"), tagBytes}, "long bytes": {bytesv(string(make([]byte, HashThreshold+1))), tagBytesHash},
		"list": {listv(), tagList}, "tuple": {tuplev(), tagTuple}, "dict": {dictv(), tagDict},
		"set": {setv(), tagSet}, "frozenset": {frozensetv(), tagFrozenset}, "other": {otherv("x"), tagOther},
	} {
		if c.b[0] != c.tag {
			t.Errorf("%s: tag %q, judge %q", name, c.b[0], c.tag)
		}
		if _, err := ParseValue(c.b, DefaultBounds); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func heOracle(atol float64, entry string) *Oracle {
	return NewOracle(atol, HumanEvalRules(entry).Oracle)
}

func mbppOracle(atol float64, entry string) *Oracle {
	return NewOracle(atol, MBPPRules(0, entry).Oracle)
}
