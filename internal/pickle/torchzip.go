package pickle

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"
)

// The zip layout torch.save writes (PyTorch's stream writer over miniz),
// and the only one readTorchZip accepts:
//
//	local header, record bytes, data descriptor   (one per record, in order)
//	central directory                              (same records, same order)
//	zip64 end record, zip64 end locator            (optional)
//	end record                                     (no comment: ends the file)
//
// Records are stored (method 0), unencrypted, with only general-purpose
// flags 3 (data descriptor) and 11 (UTF-8 names). Every byte of the input
// belongs to exactly one of these structures, so every zip reader that
// finds an end record at all finds this one, and miniz (which follows the
// zip64 record whenever its locator is present) and readers that follow
// the classic record read the same directory.

const (
	zipLocalLen      = 30
	zipCentralLen    = 46
	zipEndLen        = 22
	zipEnd64Len      = 56
	zipLocator64Len  = 20
	zipDescriptorLen = 16
	zipDescriptor64  = 24
	zipFlagsAllowed  = 0x0808 // data descriptor, UTF-8 names
	zipSat16         = 0xffff
	zipSat32         = 0xffffffff
)

var (
	zipFolderName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	zipRecordRest = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}(/[A-Za-z0-9_.-]{1,64})?$`)
)

// zipEntry is one record of a torch zip file: its name, where its bytes
// are and their CRC-32.
type zipEntry struct {
	name string
	off  int64 // of the record's bytes
	size int64
	crc  uint32
}

// readTorchZip checks that data is laid out exactly as torch.save lays out
// a zip file and returns its records in order. The whole layout (every
// header and its position) is checked before any record's CRC is computed,
// so the cost is one pass over the input.
func readTorchZip(data []byte) ([]zipEntry, error) {
	le := binary.LittleEndian
	size := int64(len(data))
	if size < zipEndLen {
		return nil, fmt.Errorf("zip archive of %d bytes is shorter than its end record", size)
	}
	end := size - zipEndLen
	e := data[end:]
	if string(e[:4]) != "PK\x05\x06" {
		return nil, fmt.Errorf("zip end record missing or followed by trailing data (torch.save writes no comment and nothing after it)")
	}
	if le.Uint16(e[4:]) != 0 || le.Uint16(e[6:]) != 0 || le.Uint16(e[8:]) != le.Uint16(e[10:]) || le.Uint16(e[20:]) != 0 {
		return nil, fmt.Errorf("zip end record describes a multi-disk archive or carries a comment")
	}
	n, cdSize, cdOff := uint64(le.Uint16(e[10:])), uint64(le.Uint32(e[12:])), uint64(le.Uint32(e[16:]))
	cdEnd := end
	if end >= zipLocator64Len && string(data[end-zipLocator64Len:end-zipLocator64Len+4]) == "PK\x06\x07" {
		loc := data[end-zipLocator64Len : end]
		rec := end - zipLocator64Len - zipEnd64Len
		if rec < 0 || le.Uint32(loc[4:]) != 0 || le.Uint64(loc[8:]) != uint64(rec) || le.Uint32(loc[16:]) != 1 {
			return nil, fmt.Errorf("zip64 end locator does not point at a zip64 end record right before it")
		}
		z := data[rec : rec+zipEnd64Len]
		if string(z[:4]) != "PK\x06\x06" || le.Uint64(z[4:]) != zipEnd64Len-12 || le.Uint32(z[16:]) != 0 || le.Uint32(z[20:]) != 0 || le.Uint64(z[24:]) != le.Uint64(z[32:]) {
			return nil, fmt.Errorf("zip64 end record is not a single-disk record of %d bytes", zipEnd64Len)
		}
		n64, size64, off64 := le.Uint64(z[32:]), le.Uint64(z[40:]), le.Uint64(z[48:])
		if (n != zipSat16 && n != n64) || (cdSize != zipSat32 && cdSize != size64) || (cdOff != zipSat32 && cdOff != off64) {
			return nil, fmt.Errorf("zip64 end record and classic end record describe different central directories")
		}
		n, cdSize, cdOff, cdEnd = n64, size64, off64, rec
	} else if n == zipSat16 || cdSize == zipSat32 || cdOff == zipSat32 {
		return nil, fmt.Errorf("zip end record has saturated fields but no zip64 end record")
	}
	if cdOff > uint64(cdEnd) || cdSize != uint64(cdEnd)-cdOff {
		return nil, fmt.Errorf("zip central directory does not end where the end records begin")
	}
	if n == 0 || n > maxZipRecords || n > cdSize/zipCentralLen {
		return nil, fmt.Errorf("zip archive announces %d records (at most %d fit its directory, limit %d)", n, cdSize/zipCentralLen, maxZipRecords)
	}
	entries := make([]zipEntry, 0, n)
	names := make(map[string]bool, n)
	p := int64(cdOff) // central directory position
	var pos int64     // where the next local header must start
	var prefix string
	for i := uint64(0); i < n; i++ {
		if int64(cdEnd)-p < zipCentralLen {
			return nil, fmt.Errorf("zip central directory holds fewer records than announced")
		}
		c := data[p:]
		if string(c[:4]) != "PK\x01\x02" {
			return nil, fmt.Errorf("zip central directory entry %d has no signature", i)
		}
		flags, method := le.Uint16(c[8:]), le.Uint16(c[10:])
		crc := le.Uint32(c[16:])
		csize, usize := uint64(le.Uint32(c[20:])), uint64(le.Uint32(c[24:]))
		nl, el, cl := int64(le.Uint16(c[28:])), int64(le.Uint16(c[30:])), int64(le.Uint16(c[32:]))
		disk, loff := le.Uint16(c[34:]), uint64(le.Uint32(c[42:]))
		if int64(cdEnd)-p-zipCentralLen < nl+el+cl {
			return nil, fmt.Errorf("zip central directory entry %d runs past the directory", i)
		}
		name := string(c[zipCentralLen : zipCentralLen+nl])
		extra := c[zipCentralLen+nl : zipCentralLen+nl+el]
		p += zipCentralLen + nl + el + cl
		if method != 0 {
			return nil, fmt.Errorf("zip record %q is compressed (torch stores records uncompressed)", clip(name))
		}
		if flags&^zipFlagsAllowed != 0 || cl != 0 || disk != 0 {
			return nil, fmt.Errorf("zip record %q is encrypted, commented or on another disk (flags %#x)", clip(name), flags)
		}
		zip64 := false
		if el != 0 {
			var err error
			if usize, csize, loff, err = zip64Extra(extra, usize, csize, loff); err != nil {
				return nil, fmt.Errorf("zip record %q: %v", clip(name), err)
			}
			zip64 = true
		}
		if csize != usize {
			return nil, fmt.Errorf("zip record %q is compressed (torch stores records uncompressed)", clip(name))
		}
		if err := checkZipName(name, &prefix, names); err != nil {
			return nil, err
		}
		if loff != uint64(pos) {
			return nil, fmt.Errorf("zip record %q starts at %d, not right after the previous record (%d)", clip(name), loff, pos)
		}
		// the local header
		if int64(cdOff)-pos < zipLocalLen {
			return nil, fmt.Errorf("zip record %q: local header runs into the central directory", clip(name))
		}
		l := data[pos:]
		lnl, lel := int64(le.Uint16(l[26:])), int64(le.Uint16(l[28:]))
		if string(l[:4]) != "PK\x03\x04" || le.Uint16(l[6:]) != flags || le.Uint16(l[8:]) != 0 {
			return nil, fmt.Errorf("zip record %q: local header disagrees with the central directory", clip(name))
		}
		dataOff := pos + zipLocalLen + lnl + lel
		if dataOff > int64(cdOff) || usize > uint64(int64(cdOff)-dataOff) {
			return nil, fmt.Errorf("zip record %q runs into the central directory", clip(name))
		}
		if string(l[zipLocalLen:zipLocalLen+lnl]) != name {
			return nil, fmt.Errorf("zip record %q: local header names it %q", clip(name), clip(string(l[zipLocalLen:zipLocalLen+lnl])))
		}
		if err := checkExtraFields(l[zipLocalLen+lnl : zipLocalLen+lnl+lel]); err != nil {
			return nil, fmt.Errorf("zip record %q: local header: %v", clip(name), err)
		}
		lcrc, lcs, lus := le.Uint32(l[14:]), le.Uint32(l[18:]), le.Uint32(l[22:])
		next := dataOff + int64(usize)
		if flags&0x8 != 0 {
			if lcrc != 0 || (lcs != 0 && lcs != zipSat32) || lus != lcs {
				return nil, fmt.Errorf("zip record %q: local header has sizes although a data descriptor follows", clip(name))
			}
			dl := int64(zipDescriptorLen)
			if zip64 {
				dl = zipDescriptor64
			}
			if int64(cdOff)-next < dl {
				return nil, fmt.Errorf("zip record %q: data descriptor runs into the central directory", clip(name))
			}
			d := data[next:]
			ok := string(d[:4]) == "PK\x07\x08" && le.Uint32(d[4:]) == crc
			if zip64 {
				ok = ok && le.Uint64(d[8:]) == csize && le.Uint64(d[16:]) == usize
			} else {
				ok = ok && uint64(le.Uint32(d[8:])) == csize && uint64(le.Uint32(d[12:])) == usize
			}
			if !ok {
				return nil, fmt.Errorf("zip record %q: data descriptor disagrees with the central directory", clip(name))
			}
			next += dl
		} else if lcrc != crc || (uint64(lcs) != csize && !(zip64 && lcs == zipSat32)) || (uint64(lus) != usize && !(zip64 && lus == zipSat32)) {
			return nil, fmt.Errorf("zip record %q: local header disagrees with the central directory", clip(name))
		}
		entries = append(entries, zipEntry{name: name, off: dataOff, size: int64(usize), crc: crc})
		pos = next
	}
	if p != int64(cdEnd) {
		return nil, fmt.Errorf("%d bytes in the zip central directory after its last record", int64(cdEnd)-p)
	}
	if pos != int64(cdOff) {
		return nil, fmt.Errorf("%d bytes between the last zip record and the central directory", int64(cdOff)-pos)
	}
	// Only now, with every record's span known to be disjoint, the CRCs.
	for _, en := range entries {
		if crc32.ChecksumIEEE(data[en.off:en.off+en.size]) != en.crc {
			return nil, fmt.Errorf("zip record %q fails its CRC-32 check", clip(en.name))
		}
	}
	return entries, nil
}

// checkZipName accepts plain names under the one folder of the first
// record, unique even when compared without case (miniz looks records up
// case-insensitively).
func checkZipName(name string, prefix *string, seen map[string]bool) error {
	folder, rest, ok := strings.Cut(name, "/")
	if !ok || !zipFolderName.MatchString(folder) || folder == "." || folder == ".." || !zipRecordRest.MatchString(rest) || strings.Contains(rest, "..") {
		return fmt.Errorf("zip record name %q is not a plain name inside a folder", clip(name))
	}
	if *prefix == "" {
		*prefix = folder
	} else if folder != *prefix {
		return fmt.Errorf("zip record %q is outside folder %q", clip(name), clip(*prefix))
	}
	key := strings.ToLower(name)
	if seen[key] {
		return fmt.Errorf("zip record %q appears twice", clip(name))
	}
	seen[key] = true
	return nil
}

// zip64Extra reads a central directory entry's extra field, which may hold
// only the zip64 extended information (header 0x0001) with exactly the
// fields whose classic values are saturated.
func zip64Extra(extra []byte, usize, csize, off uint64) (uint64, uint64, uint64, error) {
	le := binary.LittleEndian
	if len(extra) < 4 || le.Uint16(extra) != 1 || int(le.Uint16(extra[2:])) != len(extra)-4 {
		return 0, 0, 0, fmt.Errorf("central directory extra field other than one zip64 field")
	}
	b := extra[4:]
	for _, f := range []*uint64{&usize, &csize, &off} {
		if *f != zipSat32 {
			continue
		}
		if len(b) < 8 {
			return 0, 0, 0, fmt.Errorf("zip64 extra field too short")
		}
		*f, b = le.Uint64(b), b[8:]
	}
	if len(b) != 0 {
		return 0, 0, 0, fmt.Errorf("zip64 extra field holds fields that are not saturated")
	}
	return usize, csize, off, nil
}

// checkExtraFields requires a local extra field to be a well-formed
// sequence of (id, length, data) fields filling it exactly.
func checkExtraFields(b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return fmt.Errorf("truncated extra field")
		}
		n := int(binary.LittleEndian.Uint16(b[2:]))
		if len(b)-4 < n {
			return fmt.Errorf("extra field runs past its header")
		}
		b = b[4+n:]
	}
	return nil
}

// isTarHeader reports whether the first 512 bytes of data would be taken
// for a tar header by Python's tarfile, which torch.load tries before the
// legacy pickle format: a checksum field that parses as a number (octal
// text or base-256) equal to the unsigned or signed sum of the header's
// bytes with the checksum field counted as spaces. The parse is more
// lenient than Python's, so that anything tarfile accepts is caught.
func isTarHeader(data []byte) bool {
	if len(data) < 512 {
		return false
	}
	h := data[:512]
	var unsigned, signed int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		unsigned += int64(c)
		signed += int64(int8(c))
	}
	f := h[148:156]
	var vals []int64
	if f[0] == 0x80 || f[0] == 0xff {
		var v int64
		for _, c := range f[1:] {
			v = v<<8 | int64(c)
		}
		if f[0] == 0xff {
			v -= 1 << 56
		}
		vals = append(vals, v)
	} else {
		s := f
		if i := strings.IndexByte(string(s), 0); i >= 0 {
			s = s[:i]
		}
		var digits []byte
		neg := false
		for j, c := range s {
			switch {
			case c >= '0' && c <= '7':
				digits = append(digits, c)
			case c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == '_' || c == '+':
			case c == '-':
				neg = true
			case (c == 'o' || c == 'O') && j > 0:
			default:
				return false // not a number: tarfile refuses the header
			}
		}
		var v int64
		for _, d := range digits {
			v = v<<3 | int64(d-'0')
			if v > 1<<40 {
				return false
			}
		}
		if neg {
			v = -v
		}
		vals = append(vals, v)
	}
	for _, v := range vals {
		if v == unsigned || v == signed {
			return true
		}
	}
	return false
}
