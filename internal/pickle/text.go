package pickle

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeQuoted decodes the argument of the protocol-0 STRING opcode: a
// quoted Python 2 string literal with backslash escapes.
func decodeQuoted(b []byte) ([]byte, error) {
	if len(b) < 2 || b[0] != b[len(b)-1] || (b[0] != '\'' && b[0] != '"') {
		return nil, fmt.Errorf("STRING argument must be quoted")
	}
	b = b[1 : len(b)-1]
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 == len(b) {
			if c == '\\' {
				return nil, fmt.Errorf("STRING argument ends with a lone backslash")
			}
			out = append(out, c)
			continue
		}
		i++
		switch e := b[i]; e {
		case '\\', '\'', '"':
			out = append(out, e)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, 11)
		case 'x':
			if i+3 > len(b) {
				return nil, fmt.Errorf("truncated \\x escape in STRING argument")
			}
			v, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8)
			if err != nil {
				return nil, fmt.Errorf("invalid \\x escape in STRING argument")
			}
			out = append(out, byte(v))
			i += 2
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(b) && j < i+3 && b[j] >= '0' && b[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(string(b[i:j]), 8, 16)
			out = append(out, byte(v))
			i = j - 1
		default:
			out = append(out, '\\', e)
		}
	}
	return out, nil
}

// decodeRawUnicodeEscape decodes Python's raw-unicode-escape codec, used by
// the protocol-0 UNICODE opcode: \uXXXX and \UXXXXXXXX escapes, every other
// byte a Latin-1 code point.
func decodeRawUnicodeEscape(b []byte) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' && i+1 < len(b) && (b[i+1] == 'u' || b[i+1] == 'U') {
			n := 4
			if b[i+1] == 'U' {
				n = 8
			}
			if i+2+n > len(b) {
				return "", fmt.Errorf("truncated \\%c escape in UNICODE argument", b[i+1])
			}
			v, err := strconv.ParseUint(string(b[i+2:i+2+n]), 16, 32)
			if err != nil || v > utf8.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
				return "", fmt.Errorf("invalid \\%c escape in UNICODE argument", b[i+1])
			}
			sb.WriteRune(rune(v))
			i += 1 + n
			continue
		}
		sb.WriteRune(rune(c))
	}
	return sb.String(), nil
}
