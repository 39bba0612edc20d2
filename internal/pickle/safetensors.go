package pickle

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/reprolab/repro/internal/atomicfile"
	"github.com/reprolab/repro/internal/digest"
	"github.com/reprolab/repro/internal/strictjson"
)

// maxSafetensorsHeader is the header size limit of the safetensors format.
const maxSafetensorsHeader = 100_000_000

// safetensorsDTypes are the element types the format defines, by size.
var safetensorsDTypes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "F8_E4M3FNUZ": 1, "F8_E5M2FNUZ": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8, "C64": 8,
}

// EncodeSafetensors writes tensors in the safetensors format: an 8-byte
// little-endian header length N, N bytes of JSON header, then the tensor
// data. The header holds __metadata__ first and then the tensors sorted by
// name, each with dtype, shape and data_offsets relative to the data; it is
// padded with spaces to a multiple of 8 bytes. Data is laid out by
// decreasing element size, then by name, so that every tensor starts at a
// multiple of its element size. Tensor bytes are the C-order (contiguous)
// form of each view.
func EncodeSafetensors(w io.Writer, tensors []NamedTensor, metadata map[string]string) (int64, error) {
	header, order, err := safetensorsHeader(tensors, metadata)
	if err != nil {
		return 0, err
	}
	var n8 [8]byte
	binary.LittleEndian.PutUint64(n8[:], uint64(len(header)))
	var total int64
	for _, b := range [][]byte{n8[:], header} {
		n, err := w.Write(b)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	for _, i := range order {
		n, err := tensors[i].WriteTo(w)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// safetensorsNameProblem says why an exported tensor cannot be written
// to safetensors, or returns "". Scan and convert both apply it, so a
// file scans clean exactly when it converts: "__metadata__" is the
// header's reserved metadata entry, names must be UTF-8 (JSON keys), and
// the dtype must be one safetensors holds.
func safetensorsNameProblem(t NamedTensor) string {
	switch {
	case t.Name == "__metadata__":
		return `tensor name "__metadata__" is reserved by safetensors for the header's metadata`
	case !utf8.ValidString(t.Name):
		return fmt.Sprintf("tensor name %q is not UTF-8 text, which safetensors cannot hold", clip(t.Name))
	}
	if _, ok := safetensorsDTypes[t.DType.Name]; !ok {
		return fmt.Sprintf("tensor %q has dtype %s, which safetensors cannot hold", clip(t.Name), t.DType.Name)
	}
	return ""
}

func safetensorsHeader(tensors []NamedTensor, metadata map[string]string) ([]byte, []int, error) {
	byName := make(map[string]int, len(tensors))
	for i, t := range tensors {
		if t.Name == "__metadata__" || !utf8.ValidString(t.Name) {
			return nil, nil, fmt.Errorf("tensor name %q cannot be written to safetensors", clip(t.Name))
		}
		if _, dup := byName[t.Name]; dup {
			return nil, nil, fmt.Errorf("tensor name %q occurs twice", clip(t.Name))
		}
		if _, ok := safetensorsDTypes[t.DType.Name]; !ok {
			return nil, nil, fmt.Errorf("tensor %q has dtype %s, which safetensors cannot hold", clip(t.Name), t.DType.Name)
		}
		byName[t.Name] = i
	}
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ta, tb := tensors[order[a]], tensors[order[b]]
		if ta.DType.Size != tb.DType.Size {
			return ta.DType.Size > tb.DType.Size
		}
		return ta.Name < tb.Name
	})
	offsets := make([][2]int64, len(tensors))
	var pos int64
	for _, i := range order {
		offsets[i] = [2]int64{pos, pos + tensors[i].NumBytes()}
		pos += tensors[i].NumBytes()
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		b.WriteString(`"__metadata__":{`)
		for j, k := range sortedStrings(metadata) {
			if j > 0 {
				b.WriteByte(',')
			}
			writeString(&b, k)
			b.WriteByte(':')
			writeString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	for j, name := range sortedStrings(byName) {
		if j > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		i := byName[name]
		t := tensors[i]
		writeString(&b, name)
		b.WriteString(`:{"dtype":"`)
		b.WriteString(t.DType.Name)
		b.WriteString(`","shape":[`)
		for d, s := range t.Shape {
			if d > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(s, 10))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, offsets[i][0], offsets[i][1])
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > maxSafetensorsHeader {
		return nil, nil, fmt.Errorf("safetensors header of %d bytes exceeds the format's limit", b.Len())
	}
	return b.Bytes(), order, nil
}

// WriteSafetensorsFile writes tensors atomically to path with
// internal/atomicfile: the file is written under a temporary name (asking
// the kernel to start writeback as it goes), read back and compared byte for
// byte with a second encoding of the tensors while hashing what is read,
// synced, its size and header checked, and only then renamed into place. It
// returns the file's SHA-256 and size.
func WriteSafetensorsFile(path string, perm os.FileMode, tensors []NamedTensor, metadata map[string]string) (digest.SHA256, int64, error) {
	var sum digest.SHA256
	var size int64
	compared := false
	compare := func(r io.Reader) error {
		cw := &compareWriter{r: bufio.NewReaderSize(r, 4<<20), h: digest.NewHash()}
		if _, err := EncodeSafetensors(cw, tensors, metadata); err != nil {
			return err
		}
		if n, _ := cw.r.Read(make([]byte, 1)); n != 0 || cw.n != size {
			return fmt.Errorf("file read back is longer than the %d bytes written", size)
		}
		cw.h.Sum(sum[:0])
		compared = true
		return nil
	}
	err := atomicfile.Write(path, perm, func(w io.Writer) error {
		f, _ := w.(*os.File)
		dst := w
		var wb *writebackWriter
		if f != nil {
			wb = &writebackWriter{f: f}
			dst = wb
		}
		bw := bufio.NewWriterSize(dst, 4<<20)
		n, err := EncodeSafetensors(bw, tensors, metadata)
		if err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		size = n
		if f == nil {
			return nil
		}
		// Compare while the kernel writes back; the fsync that follows
		// then waits for less.
		wb.kick()
		return compare(io.NewSectionReader(f, 0, n))
	}, func(f *os.File) error {
		if !compared {
			if err := compare(f); err != nil {
				return err
			}
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() != size {
			return fmt.Errorf("file holds %d bytes, %d were written", fi.Size(), size)
		}
		hdr, err := ReadSafetensorsHeader(f, size)
		if err != nil {
			return err
		}
		if len(hdr.Tensors) != len(tensors) {
			return fmt.Errorf("header read back lists %d tensors, want %d", len(hdr.Tensors), len(tensors))
		}
		return nil
	})
	if err != nil {
		return digest.SHA256{}, 0, err
	}
	return sum, size, nil
}

// writebackWriter writes to f and starts writeback every 32 MiB.
type writebackWriter struct {
	f         *os.File
	n, kicked int64
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	if w.n-w.kicked >= 32<<20 {
		w.kick()
	}
	return n, err
}

func (w *writebackWriter) kick() {
	if w.n > w.kicked {
		startWriteback(w.f, w.kicked, w.n-w.kicked)
		w.kicked = w.n
	}
}

// compareWriter checks that what is written equals what r reads, hashing
// the bytes read.
type compareWriter struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	buf []byte
}

func (c *compareWriter) Write(p []byte) (int, error) {
	for done := 0; done < len(p); {
		chunk := p[done:]
		if len(chunk) > 1<<20 {
			chunk = chunk[:1<<20]
		}
		if cap(c.buf) < len(chunk) {
			c.buf = make([]byte, 1<<20)
		}
		got := c.buf[:len(chunk)]
		if _, err := io.ReadFull(c.r, got); err != nil {
			return done, fmt.Errorf("file read back is shorter than written: %w", err)
		}
		if !bytes.Equal(got, chunk) {
			return done, fmt.Errorf("content read back differs from content written near offset %d", c.n)
		}
		c.h.Write(got)
		c.n += int64(len(chunk))
		done += len(chunk)
	}
	return len(p), nil
}

// SafetensorsHeader is a parsed and validated safetensors header.
type SafetensorsHeader struct {
	Metadata map[string]string
	Tensors  map[string]SafetensorsEntry
	// DataStart is the file offset of the data buffer (8 + header length).
	DataStart int64
}

// SafetensorsEntry is one tensor of a safetensors header.
type SafetensorsEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// ReadSafetensorsHeader reads and validates the header of a safetensors
// file of the given size: header length within the file and the format's
// limit, a JSON object without duplicate keys, known dtypes, offsets that
// match shape and dtype and cover the data buffer contiguously without
// overlap.
func ReadSafetensorsHeader(r io.ReaderAt, size int64) (*SafetensorsHeader, error) {
	var n8 [8]byte
	if size < 8 {
		return nil, fmt.Errorf("safetensors file of %d bytes has no header length", size)
	}
	if _, err := r.ReadAt(n8[:], 0); err != nil {
		return nil, fmt.Errorf("failed to read safetensors header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(n8[:])
	if n > maxSafetensorsHeader || n > uint64(size-8) {
		return nil, fmt.Errorf("safetensors header length %d exceeds the file or the format's limit", n)
	}
	raw := make([]byte, n)
	if _, err := r.ReadAt(raw, 8); err != nil {
		return nil, fmt.Errorf("failed to read safetensors header: %w", err)
	}
	if len(raw) == 0 || raw[0] != '{' || !utf8.Valid(raw) {
		return nil, fmt.Errorf("safetensors header is not a UTF-8 JSON object")
	}
	h := &SafetensorsHeader{Tensors: map[string]SafetensorsEntry{}, DataStart: 8 + int64(n)}
	if err := decodeHeaderObject(raw, h); err != nil {
		return nil, err
	}
	type span struct {
		lo, hi int64
		name   string
	}
	spans := make([]span, 0, len(h.Tensors))
	for name, e := range h.Tensors {
		es, ok := safetensorsDTypes[e.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %q has unknown dtype %q", clip(name), e.DType)
		}
		count := int64(es)
		for _, d := range e.Shape {
			var ok bool
			if d < 0 {
				return nil, fmt.Errorf("tensor %q has a negative dimension", clip(name))
			}
			if count, ok = mulOK(count, d); !ok {
				return nil, fmt.Errorf("tensor %q is too large", clip(name))
			}
		}
		lo, hi := e.DataOffsets[0], e.DataOffsets[1]
		if lo < 0 || hi < lo || hi-lo != count {
			return nil, fmt.Errorf("tensor %q: data offsets [%d, %d] do not match %d bytes", clip(name), lo, hi, count)
		}
		spans = append(spans, span{lo, hi, name})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].lo != spans[j].lo {
			return spans[i].lo < spans[j].lo
		}
		return spans[i].hi < spans[j].hi
	})
	var pos int64
	for _, s := range spans {
		if s.lo != pos {
			return nil, fmt.Errorf("tensor %q: data offsets leave a gap or overlap at %d", clip(s.name), pos)
		}
		pos = s.hi
	}
	if pos != size-h.DataStart {
		return nil, fmt.Errorf("tensor data covers %d bytes, the file holds %d", pos, size-h.DataStart)
	}
	return h, nil
}

// decodeHeaderObject parses the header object key by key, so that a
// duplicate key is an error rather than silently overwritten.
func decodeHeaderObject(raw []byte, h *SafetensorsHeader) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	bad := func(err error) error { return fmt.Errorf("invalid safetensors header: %v", err) }
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("safetensors header has key %q twice", clip(key))
		}
		seen[key] = true
		if key == "__metadata__" {
			if err := dec.Decode(&h.Metadata); err != nil {
				return bad(err)
			}
			continue
		}
		var e SafetensorsEntry
		if err := strictDecode(dec, &e); err != nil {
			return bad(fmt.Errorf("tensor %q: %v", clip(key), err))
		}
		h.Tensors[key] = e
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	rest := bytes.TrimLeft(raw[dec.InputOffset():], " ")
	if len(rest) != 0 {
		return errors.New("invalid safetensors header: data after the JSON object")
	}
	return nil
}

func strictDecode(dec *json.Decoder, e *SafetensorsEntry) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if err := strictjson.Decode(raw, e); err != nil {
		return err
	}
	if e.DType == "" || e.Shape == nil {
		return errors.New("missing dtype or shape")
	}
	return nil
}
