package poller

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func msgs(ids ...string) []sqstypes.Message {
	var out []sqstypes.Message
	for _, id := range ids {
		out = append(out, sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id)})
	}
	return out
}

func ids(ms []sqstypes.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, aws.ToString(m.MessageId))
	}
	return out
}

func TestSettleFollowsLambdasRules(t *testing.T) {
	batch := msgs("a", "b", "c")
	failures := func(ids ...string) events.SQSEventResponse {
		var r events.SQSEventResponse
		for _, id := range ids {
			r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return r
	}
	tests := []struct {
		name   string
		resp   events.SQSEventResponse
		report bool
		want   []string
		wantOK bool
	}{
		{"no failures: delete all", failures(), true, []string{"a", "b", "c"}, true},
		{"one failure: delete the others", failures("b"), true, []string{"a", "c"}, true},
		{"all failed: delete none", failures("a", "b", "c"), true, nil, true},
		{"unknown id fails the whole batch", failures("zzz"), true, nil, false},
		{"empty id fails the whole batch", failures(""), true, nil, false},
		{"without ReportBatchItemFailures, success deletes all", failures("b"), false, []string{"a", "b", "c"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Settle(batch, tc.resp, tc.report)
			if ok != tc.wantOK {
				t.Fatalf("ok: got %v, want %v", ok, tc.wantOK)
			}
			if g := ids(got); len(g) != len(tc.want) || (len(g) > 0 && !equal(g, tc.want)) {
				t.Errorf("deleted: got %v, want %v", g, tc.want)
			}
		})
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestEventCarriesReceiveCount(t *testing.T) {
	p := &Poller{QueueARN: "arn:aws:sqs:eu-west-1:000000000000:q"}
	m := msgs("a")
	m[0].Body = aws.String(`{"id":"evt_1"}`)
	m[0].Attributes = map[string]string{"ApproximateReceiveCount": "3"}
	ev := p.Event(m)
	r := ev.Records[0]
	if r.Attributes["ApproximateReceiveCount"] != "3" || r.EventSource != "aws:sqs" || r.AWSRegion != "eu-west-1" || r.Md5OfBody == "" ||
		r.ReceiptHandle != "rh-a" {
		t.Errorf("record: %+v", r)
	}
}
