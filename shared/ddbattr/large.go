package ddbattr

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
)

const (
	// CompressAbove is the size from which a value is stored gzipped.
	// Below it compression saves little and costs CPU on every delivery.
	CompressAbove = 8 << 10
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

// gzipWriters are reused across deliveries: a new flate compressor
// allocates and clears about a megabyte, which cost far more than
// compressing a typical large event.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a constant, valid level
	return zw
}}

// Pack returns the bytes to store for v and whether they are gzipped: v
// itself up to CompressAbove bytes, else v gzipped, or nil when even
// gzipped it is over MaxStored (the caller stores the item without it).
func Pack(v []byte) (stored []byte, gzipped bool, err error) {
	if len(v) <= CompressAbove {
		return v, false, nil
	}
	// JSON compresses to well under half; start there.
	buf := bytes.NewBuffer(make([]byte, 0, len(v)/3))
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(buf)
	if _, err := zw.Write(v); err != nil {
		return nil, false, fmt.Errorf("ddbattr: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, false, fmt.Errorf("ddbattr: gzip: %w", err)
	}
	if buf.Len() > MaxStored {
		return nil, false, nil
	}
	return buf.Bytes(), true, nil
}

// Unpack inflates a value Pack gzipped, reading at most one byte more than
// MaxInflated: a value that inflates further is an error, as is one that
// is not gzip.
func Unpack(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if len(out) > MaxInflated {
		return nil, fmt.Errorf("gunzip: inflates past the %d-byte limit (ddbattr.MaxInflated)", MaxInflated)
	}
	return out, nil
}
