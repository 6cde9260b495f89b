package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestClaimBody: a body is the event that claims it first, for good; the
// same event claiming it again (a retry, a redelivery) is told so, and,
// from Retention after the claim on, that the claim has outlived its
// record; a claim of another provider's body of the same key is its own;
// and of many events claiming one body at once, exactly one wins, the
// others learning which.
func TestClaimBody(t *testing.T) {
	events, s := newEvents(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	const key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, tc := range []struct {
		what, provider, id, want string
		at                       time.Time
		outlived                 bool
	}{
		{"a new body", "github", "d-1", "d-1", now, false},
		{"the same event again", "github", "d-1", "d-1", now.Add(time.Hour), false},
		{"another event with that body", "github", "d-2", "d-1", now, false},
		{"another provider's body of that key", "shopify", "e-1", "e-1", now, false},
		{"the same event just inside the retention", "github", "d-1", "d-1", now.Add(events.Retention - time.Second), false},
		{"the same event at the retention", "github", "d-1", "d-1", now.Add(events.Retention), true},
		{"the same event years later", "github", "d-1", "d-1", now.Add(10 * 365 * 24 * time.Hour), true},
		{"another event years later", "github", "d-3", "d-1", now.Add(10 * 365 * 24 * time.Hour), true},
	} {
		got, outlived, err := events.ClaimBody(ctx, tc.provider, key, tc.id, tc.at)
		if err != nil || got != tc.want || outlived != tc.outlived {
			t.Errorf("%s: got %q outlived %v, %v; want %q outlived %v", tc.what, got, outlived, err, tc.want, tc.outlived)
		}
	}
	// Kept for good, and in no index.
	out, err := s.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(events.Table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 {
		t.Fatalf("items: got %d, want 2 claims", len(out.Items))
	}
	for _, it := range out.Items {
		if _, ok := it["expires_at"]; ok {
			t.Errorf("claim %v: expires_at %v, want none: a capture of an untimed signature verifies for good", it["pk"], it["expires_at"])
		}
		if at, ok := it["received_at"].(*types.AttributeValueMemberN); !ok || at.Value != "1800000000000" {
			t.Errorf("claim %v: received_at %v, want the claim's time in milliseconds", it["pk"], it["received_at"])
		}
		if len(it) != 4 {
			t.Errorf("claim %v: %d attributes, want 4 (key, kind, event id, time): no index's", it["pk"], len(it))
		}
	}

	const race = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	var wg sync.WaitGroup
	owners := make([]string, 8)
	for i := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owners[i], _, _ = events.ClaimBody(ctx, "github", race, string(rune('a'+i)), now)
		}()
	}
	wg.Wait()
	for _, o := range owners {
		if o == "" || o != owners[0] {
			t.Fatalf("racing claims: got owners %v, want one, the same for all", owners)
		}
	}
}
