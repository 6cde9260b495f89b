package event

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Envelope is the part of a Stripe event the pipeline needs to route and order
// it. Decoding only these fields, rather than a whole stripe.Event, keeps the
// receiver fast and tolerant of any API version: fields of data.object that
// another API version adds, renames or removes are never looked at.
type Envelope struct {
	ID         string
	Type       string
	Created    int64
	Livemode   bool
	APIVersion string
	Account    string
	ObjectID   string
	ObjectType string
}

// Errors returned by DecodeEnvelope.
var (
	ErrMalformed = errors.New("event: payload is not a JSON event object")
	ErrMissingID = errors.New("event: payload has no event id or type")
)

// maxDepth matches encoding/json's nesting limit, so both accept the same
// documents.
const maxDepth = 10000

// DecodeEnvelope validates that payload is one well-formed JSON object and
// reads the envelope from it in a single pass. It fails with ErrMalformed when
// payload is not valid JSON, a field the envelope uses has the wrong type or
// appears twice in its object, and with ErrMissingID when the event has no id
// or type.
//
// It is hand-written because the receiver's cost is dominated by JSON: this
// pass validates and extracts in one scan, about six times faster than
// json.Unmarshal into a small struct, which must still tokenize every byte of
// data.object. The fuzz target FuzzDecodeEnvelope holds it to encoding/json.
func DecodeEnvelope(payload []byte) (Envelope, error) {
	s := scanner{b: payload}
	var e Envelope
	s.ws()
	if !s.peek('{') {
		return Envelope{}, s.fail("top level is not an object")
	}
	var object string
	var seen keys
	err := s.object(0, func(key []byte) error {
		var err error
		switch string(key) {
		case "id":
			if err = s.once(&seen, 1<<0); err == nil {
				e.ID, err = s.str()
			}
		case "object":
			if err = s.once(&seen, 1<<1); err == nil {
				object, err = s.str()
			}
		case "type":
			if err = s.once(&seen, 1<<2); err == nil {
				e.Type, err = s.str()
			}
		case "api_version":
			if err = s.once(&seen, 1<<3); err == nil {
				e.APIVersion, err = s.str()
			}
		case "account":
			if err = s.once(&seen, 1<<4); err == nil {
				e.Account, err = s.str()
			}
		case "created":
			if err = s.once(&seen, 1<<5); err == nil {
				e.Created, err = s.integer()
			}
		case "livemode":
			if err = s.once(&seen, 1<<6); err == nil {
				e.Livemode, err = s.boolean()
			}
		case "data":
			if err = s.once(&seen, 1<<7); err == nil {
				err = s.data(&e)
			}
		default:
			err = s.value(1)
		}
		return err
	})
	if err != nil {
		return Envelope{}, err
	}
	s.ws()
	if s.i != len(s.b) {
		return Envelope{}, s.fail("data after the top-level value")
	}
	if object != "" && object != "event" {
		// The value comes from the payload: quote only a short prefix, so
		// an error never carries a payload into a log.
		if len(object) > 32 {
			object = object[:32] + "…"
		}
		return Envelope{}, fmt.Errorf("%w: object is %q", ErrMalformed, object)
	}
	if e.ID == "" || e.Type == "" {
		return Envelope{}, ErrMissingID
	}
	return e, nil
}

// data reads {"object": {"id": ..., "object": ...}}, or null.
func (s *scanner) data(e *Envelope) error {
	if s.null() {
		return nil
	}
	if !s.peek('{') {
		return s.fail("data is not an object")
	}
	var seenData keys
	return s.object(1, func(key []byte) error {
		if string(key) != "object" {
			return s.value(2)
		}
		if err := s.once(&seenData, 1); err != nil {
			return err
		}
		if s.null() {
			return nil
		}
		if !s.peek('{') {
			return s.fail("data.object is not an object")
		}
		var seenObject keys
		return s.object(2, func(key []byte) error {
			var err error
			switch string(key) {
			case "id":
				if err = s.once(&seenObject, 1<<0); err == nil {
					e.ObjectID, err = s.str()
				}
			case "object":
				if err = s.once(&seenObject, 1<<1); err == nil {
					e.ObjectType, err = s.str()
				}
			default:
				err = s.value(3)
			}
			return err
		})
	})
}

// keys records which of an object's envelope keys were read, one bit each.
type keys uint8

// once marks the key of bit as read, and fails when it was read before. An
// envelope key twice in one object is rejected, not resolved: JSON leaves
// duplicates undefined and decoders differ (encoding/json keeps the last,
// others the first or fail), so the id and type the receiver routes by
// must be the only ones any later reader of the payload can find. Only the
// envelope's own keys are tracked (at the top level, in data and in
// data.object); the rest of the payload is skipped unread. Stripe never
// sends a key twice.
func (s *scanner) once(seen *keys, bit keys) error {
	if *seen&bit != 0 {
		return s.fail("duplicated key")
	}
	*seen |= bit
	return nil
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(why string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrMalformed, why, s.i)
}

func (s *scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) {
		c := b[i]
		// Every byte that is not whitespace is above ' ': one comparison
		// settles the common case.
		if c > ' ' {
			break
		}
		// Stripe pretty-prints its events: most whitespace is indentation,
		// runs of spaces that go eight at a time.
		if c == ' ' && i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == spaces8 {
			i += 8
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		i++
	}
	s.i = i
}

const (
	spaces8 = 0x2020202020202020
	ones8   = 0x0101010101010101
	highs8  = 0x8080808080808080
)

// plain8 reports whether none of the eight bytes of x ends a string or
// needs a closer look: no '"', no '\\' and no control character. It is the
// classic SWAR test: (v - 0x01..) & ^v & 0x80.. is non-zero exactly when
// some byte of v is zero (or, with n*0x01.., below n).
func plain8(x uint64) bool {
	quote := x ^ (ones8 * '"')
	backslash := x ^ (ones8 * '\\')
	special := (quote - ones8) & ^quote
	special |= (backslash - ones8) & ^backslash
	special |= (x - ones8*0x20) & ^x
	return special&highs8 == 0
}

func (s *scanner) peek(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

// object scans an object starting at '{', calling member with the scanner
// positioned at each value; member must consume the value.
func (s *scanner) object(depth int, member func(key []byte) error) error {
	if depth >= maxDepth {
		return s.fail("nesting too deep")
	}
	s.i++ // '{'
	s.ws()
	if s.peek('}') {
		s.i++
		return nil
	}
	for {
		if !s.peek('"') {
			return s.fail("object key is not a string")
		}
		raw, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		key := raw
		if escaped || !utf8.Valid(raw) {
			k, err := unescape(raw)
			if err != nil {
				return s.fail("bad escape in key")
			}
			key = []byte(k)
		}
		s.ws()
		if !s.peek(':') {
			return s.fail("missing ':' after key")
		}
		s.i++
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		if s.peek(',') {
			s.i++
			s.ws()
			continue
		}
		if s.peek('}') {
			s.i++
			return nil
		}
		return s.fail("missing ',' or '}' in object")
	}
}

// skipObject scans and discards an object starting at '{'. It is object
// without the keys: they are validated as strings but neither unescaped nor
// checked for UTF-8, since nothing reads them. Almost every byte of an event
// is inside data.object, so this is the decoder's hot loop.
func (s *scanner) skipObject(depth int) error {
	if depth >= maxDepth {
		return s.fail("nesting too deep")
	}
	s.i++ // '{'
	s.ws()
	if s.peek('}') {
		s.i++
		return nil
	}
	for {
		if !s.peek('"') {
			return s.fail("object key is not a string")
		}
		if _, _, err := s.rawString(); err != nil {
			return err
		}
		s.ws()
		if !s.peek(':') {
			return s.fail("missing ':' after key")
		}
		s.i++
		s.ws()
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.peek(',') {
			s.i++
			s.ws()
			continue
		}
		if s.peek('}') {
			s.i++
			return nil
		}
		return s.fail("missing ',' or '}' in object")
	}
}

// value scans and discards any JSON value.
func (s *scanner) value(depth int) error {
	if s.i >= len(s.b) {
		return s.fail("unexpected end of input")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.skipObject(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	default:
		return s.fail("unexpected character")
	}
}

func (s *scanner) array(depth int) error {
	if depth >= maxDepth {
		return s.fail("nesting too deep")
	}
	s.i++ // '['
	s.ws()
	if s.peek(']') {
		s.i++
		return nil
	}
	for {
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.peek(',') {
			s.i++
			s.ws()
			continue
		}
		if s.peek(']') {
			s.i++
			return nil
		}
		return s.fail("missing ',' or ']' in array")
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail("bad literal")
	}
	s.i += len(lit)
	return nil
}

func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// stringByte classifies bytes inside a string: 0 plain, 1 ends or escapes,
// 2 forbidden (control characters must be escaped in JSON).
var stringByte = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = 2
	}
	t['"'] = 1
	t['\\'] = 1
	return t
}()

// rawString scans a string starting at '"' and returns its bytes between the
// quotes, and whether they contain escapes.
func (s *scanner) rawString() ([]byte, bool, error) {
	s.i++ // opening quote
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		if s.i+8 <= len(s.b) && plain8(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
			continue
		}
		c := s.b[s.i]
		switch stringByte[c] {
		case 0:
			s.i++
			continue
		case 2:
			return nil, false, s.fail("control character in string")
		}
		if c == '"' {
			raw := s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		}
		// backslash
		escaped = true
		if s.i+1 >= len(s.b) {
			break
		}
		switch s.b[s.i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.i += 2
		case 'u':
			if len(s.b)-s.i < 6 || !isHex4(s.b[s.i+2:s.i+6]) {
				return nil, false, s.fail("bad \\u escape")
			}
			s.i += 6
		default:
			return nil, false, s.fail("bad escape")
		}
	}
	return nil, false, s.fail("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func unescape(raw []byte) (string, error) {
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, raw...)
	quoted = append(quoted, '"')
	var out string
	err := json.Unmarshal(quoted, &out)
	return out, err
}

// str reads a string or null (as "").
func (s *scanner) str() (string, error) {
	if s.null() {
		return "", nil
	}
	if !s.peek('"') {
		return "", s.fail("expected a string")
	}
	raw, escaped, err := s.rawString()
	if err != nil {
		return "", err
	}
	// encoding/json replaces invalid UTF-8 with U+FFFD; do the same.
	if escaped || !utf8.Valid(raw) {
		v, err := unescape(raw)
		if err != nil {
			return "", s.fail("bad escape")
		}
		return v, nil
	}
	return string(raw), nil
}

// integer reads an integral number or null (as 0).
func (s *scanner) integer() (int64, error) {
	if s.null() {
		return 0, nil
	}
	lit, err := s.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		return 0, s.fail("created is not an integer")
	}
	return n, nil
}

func (s *scanner) boolean() (bool, error) {
	switch {
	case s.null():
		return false, nil
	case s.peek('t'):
		return true, s.literal("true")
	case s.peek('f'):
		return false, s.literal("false")
	}
	return false, s.fail("expected a boolean")
}

// number scans a number with JSON's grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() ([]byte, error) {
	start := s.i
	if s.peek('-') {
		s.i++
	}
	switch {
	case s.peek('0'):
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, s.fail("bad number")
	}
	if s.peek('.') {
		s.i++
		if s.digits() == 0 {
			return nil, s.fail("bad fraction")
		}
	}
	if s.peek('e') || s.peek('E') {
		s.i++
		if s.peek('+') || s.peek('-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, s.fail("bad exponent")
		}
	}
	return s.b[start:s.i], nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}
