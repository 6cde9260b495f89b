// Package fault classifies errors from AWS and from providers, so that each
// boundary answers them the same way: throttling and timeouts are temporary
// and worth retrying, validation errors are not.
package fault

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Throttled reports whether err, or an error it wraps, is an AWS throttling
// error (ProvisionedThroughputExceeded, ThrottlingException, HTTP 429, ...),
// as the SDK's own retryer classifies them.
func Throttled(err error) bool {
	return err != nil && retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

// Timeout reports whether err is a deadline or network timeout.
func Timeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Retryable reports whether err is worth retrying later: throttling, a
// timeout, or an error the SDK's retryer considers transient (5xx,
// connection errors).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if Throttled(err) || Timeout(err) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// Permanent marks an error that retrying cannot fix, such as a payload that
// can never be processed.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return "permanent: " + p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p *Permanent
	return errors.As(err, &p)
}
