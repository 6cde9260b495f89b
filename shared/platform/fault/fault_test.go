package fault

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

func TestClassification(t *testing.T) {
	throttle := &smithy.GenericAPIError{Code: "ThrottlingException"}
	validation := &smithy.GenericAPIError{Code: "ValidationException"}
	tests := []struct {
		name                          string
		err                           error
		throttled, timeout, retryable bool
		permanent                     bool
	}{
		{name: "throttling, wrapped twice", err: fmt.Errorf("put: %w", &retry.MaxAttemptsError{Err: throttle}), throttled: true, retryable: true},
		{name: "deadline", err: fmt.Errorf("send: %w", context.DeadlineExceeded), timeout: true, retryable: true},
		{name: "validation", err: validation},
		{name: "permanent", err: fmt.Errorf("apply: %w", &Permanent{Err: errors.New("bad payload")}), permanent: true},
		{name: "nil", err: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Throttled(tc.err); got != tc.throttled {
				t.Errorf("Throttled: got %v, want %v", got, tc.throttled)
			}
			if got := tc.err != nil && Timeout(tc.err); got != tc.timeout {
				t.Errorf("Timeout: got %v, want %v", got, tc.timeout)
			}
			if got := Retryable(tc.err); got != tc.retryable {
				t.Errorf("Retryable: got %v, want %v", got, tc.retryable)
			}
			if got := IsPermanent(tc.err); got != tc.permanent {
				t.Errorf("IsPermanent: got %v, want %v", got, tc.permanent)
			}
		})
	}
}
