package pickle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// InertJSON renders plain data (constructor arguments, scalar attributes)
// as JSON: None, bools, ints, floats, strings, lists, tuples (as arrays),
// dicts with string keys (as objects, in insertion order) and numpy
// scalars (as numbers). Non-finite floats become {"$float": "inf"}, bytes
// {"$bytes": "<base64>"}. Any other value (a tensor, an object, a global)
// is an error: such arguments cannot be passed on without a pickle.
func InertJSON(v Value) (json.RawMessage, error) {
	var b bytes.Buffer
	w := &walker{}
	if err := writeInertJSON(&b, v, w, 0); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

// maxInertJSON bounds the JSON one value may render to: shared references
// could otherwise expand a small pickle into a huge document.
const maxInertJSON = 16 << 20

func writeInertJSON(b *bytes.Buffer, v Value, w *walker, depth int) error {
	if err := w.visit(depth); err != nil {
		return err
	}
	if b.Len() > maxInertJSON {
		return fmt.Errorf("value renders to more than %d bytes of JSON", maxInertJSON)
	}
	switch x := v.(type) {
	case None:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case *big.Int:
		b.WriteString(x.String())
	case float64:
		writeFloat(b, x)
	case string:
		writeString(b, x)
	case *Bytes:
		b.WriteString(`{"$bytes":`)
		writeString(b, base64.StdEncoding.EncodeToString(x.Data))
		b.WriteByte('}')
	case *NumpyScalar:
		n, ok := x.Number()
		if !ok {
			return fmt.Errorf("numpy scalar of dtype %s has no JSON form", x.Dtype.Name)
		}
		return writeInertJSON(b, n, w, depth+1)
	case Tuple:
		return writeArray(b, x, w, depth)
	case *List:
		return writeArray(b, x.Items, w, depth)
	case *Dict:
		b.WriteByte('{')
		for i, k := range x.Keys {
			ks, ok := k.(string)
			if !ok {
				return fmt.Errorf("dict with a %s key has no JSON form", typeName(k))
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, ks)
			b.WriteByte(':')
			if err := writeInertJSON(b, x.Values[i], w, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("a %s has no inert JSON form", typeName(v))
	}
	return nil
}

func writeArray(b *bytes.Buffer, items []Value, w *walker, depth int) error {
	b.WriteByte('[')
	for i, e := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeInertJSON(b, e, w, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// writeFloat writes the shortest text that parses back to x, keeping a
// decimal point so that Python's json reads a float, not an int.
func writeFloat(b *bytes.Buffer, x float64) {
	switch {
	case math.IsNaN(x):
		b.WriteString(`{"$float":"nan"}`)
		return
	case math.IsInf(x, 1):
		b.WriteString(`{"$float":"inf"}`)
		return
	case math.IsInf(x, -1):
		b.WriteString(`{"$float":"-inf"}`)
		return
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	b.WriteString(s)
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // cannot fail for a string
	b.Truncate(b.Len() - 1)
}
