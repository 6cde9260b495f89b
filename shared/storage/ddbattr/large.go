package ddbattr

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
)

const (
	// MaxStored is the most a stored value may take, gzipped: it keeps an
	// item, with its other attributes, under DynamoDB's 400 KB item limit.
	MaxStored = 380 << 10
	// MaxInflated bounds a stored value once inflated. A value is an event's
	// payload (a body the receiver accepted, at most MAX_BODY_BYTES, 1 MB by
	// default, or an event the reconciler listed) or part of one (a
	// snapshot's data); whatever MAX_BODY_BYTES says, Lambda hands a
	// function no request over its 6 MB invocation limit, and Stripe's
	// events are far smaller. A gzip of MaxStored bytes could otherwise
	// inflate about a thousandfold, to some 390 MB, past a function's
	// memory: a value that inflates beyond this bound was not written by
	// Pack, and fails its own item, not the function.
	MaxInflated = 6 << 20
)

// level is the compression level of every stored value. DynamoDB bills
// a write per started KB, so the level is chosen by what it stores, not
// by its speed: the 7.3 KB subscription event of the cost meter (make
// cost) gzips to 2,234 bytes at gzip.BestSpeed (3 write units) and 1,922
// at the default level (2), in about 90 µs instead of 35; BestCompression
// saves 17 more bytes for twice the time. The 2.6 KB event gives 1,126
// and 1,040 bytes.
const level = gzip.DefaultCompression

// gzipWriters are reused across deliveries: a new flate compressor
// allocates and clears about a megabyte, which cost far more than
// compressing a typical event.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, level) // a constant, valid level
	return zw
}}

// Pack returns v gzipped, the bytes to store for it, or nil when even
// gzipped it is over MaxStored (the caller stores the item without it).
// Every value is gzipped, whatever its size: a stored value is billed on
// every write of its item, and JSON of a few KB shrinks to about a third.
func Pack(v []byte) (stored []byte, err error) {
	// JSON compresses to well under half; start there.
	buf := bytes.NewBuffer(make([]byte, 0, len(v)/3+32))
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(buf)
	if _, err := zw.Write(v); err != nil {
		return nil, fmt.Errorf("ddbattr: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("ddbattr: gzip: %w", err)
	}
	if buf.Len() > MaxStored {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// Unpack inflates a value Pack or PackWith wrote: gzip (a gzip header's
// first byte, 0x1f, is never a zlib header's), or zlib with the dictionary
// among dicts that its header names. It reads at most one byte more than
// MaxInflated: a value that inflates further is an error, as is one that
// is neither, or names a dictionary not among dicts.
func Unpack(b []byte, dicts ...*Dict) ([]byte, error) {
	var r io.ReadCloser
	var err error
	if isZlib(b) {
		r, err = unpackZlib(b, dicts)
	} else {
		r, err = gzip.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if len(out) > MaxInflated {
		return nil, fmt.Errorf("gunzip: inflates past the %d-byte limit (ddbattr.MaxInflated)", MaxInflated)
	}
	return out, nil
}
