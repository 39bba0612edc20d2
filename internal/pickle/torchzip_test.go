package pickle

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
)

// tzRecord is one record for torchLayout.
type tzRecord struct {
	name string
	data []byte
}

// tzOptions perturb the layout torchLayout writes, one attack each.
type tzOptions struct {
	prefix        []byte // bytes before the first record
	gap           []byte // bytes between the first and second records
	afterCD       []byte // bytes between the central directory and the end records
	noZip64       bool
	zip64Entries  int // added to the zip64 record's entry count
	localName     string
	descriptorCRC uint32 // xor into the first descriptor's CRC
	centralExtra  []byte // extra field on the first central entry
	flags         uint16 // xor into the first central entry's flags
	comment       string
}

// torchLayout writes records the way torch.save does: local headers with
// flags 0x808, zero sizes and an FB padding extra field, each record
// followed by a data descriptor, then the central directory, a zip64 end
// record and locator, and the end record.
func torchLayout(recs []tzRecord, o tzOptions) []byte {
	le := binary.LittleEndian
	var b bytes.Buffer
	b.Write(o.prefix)
	var cd bytes.Buffer
	for i, r := range recs {
		if i == 1 {
			b.Write(o.gap)
		}
		off := b.Len()
		name := r.name
		if i == 0 && o.localName != "" {
			name = o.localName
		}
		pad := 64 - (off+30+len(name)+4)%64
		h := make([]byte, 30)
		copy(h, "PK\x03\x04")
		le.PutUint16(h[6:], 0x808)
		le.PutUint16(h[26:], uint16(len(name)))
		le.PutUint16(h[28:], uint16(4+pad))
		b.Write(h)
		b.WriteString(name)
		b.WriteString("FB")
		binary.Write(&b, binary.LittleEndian, uint16(pad))
		b.Write(bytes.Repeat([]byte("Z"), pad))
		b.Write(r.data)
		crc := crc32.ChecksumIEEE(r.data)
		d := make([]byte, 16)
		copy(d, "PK\x07\x08")
		le.PutUint32(d[4:], crc)
		if i == 0 {
			le.PutUint32(d[4:], crc^o.descriptorCRC)
		}
		le.PutUint32(d[8:], uint32(len(r.data)))
		le.PutUint32(d[12:], uint32(len(r.data)))
		b.Write(d)
		c := make([]byte, 46)
		copy(c, "PK\x01\x02")
		flags := uint16(0x808)
		var extra []byte
		if i == 0 {
			flags ^= o.flags
			extra = o.centralExtra
		}
		le.PutUint16(c[8:], flags)
		le.PutUint32(c[16:], crc)
		le.PutUint32(c[20:], uint32(len(r.data)))
		le.PutUint32(c[24:], uint32(len(r.data)))
		le.PutUint16(c[28:], uint16(len(r.name)))
		le.PutUint16(c[30:], uint16(len(extra)))
		le.PutUint32(c[42:], uint32(off))
		cd.Write(c)
		cd.WriteString(r.name)
		cd.Write(extra)
	}
	cdOff := b.Len()
	b.Write(cd.Bytes())
	b.Write(o.afterCD)
	n := len(recs)
	if !o.noZip64 {
		z := make([]byte, 56)
		copy(z, "PK\x06\x06")
		le.PutUint64(z[4:], 44)
		le.PutUint64(z[24:], uint64(n+o.zip64Entries))
		le.PutUint64(z[32:], uint64(n+o.zip64Entries))
		le.PutUint64(z[40:], uint64(cd.Len()))
		le.PutUint64(z[48:], uint64(cdOff))
		rec := b.Len()
		b.Write(z)
		l := make([]byte, 20)
		copy(l, "PK\x06\x07")
		le.PutUint64(l[8:], uint64(rec))
		le.PutUint32(l[16:], 1)
		b.Write(l)
	}
	e := make([]byte, 22)
	copy(e, "PK\x05\x06")
	le.PutUint16(e[8:], uint16(n))
	le.PutUint16(e[10:], uint16(n))
	le.PutUint32(e[12:], uint32(cd.Len()))
	le.PutUint32(e[16:], uint32(cdOff))
	le.PutUint16(e[20:], uint16(len(o.comment)))
	b.Write(e)
	b.WriteString(o.comment)
	return b.Bytes()
}

// TestReadTorchZipRefusesAmbiguity: the layout torch.save writes reads,
// with and without the zip64 end records; every byte outside it, and every
// disagreement between structures that two zip readers could resolve
// differently, is refused.
func TestReadTorchZipRefusesAmbiguity(t *testing.T) {
	floats := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}
	recs := []tzRecord{
		{"archive/data.pkl", tensorPickle("0", 3, 1, []int{2}, []int{1})},
		{"archive/data/0", floats},
		{"archive/version", []byte("3\n")},
	}
	p := mustProfile(t, ProfileTorchStateDict)
	for _, o := range []tzOptions{{}, {noZip64: true}} {
		m, err := ConvertBytes(torchLayout(recs, o), p)
		if err != nil {
			t.Fatalf("torch.save layout (zip64 end records: %v): %v", !o.noZip64, err)
		}
		if len(m.Tensors) != 1 || !bytes.Equal(m.Tensors[0].Bytes(), floats[4:]) {
			t.Fatalf("tensors %+v", m.Tensors)
		}
	}
	with := func(mod func([]tzRecord) []tzRecord) []tzRecord {
		return mod(append([]tzRecord(nil), recs...))
	}
	zip64Extra := []byte{1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, c := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"bytes before the first record", torchLayout(recs, tzOptions{prefix: []byte("PK\x03\x04junk")}), "not right after the previous record"},
		{"bytes between records", torchLayout(recs, tzOptions{gap: []byte("cos\nsystem\n")}), "not right after the previous record"},
		{"bytes after the central directory", torchLayout(recs, tzOptions{afterCD: []byte("PK\x01\x02")}), "central directory does not end"},
		{"zip64 record counts another directory", torchLayout(recs, tzOptions{zip64Entries: 1}), "different central directories"},
		{"local header names another record", torchLayout(recs, tzOptions{localName: "archive/data.pk_"}), "local header names it"},
		{"data descriptor disagrees", torchLayout(recs, tzOptions{descriptorCRC: 1}), "data descriptor disagrees"},
		{"central flags disagree", torchLayout(recs, tzOptions{flags: 0x800}), "local header disagrees"},
		{"encrypted", torchLayout(recs, tzOptions{flags: 0x1}), "encrypted"},
		{"unsaturated zip64 extra", torchLayout(recs, tzOptions{centralExtra: zip64Extra}), "not saturated"},
		{"comment", torchLayout(recs, tzOptions{comment: "x"}), "trailing data"},
		{"names equal without case", torchLayout(with(func(r []tzRecord) []tzRecord {
			return append(r, tzRecord{"archive/DATA.PKL", []byte("cos\nsystem\n(S'true'\ntR.")})
		}), tzOptions{}), "appears twice"},
		{"exact duplicate name", torchLayout(with(func(r []tzRecord) []tzRecord {
			return append(r, tzRecord{"archive/data.pkl", []byte("cos\nsystem\n(S'true'\ntR.")})
		}), tzOptions{}), "appears twice"},
		{"path name", torchLayout(with(func(r []tzRecord) []tzRecord { return append(r, tzRecord{"archive/../x", nil}) }), tzOptions{}), "not a plain name"},
		{"backslash name", torchLayout(with(func(r []tzRecord) []tzRecord { return append(r, tzRecord{`archive/data\0`, nil}) }), tzOptions{}), "not a plain name"},
		{"second folder", torchLayout(with(func(r []tzRecord) []tzRecord { return append(r, tzRecord{"other/data.pkl", nil}) }), tzOptions{}), "outside folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readTorchZip(c.data)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want it to mention %q", err, c.msg)
			}
			if r := ScanBytes(c.data, p); r.Verdict != Malformed {
				t.Fatalf("scan verdict %s", r.Verdict)
			}
		})
	}
}

// TestTarHeaderCheck: tarfile's checksum test, in every spelling tarfile
// parses, is recognised; a torch legacy file is not a tar header.
func TestTarHeaderCheck(t *testing.T) {
	header := func(field func(sum int) string) []byte {
		h := make([]byte, 512)
		copy(h, "\x80\x03B\x00\x10\x00\x00storages")
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], field(sum))
		return h
	}
	for name, f := range map[string]func(int) string{
		"octal":            func(s int) string { return octal(s, 6) + "\x00 " },
		"leading spaces":   func(s int) string { return "  " + octal(s, 4) + "\x00" },
		"underscore":       func(s int) string { o := octal(s, 6); return o[:3] + "_" + o[3:] + "\x00" },
		"0o prefix":        func(s int) string { return "0o" + octal(s, 5) + "\x00" },
		"base-256":         func(s int) string { return "\x80\x00\x00\x00\x00\x00" + string([]byte{byte(s >> 8), byte(s)}) },
		"trailing garbage": func(s int) string { return octal(s, 6) + "\x00x" },
	} {
		if h := header(f); !isTarHeader(h) {
			t.Errorf("%s: checksum field %q not recognised", name, h[148:156])
		}
	}
	if isTarHeader(header(func(s int) string { return octal(s+1, 6) + "\x00 " })) {
		t.Error("a wrong checksum is taken for a tar header")
	}
	blob := floatBlob(200)
	if isTarHeader(blob) {
		t.Error("a legacy torch file is taken for a tar header")
	}
}

func octal(v, width int) string {
	s := ""
	for ; v > 0; v >>= 3 {
		s = string(rune('0'+v&7)) + s
	}
	for len(s) < width {
		s = "0" + s
	}
	return s
}
