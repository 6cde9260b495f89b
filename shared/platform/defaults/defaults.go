// Package defaults is the one way a Config fills the fields its caller
// left unset: the handlers' (receiver, processor, reconciler), the store's
// and the tools'. A Config's zero value means "every default", so a field
// is unset when it holds its type's zero value, or, for a number or a
// duration, a negative one: no size, count, rate or wait of the project is
// meant negative, and taking the default is safer than a negative
// concurrency or page size.
//
// A value taken from the first of several sources (a flag, then a
// variable, then a default) is the standard library's cmp.Or; a field of
// function or interface type (a clock, a logger) is checked against nil
// where it is used.
package defaults

import "cmp"

// Set sets *v to def when *v is unset: the empty string, zero, or a
// negative number.
func Set[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}
