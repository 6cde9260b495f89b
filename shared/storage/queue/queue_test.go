package queue

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

type fakeSQS struct{ in *sqs.SendMessageInput }

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.in = in
	return &sqs.SendMessageOutput{}, nil
}

func TestPointerRoundTrip(t *testing.T) {
	f := &fakeSQS{}
	q := &Queue{Client: f, URL: "http://q"}
	p := event.Pointer{Provider: "stripe", ID: "evt_1", Type: "invoice.paid", Created: 5, ObjectID: "in_1"}
	if err := q.Send(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if aws.ToString(f.in.QueueUrl) != "http://q" {
		t.Errorf("queue URL: got %s", aws.ToString(f.in.QueueUrl))
	}
	got, err := Decode(aws.ToString(f.in.MessageBody))
	if err != nil || got != p {
		t.Errorf("round trip: got %+v, %v; want %+v", got, err, p)
	}
	if len(aws.ToString(f.in.MessageBody)) > 200 {
		t.Errorf("a pointer should be small, got %d bytes", len(aws.ToString(f.in.MessageBody)))
	}
	for _, bad := range []string{"", "{}", "not json"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q): got nil error", bad)
		}
	}
}
