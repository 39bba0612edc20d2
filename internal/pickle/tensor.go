package pickle

import (
	"bytes"
	"io"
	"math"
)

// DType is an element type, named as safetensors names it.
type DType struct {
	Name string // "F32", "BF16", "BOOL", ...
	Size int    // bytes per element
}

// storageDTypes maps the storage classes torch pickles to element types.
var storageDTypes = map[string]DType{
	"torch.DoubleStorage":       {"F64", 8},
	"torch.FloatStorage":        {"F32", 4},
	"torch.HalfStorage":         {"F16", 2},
	"torch.BFloat16Storage":     {"BF16", 2},
	"torch.LongStorage":         {"I64", 8},
	"torch.IntStorage":          {"I32", 4},
	"torch.ShortStorage":        {"I16", 2},
	"torch.CharStorage":         {"I8", 1},
	"torch.ByteStorage":         {"U8", 1},
	"torch.BoolStorage":         {"BOOL", 1},
	"torch.ComplexFloatStorage": {"C64", 8},
}

// Storage is a typed torch storage: Numel elements of DType, little-endian.
type Storage struct {
	DType    DType
	Numel    int64
	Data     []byte // Numel*DType.Size bytes aliasing the input
	Offset   int64  // offset of Data in the outermost input
	Key      string // key inside its torch file
	Location string // device the storage was saved from ("cpu", "cuda:0")
}

// Tensor is a strided view of a storage, as _rebuild_tensor_v2 describes it.
type Tensor struct {
	Storage       *Storage
	DType         DType
	Shape         []int64
	Strides       []int64 // in elements
	StorageOffset int64   // in elements
	RequiresGrad  bool
}

// Parameter is torch.nn.Parameter around a tensor.
type Parameter struct {
	Data         *Tensor
	RequiresGrad bool
}

// maxRank bounds the number of dimensions of a tensor.
const maxRank = 64

// Numel returns the number of elements.
func (t *Tensor) Numel() int64 {
	n := int64(1)
	for _, s := range t.Shape {
		n *= s // checked for overflow when the tensor was built
	}
	return n
}

// NumBytes returns the size of the tensor's contiguous form.
func (t *Tensor) NumBytes() int64 { return t.Numel() * int64(t.DType.Size) }

// Contiguous reports whether the view covers its elements in C order
// without gaps, so that its bytes are one slice of the storage.
func (t *Tensor) Contiguous() bool {
	if t.Numel() == 0 {
		return true
	}
	want := int64(1)
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if t.Shape[d] == 1 {
			continue
		}
		if t.Strides[d] != want {
			return false
		}
		want *= t.Shape[d]
	}
	return true
}

// Bytes returns the tensor's elements in C order, little-endian: what
// tensor.contiguous() holds. A contiguous view aliases the input; any
// other view is copied.
func (t *Tensor) Bytes() []byte {
	if t.Contiguous() {
		es := int64(t.DType.Size)
		return t.Storage.Data[t.StorageOffset*es : (t.StorageOffset+t.Numel())*es]
	}
	var b bytes.Buffer
	b.Grow(int(t.NumBytes()))
	t.WriteTo(&b)
	return b.Bytes()
}

// WriteTo writes the tensor's elements in C order (its contiguous form).
func (t *Tensor) WriteTo(w io.Writer) (int64, error) {
	numel := t.Numel()
	if numel == 0 {
		return 0, nil
	}
	es := int64(t.DType.Size)
	data := t.Storage.Data
	if t.Contiguous() {
		n, err := w.Write(data[t.StorageOffset*es : (t.StorageOffset+numel)*es])
		return int64(n), err
	}
	// Collapse the innermost dimensions that are contiguous into one run,
	// then walk the outer ones with an odometer.
	run, k := int64(1), len(t.Shape)
	for k > 0 {
		d := k - 1
		if t.Shape[d] == 1 {
			k--
			continue
		}
		if t.Strides[d] != run {
			break
		}
		run *= t.Shape[d]
		k--
	}
	runBytes := run * es
	const chunk = 1 << 20
	buf := make([]byte, 0, chunk+int(min(runBytes, chunk)))
	idx := make([]int64, k)
	pos := t.StorageOffset
	var written int64
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	for {
		start := pos * es
		for off := int64(0); off < runBytes; {
			n := min(runBytes-off, chunk)
			buf = append(buf, data[start+off:start+off+n]...)
			off += n
			if len(buf) >= chunk {
				if err := flush(); err != nil {
					return written, err
				}
			}
		}
		d := k - 1
		for ; d >= 0; d-- {
			idx[d]++
			pos += t.Strides[d]
			if idx[d] < t.Shape[d] {
				break
			}
			pos -= t.Strides[d] * t.Shape[d]
			idx[d] = 0
		}
		if d < 0 {
			break
		}
	}
	if len(buf) > 0 {
		if err := flush(); err != nil {
			return written, err
		}
	}
	return written, nil
}

func mulOK(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

func addOK(a, b int64) (int64, bool) {
	if a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

func intTuple(v Value) ([]int64, bool) {
	t, ok := v.(Tuple)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(t))
	for i, e := range t {
		x, ok := e.(int64)
		if !ok || x < 0 {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

func emptyDictOrNone(v Value) bool {
	switch x := v.(type) {
	case None:
		return true
	case *Dict:
		return x.Len() == 0
	}
	return false
}

// callRebuildTensorV2 implements torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
// and checks that the view stays inside its storage.
func callRebuildTensorV2(m *machine, args Tuple) Value {
	if len(args) != 6 && len(args) != 7 {
		m.fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got %d", len(args))
		return None{}
	}
	st, ok := args[0].(*Storage)
	if !ok {
		m.fail("_rebuild_tensor_v2 storage is a %s", typeName(args[0]))
		return None{}
	}
	off, ok1 := args[1].(int64)
	shape, ok2 := intTuple(args[2])
	strides, ok3 := intTuple(args[3])
	rg, ok4 := args[4].(bool)
	if !ok1 || off < 0 || !ok2 || !ok3 || !ok4 || len(shape) != len(strides) {
		m.fail("_rebuild_tensor_v2 arguments do not describe a strided view (offset %s, size %s, stride %s)",
			typeName(args[1]), typeName(args[2]), typeName(args[3]))
		return None{}
	}
	if len(shape) > maxRank {
		m.fail("tensor of rank %d exceeds the limit of %d", len(shape), maxRank)
		return None{}
	}
	if !emptyDictOrNone(args[5]) {
		m.violate("tensor carries backward hooks")
	}
	if len(args) == 7 && !emptyDictOrNone(args[6]) {
		m.violate("tensor carries metadata")
	}
	numel := int64(1)
	for _, s := range shape {
		if numel, ok = mulOK(numel, s); !ok {
			m.fail("tensor element count overflows")
			return None{}
		}
	}
	if nb, ok := mulOK(numel, int64(st.DType.Size)); !ok || nb > m.s.maxExport() {
		m.fail("tensor of %d elements is larger than the decoder's output limit of %d bytes", numel, m.s.maxExport())
		return None{}
	}
	if numel > 0 {
		last := off
		for i := range shape {
			step, ok := mulOK(shape[i]-1, strides[i])
			if !ok {
				m.fail("tensor view overflows")
				return None{}
			}
			if last, ok = addOK(last, step); !ok {
				m.fail("tensor view overflows")
				return None{}
			}
		}
		if last >= st.Numel {
			m.fail("tensor view reaches element %d of a storage of %d elements", last, st.Numel)
			return None{}
		}
	}
	m.charge(int64(128 + 16*len(shape)))
	return &Tensor{Storage: st, DType: st.DType, Shape: shape, Strides: strides, StorageOffset: off, RequiresGrad: rg}
}

// callRebuildParameter implements torch._utils._rebuild_parameter(data,
// requires_grad, backward_hooks) and _rebuild_parameter_with_state(...,
// state) with an empty state.
func callRebuildParameter(m *machine, args Tuple) Value {
	if len(args) != 3 && len(args) != 4 {
		m.fail("_rebuild_parameter takes 3 or 4 arguments, got %d", len(args))
		return None{}
	}
	t, ok1 := args[0].(*Tensor)
	rg, ok2 := args[1].(bool)
	if !ok1 || !ok2 {
		m.fail("_rebuild_parameter needs a tensor and a bool, got %s and %s", typeName(args[0]), typeName(args[1]))
		return None{}
	}
	if !emptyDictOrNone(args[2]) {
		m.violate("parameter carries backward hooks")
	}
	if len(args) == 4 && !emptyDictOrNone(args[3]) {
		m.violate("parameter carries Python state")
	}
	m.charge(64)
	return &Parameter{Data: t, RequiresGrad: rg}
}
