package edm

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// NumPy's .npy format (numpy/lib/format.py): the magic "\x93NUMPY", a major
// and minor version, a little-endian header length (2 bytes in version 1, 4
// in versions 2 and 3), then a Python dict literal with the keys descr,
// fortran_order and shape, padded with spaces and ended by a newline, then
// the raw array data. repro reads only what EDM writes: little-endian
// float32 or float64 in C order. Everything here is untrusted input (a
// reference file, or what the Python runtime wrote) and is read strictly
// and within bounds.

const (
	npyMagic        = "\x93NUMPY"
	maxNPYHeaderLen = 1 << 16
	maxNPYDims      = 8
	maxNPYDim       = 1 << 31
)

// npyHeader is a parsed .npy header.
type npyHeader struct {
	Descr string // "<f4" or "<f8"
	Shape []int
}

// itemSize returns the element size in bytes.
func (h npyHeader) itemSize() int {
	if h.Descr == "<f4" {
		return 4
	}
	return 8
}

// count returns the number of elements.
func (h npyHeader) count() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		n *= int64(d)
	}
	return n
}

// NPYError reports a malformed .npy or .npz input.
type NPYError struct {
	What string // the file or member
	Msg  string
}

func (e *NPYError) Error() string { return e.What + ": " + e.Msg }

func npyErr(what, format string, args ...any) error {
	return &NPYError{What: what, Msg: fmt.Sprintf(format, args...)}
}

// readNPYHeader reads and checks the header of a .npy stream. maxBytes
// bounds the data size the header may announce.
func readNPYHeader(r io.Reader, what string, maxBytes int64) (npyHeader, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return npyHeader{}, npyErr(what, "too short for a .npy header")
	}
	if string(pre[:6]) != npyMagic {
		return npyHeader{}, npyErr(what, "not a .npy file (bad magic)")
	}
	major, minor := pre[6], pre[7]
	var hlen int64
	switch {
	case major == 1 && minor == 0:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return npyHeader{}, npyErr(what, "truncated header length")
		}
		hlen = int64(binary.LittleEndian.Uint16(b[:]))
	case (major == 2 || major == 3) && minor == 0:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return npyHeader{}, npyErr(what, "truncated header length")
		}
		hlen = int64(binary.LittleEndian.Uint32(b[:]))
	default:
		return npyHeader{}, npyErr(what, "unsupported .npy version %d.%d", major, minor)
	}
	if hlen < 2 || hlen > maxNPYHeaderLen {
		return npyHeader{}, npyErr(what, "header length %d out of range", hlen)
	}
	text := make([]byte, hlen)
	if _, err := io.ReadFull(r, text); err != nil {
		return npyHeader{}, npyErr(what, "truncated header")
	}
	h, err := parseNPYDict(text)
	if err != nil {
		return npyHeader{}, npyErr(what, "bad header: %v", err)
	}
	if n := h.count(); n > maxBytes/int64(h.itemSize()) {
		return npyHeader{}, npyErr(what, "array of %d elements is larger than the %d bytes allowed", n, maxBytes)
	}
	return h, nil
}

// parseNPYDict parses the header dict literal. It accepts exactly the three
// keys numpy writes, each once, in any order.
func parseNPYDict(b []byte) (npyHeader, error) {
	if b[len(b)-1] != '\n' {
		return npyHeader{}, errors.New("header does not end with a newline")
	}
	p := &dictParser{b: b[:len(b)-1]}
	var h npyHeader
	var haveDescr, haveOrder, haveShape bool
	p.space()
	if !p.eat('{') {
		return h, errors.New("header is not a dict")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		p.space()
		if !p.eat(':') {
			return h, fmt.Errorf("missing ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if haveDescr {
				return h, errors.New("duplicate key descr")
			}
			haveDescr = true
			if h.Descr, err = p.str(); err != nil {
				return h, err
			}
			if h.Descr != "<f4" && h.Descr != "<f8" {
				return h, fmt.Errorf("dtype %q is not little-endian float32 or float64", clipString(h.Descr))
			}
		case "fortran_order":
			if haveOrder {
				return h, errors.New("duplicate key fortran_order")
			}
			haveOrder = true
			switch {
			case p.word("False"):
			case p.word("True"):
				return h, errors.New("fortran_order arrays are not supported")
			default:
				return h, errors.New("fortran_order is not a boolean")
			}
		case "shape":
			if haveShape {
				return h, errors.New("duplicate key shape")
			}
			haveShape = true
			if h.Shape, err = p.tuple(); err != nil {
				return h, err
			}
		default:
			return h, fmt.Errorf("unknown key %q", clipString(key))
		}
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if p.eat('}') {
			break
		}
		return h, errors.New("expected ',' or '}'")
	}
	p.space()
	if p.i != len(p.b) {
		return h, errors.New("trailing characters after the dict")
	}
	if !haveDescr || !haveOrder || !haveShape {
		return h, errors.New("header lacks descr, fortran_order or shape")
	}
	return h, nil
}

type dictParser struct {
	b []byte
	i int
}

func (p *dictParser) space() {
	for p.i < len(p.b) && p.b[p.i] == ' ' {
		p.i++
	}
}

func (p *dictParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dictParser) word(w string) bool {
	if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes ('...' or "...").
func (p *dictParser) str() (string, error) {
	if p.i >= len(p.b) || (p.b[p.i] != '\'' && p.b[p.i] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.b[p.i]
	start := p.i + 1
	for j := start; j < len(p.b) && j-start <= 64; j++ {
		switch c := p.b[j]; {
		case c == q:
			p.i = j + 1
			return string(p.b[start:j]), nil
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", errors.New("unsupported character in a string")
		}
	}
	return "", errors.New("unterminated or overlong string")
}

// tuple reads a tuple of non-negative integers: (), (n,), (n, m), ...
func (p *dictParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("shape is not a tuple")
	}
	var dims []int
	trailingComma := false
	for {
		p.space()
		if p.eat(')') {
			break
		}
		start := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' && p.i-start <= 10 {
			p.i++
		}
		if p.i == start {
			return nil, errors.New("shape holds something other than a non-negative integer")
		}
		v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
		if err != nil || v > maxNPYDim {
			return nil, errors.New("shape dimension out of range")
		}
		if len(dims) == maxNPYDims {
			return nil, fmt.Errorf("more than %d dimensions", maxNPYDims)
		}
		dims = append(dims, int(v))
		trailingComma = false
		p.space()
		if p.eat(',') {
			trailingComma = true
			continue
		}
		p.space()
		if !p.eat(')') {
			return nil, errors.New("expected ',' or ')' in shape")
		}
		break
	}
	if len(dims) == 1 && !trailingComma {
		return nil, errors.New("a one-element shape must be written (n,)")
	}
	return dims, nil
}

// readFloats reads n elements of the given header's dtype from r into dst
// (converted to float64), requiring every value to be finite.
func readFloats(r io.Reader, h npyHeader, what string, dst []float64) error {
	size := h.itemSize()
	buf := make([]byte, 64<<10)
	per := len(buf) / size
	for off := 0; off < len(dst); {
		k := min(per, len(dst)-off)
		b := buf[:k*size]
		if _, err := io.ReadFull(r, b); err != nil {
			return npyErr(what, "truncated data: expected %d values, got fewer", len(dst))
		}
		for j := 0; j < k; j++ {
			var v float64
			if size == 4 {
				v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[j*4:])))
			} else {
				v = math.Float64frombits(binary.LittleEndian.Uint64(b[j*8:]))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return npyErr(what, "value %d is not finite", off+j)
			}
			dst[off+j] = v
		}
		off += k
	}
	return nil
}

// expectEOF fails unless r holds no more bytes.
func expectEOF(r io.Reader, what string) error {
	var b [1]byte
	if n, _ := io.ReadFull(r, b[:]); n != 0 {
		return npyErr(what, "trailing bytes after the array data")
	}
	return nil
}

// ReadReference reads FID reference statistics as EDM's fid.py writes them
// (np.savez with members mu, shape (dim,), and sigma, shape (dim, dim),
// float64), from an .npz archive of the given size. Only those two members
// may be present.
func ReadReference(r io.ReaderAt, size int64, dim int) (Stats, error) {
	const what = "FID reference statistics"
	if dim < 1 || dim > 1<<14 {
		return Stats{}, fmt.Errorf("feature dimension %d out of range", dim)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return Stats{}, npyErr(what, "not an .npz archive: %v", err)
	}
	if len(zr.File) != 2 {
		return Stats{}, npyErr(what, "archive has %d members, want exactly mu.npy and sigma.npy", len(zr.File))
	}
	st := Stats{Dim: dim}
	for _, f := range zr.File {
		var want []int
		var dst []float64
		switch f.Name {
		case "mu.npy":
			if st.Mu != nil {
				return Stats{}, npyErr(what, "duplicate member mu.npy")
			}
			want, st.Mu = []int{dim}, make([]float64, dim)
			dst = st.Mu
		case "sigma.npy":
			if st.Sigma != nil {
				return Stats{}, npyErr(what, "duplicate member sigma.npy")
			}
			want, st.Sigma = []int{dim, dim}, make([]float64, dim*dim)
			dst = st.Sigma
		default:
			return Stats{}, npyErr(what, "unexpected member %q", clipString(f.Name))
		}
		if err := readMember(f, what+" "+f.Name, want, dst); err != nil {
			return Stats{}, err
		}
	}
	if st.Mu == nil || st.Sigma == nil {
		return Stats{}, npyErr(what, "archive lacks mu.npy or sigma.npy")
	}
	if err := checkSymmetric(st.Sigma, dim); err != nil {
		return Stats{}, npyErr(what, "%v", err)
	}
	return st, nil
}

func readMember(f *zip.File, what string, want []int, dst []float64) error {
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return npyErr(what, "unsupported compression method %d", f.Method)
	}
	rc, err := f.Open()
	if err != nil {
		return npyErr(what, "cannot open: %v", err)
	}
	defer rc.Close()
	limit := int64(len(dst))*8 + 12 + maxNPYHeaderLen + 1
	lr := io.LimitReader(rc, limit)
	h, err := readNPYHeader(lr, what, int64(len(dst))*8)
	if err != nil {
		return err
	}
	if !equalShape(h.Shape, want) {
		return npyErr(what, "shape %v, want %v", h.Shape, want)
	}
	if err := readFloats(lr, h, what, dst); err != nil {
		return err
	}
	if err := expectEOF(lr, what); err != nil {
		return err
	}
	// Reading to the end makes archive/zip check the member's CRC-32.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return npyErr(what, "corrupt member: %v", err)
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkSymmetric fails unless the dim×dim row-major matrix a is symmetric up
// to rounding (1e-9 of its largest entry): the Fréchet distance below relies
// on symmetric covariances.
func checkSymmetric(a []float64, dim int) error {
	scale := 0.0
	for _, v := range a {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := 0; i < dim; i++ {
		for j := 0; j < i; j++ {
			if math.Abs(a[i*dim+j]-a[j*dim+i]) > 1e-9*scale {
				return fmt.Errorf("sigma is not symmetric at (%d, %d)", i, j)
			}
		}
	}
	return nil
}
