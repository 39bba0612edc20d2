package pickle

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Legacy torch.save format: five pickles (magic number, protocol version,
// sys_info, the object, the sorted storage keys) followed by each storage as
// an int64 element count and its raw little-endian bytes.
var legacyMagic, _ = new(big.Int).SetString("1950a86a20f9469cfc6c", 16)

const legacyProtocolVersion = 1001

// maxBlobDepth bounds torch files nested inside pickles.
const maxBlobDepth = 1

// headerOpcodes are the opcodes that may build the plain data of the
// legacy format's header pickles and storage-key list.
var headerOpcodes = opSet("PROTO", "FRAME", "STOP", "MARK", "BINPUT", "LONG_BINPUT", "MEMOIZE", "BINGET",
	"LONG_BINGET", "EMPTY_DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "APPEND", "APPENDS", "EMPTY_TUPLE",
	"TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2",
	"LONG1", "BINUNICODE", "SHORT_BINUNICODE")

// nestedOpcodes additionally allow the storage global and its persistent
// id in the object pickle of a nested blob.
var nestedOpcodes = opSet(append(opNames(headerOpcodes), "GLOBAL", "STACK_GLOBAL", "BINPERSID")...)

func opSet(names ...string) *[256]bool {
	var t [256]bool
	for _, n := range names {
		op, ok := opByName[n]
		if !ok {
			panic("pickle: unknown opcode name " + n)
		}
		t[op] = true
	}
	return &t
}

func opNames(t *[256]bool) []string {
	var ns []string
	for i, ok := range t {
		if ok {
			ns = append(ns, opTable[i].name)
		}
	}
	return ns
}

var (
	headerRules = rules{what: "torch header pickle", opcodes: headerOpcodes}
	storageKey  = regexp.MustCompile(`^[0-9A-Za-z_]{1,64}$`)
	// location are the devices torch.load restores a storage to with its
	// bytes (on the CPU with map_location="cpu"); "meta" is refused: it
	// loads as a tensor without data, whatever bytes the file holds.
	location = regexp.MustCompile(`^(cpu|cuda|cuda:[0-9]{1,4}|mps)$`)
)

func (s *session) malformed(off int64, format string, args ...any) error {
	return &MalformedError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// decodeTop decodes the outermost input, whatever its container.
func (s *session) decodeTop(data []byte) (Value, error) {
	p := s.profile
	main := rules{what: "torch data pickle", opcodes: &p.opcodes, calls: true, storages: true}
	if isTarHeader(data) {
		return nil, s.malformed(0, "the file starts with a valid tar header: torch.load would read it as a tar archive first")
	}
	if isZip(data) {
		s.format = FormatTorchZip
		if !p.allowsFormat(FormatTorchZip) {
			if err := s.violate(0, fmt.Sprintf("container %s is not allowed by profile %s", FormatTorchZip, p.Name)); err != nil {
				return nil, err
			}
		}
		return s.decodeZip(data, 0, main)
	}
	top := rules{what: "top-level pickle", opcodes: &p.opcodes, calls: true}
	m := s.newMachine(data, 0, &top)
	v := m.run()
	s.protocol = m.proto
	if m.err != nil {
		return nil, m.err
	}
	if m.pos == len(data) {
		s.format = FormatPickle
		if !p.allowsFormat(FormatPickle) {
			return v, s.violate(0, fmt.Sprintf("container %s is not allowed by profile %s", FormatPickle, p.Name))
		}
		return v, nil
	}
	if !isLegacyMagic(v) || m.active != 0 {
		return nil, s.malformed(int64(m.pos), "%d bytes of trailing data after STOP", len(data)-m.pos)
	}
	s.format = FormatTorchLegacy
	if !p.allowsFormat(FormatTorchLegacy) {
		if err := s.violate(0, fmt.Sprintf("container %s is not allowed by profile %s", FormatTorchLegacy, p.Name)); err != nil {
			return nil, err
		}
	}
	return s.decodeLegacy(data, 0, m.pos, main)
}

func isZip(data []byte) bool { return len(data) >= 4 && string(data[:4]) == "PK\x03\x04" }

func isLegacyMagic(v Value) bool {
	b, ok := v.(*big.Int)
	return ok && b.Cmp(legacyMagic) == 0
}

// callLoadFromBytes implements torch.storage._load_from_bytes(b): b is a
// whole torch file (legacy or zip) holding exactly one storage.
func callLoadFromBytes(m *machine, args Tuple) Value {
	if len(args) != 1 {
		m.fail("_load_from_bytes takes 1 argument, got %d", len(args))
		return None{}
	}
	b, ok := args[0].(*Bytes)
	if !ok {
		m.fail("_load_from_bytes argument is a %s, not bytes", typeName(args[0]))
		return None{}
	}
	s := m.s
	if st, ok := s.blobCache[b]; ok {
		return st // the same bytes object again, through the memo
	}
	if s.depth >= maxBlobDepth {
		m.violate("torch file nested inside a nested torch file")
		return None{}
	}
	s.depth++
	v, format, err := s.decodeNested(b.Data, b.Offset)
	s.depth--
	if err != nil {
		if m.err == nil {
			m.err = err
		}
		return None{}
	}
	st, ok := v.(*Storage)
	if !ok {
		m.violate("nested torch file holds a %s, not a storage", typeName(v))
		return None{}
	}
	s.blobs = append(s.blobs, Blob{Offset: b.Offset, Size: int64(len(b.Data)), Format: format, Storage: storageInfo(st)})
	s.blobCache[b] = st
	return st
}

func (s *session) decodeNested(data []byte, base int64) (Value, string, error) {
	main := rules{what: "nested torch file", opcodes: nestedOpcodes, storages: true}
	if isTarHeader(data) {
		return nil, "", s.malformed(base, "nested torch file starts with a valid tar header")
	}
	if isZip(data) {
		v, err := s.decodeZip(data, base, main)
		return v, FormatTorchZip, err
	}
	m := s.newMachine(data, base, &headerRules)
	v := m.run()
	if m.err != nil {
		return nil, "", m.err
	}
	if !isLegacyMagic(v) {
		return nil, "", s.malformed(base, "nested torch file does not start with the torch magic number")
	}
	v, err := s.decodeLegacy(data, base, m.pos, main)
	return v, FormatTorchLegacy, err
}

// decodeLegacy reads the legacy format after its magic-number pickle.
func (s *session) decodeLegacy(data []byte, base int64, pos int, main rules) (Value, error) {
	next := func(r *rules) (Value, error) {
		m := s.newMachine(data[pos:], base+int64(pos), r)
		v := m.run()
		pos += m.pos
		if r.persid != nil && s.depth == 0 {
			s.protocol = m.proto
		}
		return v, m.err
	}
	v, err := next(&headerRules)
	if err != nil {
		return nil, err
	}
	if v != int64(legacyProtocolVersion) {
		return nil, s.malformed(base+int64(pos), "torch protocol version %v, want %d", v, legacyProtocolVersion)
	}
	start := pos
	v, err = next(&headerRules)
	if err != nil {
		return nil, err
	}
	if err := s.checkSysInfo(v, base+int64(start)); err != nil {
		return nil, err
	}
	ld := &storageLoader{s: s, legacy: true, storages: map[string]*Storage{}}
	main.persid = ld.load
	obj, err := next(&main)
	if err != nil {
		return nil, err
	}
	start = pos
	v, err = next(&headerRules)
	if err != nil {
		return nil, err
	}
	l, ok := v.(*List)
	if !ok {
		return nil, s.malformed(base+int64(start), "storage key list is a %s", typeName(v))
	}
	done := make(map[string]bool)
	for _, k := range l.Items {
		key, ok := k.(string)
		if !ok {
			return nil, s.malformed(base+int64(start), "storage key is a %s", typeName(k))
		}
		st := ld.storages[key]
		if st == nil {
			return nil, s.malformed(base+int64(start), "storage key %q is listed but never referenced", clip(key))
		}
		if done[key] {
			return nil, s.malformed(base+int64(start), "storage key %q is listed twice", clip(key))
		}
		done[key] = true
		if len(data)-pos < 8 {
			return nil, s.malformed(base+int64(pos), "storage %q: element count runs past the end", clip(key))
		}
		n := int64(binary.LittleEndian.Uint64(data[pos:]))
		if n != st.Numel {
			return nil, s.malformed(base+int64(pos), "storage %q holds %d elements, its persistent id says %d", clip(key), n, st.Numel)
		}
		pos += 8
		nb := st.Numel * int64(st.DType.Size) // bounded by the input size when the id was read
		if nb > int64(len(data)-pos) {
			return nil, s.malformed(base+int64(pos), "storage %q: %d bytes exceed the %d remaining", clip(key), nb, len(data)-pos)
		}
		st.Data, st.Offset = data[pos:pos+int(nb)], base+int64(pos)
		pos += int(nb)
	}
	for _, key := range sortedStrings(ld.storages) {
		if !done[key] {
			return nil, s.malformed(base+int64(pos), "storage %q has no data section", clip(key))
		}
	}
	if pos != len(data) {
		return nil, s.malformed(base+int64(pos), "%d bytes of trailing data after the last storage", len(data)-pos)
	}
	if s.depth == 0 {
		s.storages = ld.list()
	}
	return obj, nil
}

func (s *session) checkSysInfo(v Value, off int64) error {
	d, ok := v.(*Dict)
	if !ok || d.Len() != 3 {
		return s.malformed(off, "torch sys_info is not a dict of three entries")
	}
	pv, _ := d.Get("protocol_version")
	le, _ := d.Get("little_endian")
	ts, _ := d.Get("type_sizes")
	sizes, ok := ts.(*Dict)
	if pv != int64(legacyProtocolVersion) || !ok || sizes.Len() != 3 {
		return s.malformed(off, "torch sys_info does not match protocol %d", legacyProtocolVersion)
	}
	short, _ := sizes.Get("short")
	intSize, _ := sizes.Get("int")
	long, _ := sizes.Get("long")
	if short != int64(2) || intSize != int64(4) || (long != int64(4) && long != int64(8)) {
		return s.malformed(off, "torch sys_info has unexpected type sizes")
	}
	if le != true {
		return s.violate(off, "big-endian torch files are not supported")
	}
	return nil
}

// storageLoader is the persistent_load of a torch file: it turns
// ('storage', type, key, location, numel[, view]) ids into storages.
type storageLoader struct {
	s        *session
	legacy   bool
	storages map[string]*Storage
	records  map[string]zipRecord // zip format: "data/<key>" records
	order    []*Storage
}

func (l *storageLoader) list() []*Storage { return l.order }

func (l *storageLoader) load(m *machine, pid Value) Value {
	t, ok := pid.(Tuple)
	want := 5
	if l.legacy {
		want = 6
	}
	if !ok || len(t) == 0 {
		m.fail("persistent id is a %s, not a tuple", typeName(pid))
		return nil
	}
	if tn := asciiText(t[0]); tn != "storage" {
		m.violate("persistent id of type %q (only storages are supported)", clip(tn))
		return None{}
	}
	if len(t) != want {
		m.fail("storage persistent id has %d fields, want %d", len(t), want)
		return nil
	}
	g, ok := t[1].(*Global)
	if !ok {
		m.fail("storage type is a %s", typeName(t[1]))
		return nil
	}
	key, ok1 := t[2].(string)
	loc := asciiText(t[3])
	numel, ok2 := t[4].(int64)
	if !ok1 || !ok2 || numel < 0 {
		m.fail("storage persistent id has fields of the wrong type")
		return nil
	}
	if !storageKey.MatchString(key) {
		m.fail("storage key %q is not a plain name", clip(key))
		return nil
	}
	switch {
	case loc == "meta":
		m.violate("storage %s is on device \"meta\": torch.load gives a tensor without data, not the bytes the file holds", clip(key))
	case !location.MatchString(loc):
		m.violate("storage location %q is not supported", clip(loc))
	}
	if l.legacy {
		if _, ok := t[5].(None); !ok {
			m.violate("storage views (legacy view metadata) are not supported")
		}
	}
	dt, known := storageDTypes[g.String()]
	if g.kind != kindStorage || !known {
		if g.Allowed {
			m.violate("global %s is not a storage type", g)
		}
		return None{}
	}
	nb, ok := mulOK(numel, int64(dt.Size))
	if !ok || nb > int64(len(l.s.root)) {
		m.fail("storage of %d elements is larger than the input", numel)
		return nil
	}
	if st := l.storages[key]; st != nil {
		if st.DType != dt || st.Numel != numel {
			m.violate("storage %s referenced as %s[%d] and %s[%d]", key, st.DType.Name, st.Numel, dt.Name, numel)
		}
		return st
	}
	st := &Storage{DType: dt, Numel: numel, Key: key, Location: loc}
	if !l.legacy {
		rec, ok := l.records["data/"+key]
		if !ok {
			m.fail("storage %s has no record data/%s", key, key)
			return nil
		}
		if int64(len(rec.data)) != nb {
			m.fail("record data/%s holds %d bytes, the storage needs %d", key, len(rec.data), nb)
			return nil
		}
		st.Data, st.Offset = rec.data, rec.offset
		rec.used = true
		l.records["data/"+key] = rec
	}
	m.charge(160)
	l.storages[key] = st
	l.order = append(l.order, st)
	return st
}

// asciiText returns a str, or bytes decoded as ASCII (torch accepts both).
func asciiText(v Value) string {
	switch x := v.(type) {
	case string:
		return x
	case *Bytes:
		for _, c := range x.Data {
			if c >= 0x80 {
				return ""
			}
		}
		return string(x.Data)
	}
	return ""
}

type zipRecord struct {
	data   []byte
	offset int64
	used   bool
}

// zipRecordNames are the records of a torch zip file other than data/<key>.
var zipRecordNames = map[string]bool{
	"data.pkl": true, "version": true, ".data/version": true, "byteorder": true,
	".data/serialization_id": true, ".format_version": true, ".storage_alignment": true,
}

// decodeZip reads a torch zip file: the exact layout torch.save writes
// (readTorchZip), every record stored uncompressed under one top-level
// folder, data.pkl the object, data/<key> the storages.
func (s *session) decodeZip(data []byte, base int64, main rules) (Value, error) {
	entries, err := readTorchZip(data)
	if err != nil {
		return nil, s.malformed(base, "%v", err)
	}
	records := make(map[string]zipRecord, len(entries))
	for _, en := range entries {
		_, rest, _ := strings.Cut(en.name, "/")
		records[rest] = zipRecord{data: data[en.off : en.off+en.size], offset: base + en.off}
		if !zipRecordNames[rest] && !(strings.HasPrefix(rest, "data/") && storageKey.MatchString(rest[5:])) {
			if err := s.violate(base+en.off, fmt.Sprintf("zip record %q is not part of a torch tensor file (TorchScript and other archives are not supported)", clip(en.name))); err != nil {
				return nil, err
			}
		}
	}
	prefix, _, _ := strings.Cut(entries[0].name, "/")
	if bo, ok := records["byteorder"]; ok && string(bo.data) != "little" {
		if err := s.violate(bo.offset, "big-endian torch files are not supported"); err != nil {
			return nil, err
		}
	}
	if v, ok := records["version"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(string(v.data))); err != nil || n < 1 || n > 100 {
			return nil, s.malformed(v.offset, "zip record version holds %q", clip(string(v.data)))
		}
	}
	pkl, ok := records["data.pkl"]
	if !ok {
		return nil, s.malformed(base, "zip archive has no %s/data.pkl", clip(prefix))
	}
	ld := &storageLoader{s: s, storages: map[string]*Storage{}, records: records}
	main.persid = ld.load
	m := s.newMachine(pkl.data, pkl.offset, &main)
	v := m.run()
	if s.depth == 0 {
		s.protocol = m.proto
	}
	if m.err != nil {
		return nil, m.err
	}
	if m.pos != len(pkl.data) {
		return nil, s.malformed(pkl.offset+int64(m.pos), "%d bytes of trailing data after STOP in data.pkl", len(pkl.data)-m.pos)
	}
	for _, name := range sortedStrings(records) {
		if strings.HasPrefix(name, "data/") && !records[name].used {
			if err := s.violate(records[name].offset, fmt.Sprintf("zip record %s is not referenced by data.pkl", name)); err != nil {
				return nil, err
			}
		}
	}
	if s.depth == 0 {
		s.storages = ld.list()
	}
	return v, nil
}

// maxZipRecords bounds the records of a torch zip file (one per storage,
// plus a few), so that the central directory cannot make the zip reader
// allocate more than a small multiple of the input.
const maxZipRecords = 100_000
