package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestErrorsAreClassifiedByTypeNotText: the hints follow the SDK's error
// types and codes, as the SDK wraps them, and never the words of a message,
// which may name anything (a table, a queue, a profile).
func TestErrorsAreClassifiedByTypeNotText(t *testing.T) {
	refused := &smithyhttp.RequestSendError{Err: &url.Error{Op: "Post", URL: "http://127.0.0.1:4566/", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}}
	// As the SDK's retryer hands them back.
	wrap := func(err error) error {
		return fmt.Errorf("operation error DynamoDB: GetItem, %w", &retry.MaxAttemptsError{Attempt: 3, Err: err})
	}
	denied := func(msg string) error { return &smithy.GenericAPIError{Code: "AccessDeniedException", Message: msg} }
	tests := []struct {
		name                           string
		err                            error
		nothingThere, noTable, noStack bool
	}{
		{name: "nothing listens", err: wrap(refused), nothingThere: true},
		{name: "no table", err: wrap(&ddbtypes.ResourceNotFoundException{Message: new("Requested resource not found")}), nothingThere: true, noTable: true},
		{
			name:         "no queue",
			err:          fmt.Errorf("find the webhook queue: %w", &sqstypes.QueueDoesNotExist{Message: new("The specified queue does not exist.")}),
			nothingThere: true,
		},
		{name: "no stack", err: &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id webhook-inbox-prod does not exist"}, noStack: true},
		{
			name:         "denied on a table whose name says ResourceNotFound",
			err:          wrap(denied("not authorized to perform dynamodb:GetItem on table/ResourceNotFound-audit")),
			nothingThere: false,
		},
		{
			name:         "denied on a queue whose name says NonExistentQueue",
			err:          denied("not authorized to perform sqs:GetQueueUrl on NonExistentQueue-test"),
			nothingThere: false,
		},
		{
			name: "a credentials failure that says does not exist",
			err:  fmt.Errorf("get identity: get credentials: %w", errors.New(`profile "prod": the SSO session "corp" does not exist`)),
		},
		{name: "throttled", err: wrap(&smithy.GenericAPIError{Code: "ThrottlingException", Message: "connection refused by the rate limiter"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nothingThere(tc.err); got != tc.nothingThere {
				t.Errorf("nothingThere: got %v, want %v", got, tc.nothingThere)
			}
			if got := noTable(tc.err); got != tc.noTable {
				t.Errorf("noTable: got %v, want %v", got, tc.noTable)
			}
			if got := noStack(tc.err); got != tc.noStack {
				t.Errorf("noStack: got %v, want %v", got, tc.noStack)
			}
			a := &app{}
			hinted := strings.Contains(a.hint(tc.err).Error(), "make dev")
			if hinted != tc.nothingThere {
				t.Errorf("hint: got %q, want a hint %v", a.hint(tc.err), tc.nothingThere)
			}
			if !errors.Is(a.tableHint("events", tc.err), tc.err) {
				t.Error("tableHint loses the error")
			}
		})
	}
}
