package poller

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// TestALongPollOutlastsTheFunctionsAttemptTimeout: a queue that answers a
// long poll with a message after the functions' attempt timeout
// (sdkhttp.AttemptTimeout) has handed that message out. A poller whose
// attempt gave up first would leave it received by nobody, invisible for
// the queue's visibility timeout; the poller must wait for the answer and
// pass the message on.
func TestALongPollOutlastsTheFunctionsAttemptTimeout(t *testing.T) {
	late := sdkhttp.AttemptTimeout + time.Second
	var receives, abandoned atomic.Int32
	const body = `{"id":"evt_late"}`
	sum := md5.Sum([]byte(body))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch target := r.Header.Get("X-Amz-Target"); target {
		case "AmazonSQS.ReceiveMessage":
			if receives.Add(1) > 1 {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				fmt.Fprint(w, `{"Messages":[]}`)
				return
			}
			select {
			case <-time.After(late):
			case <-r.Context().Done():
				// The client gave up: in SQS the message is now received
				// and invisible, handed to no one.
				abandoned.Add(1)
				return
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			fmt.Fprintf(w, `{"Messages":[{"MessageId":"m1","ReceiptHandle":"rh1","Body":%q,"MD5OfBody":%q}]}`, body, hex.EncodeToString(sum[:]))
		case "AmazonSQS.DeleteMessageBatch":
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			fmt.Fprint(w, `{"Successful":[{"Id":"0"}],"Failed":[]}`)
		default:
			http.Error(w, "unexpected "+target, http.StatusBadRequest)
		}
	}))
	defer srv.Close()

	client := sqs.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   sdkhttp.ReadOnlyBodies(sdkhttp.Client()),
		BaseEndpoint: aws.String(srv.URL),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*late)
	defer cancel()
	got := make(chan string, 1)
	p := &Poller{
		SQS: client, QueueURL: srv.URL + "/000000000000/q", QueueARN: "arn:aws:sqs:us-east-1:000000000000:q",
		Source:   template.SQSSource{BatchSize: 1},
		Function: "ProcessorFunction", Timeout: time.Second, Workers: 1,
		Handler: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, m := range ev.Records {
				select {
				case got <- m.Body:
				default:
				}
			}
			cancel()
			return events.SQSEventResponse{}, nil
		},
	}
	p.Run(ctx)
	select {
	case b := <-got:
		if !strings.Contains(b, "evt_late") {
			t.Errorf("handed the function %q, want the queue's message", b)
		}
	default:
		t.Errorf("the message answered after %s never reached the function (long polls abandoned: %d)", late, abandoned.Load())
	}
	if n := abandoned.Load(); n != 0 {
		t.Errorf("long polls abandoned while the queue was answering: got %d, want 0", n)
	}
}
