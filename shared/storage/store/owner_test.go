package store_test

import (
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/ownership"
)

// TestNoOtherPackageNamesTheEventsTable: the store is the events table's
// one owner. No other Go file names one of its attributes or indexes as
// DynamoDB reads them (in an expression, an item, an index name), and the
// names that are the store's alone appear nowhere else at all. Package
// ownership says exactly what is looked for.
func TestNoOtherPackageNamesTheEventsTable(t *testing.T) {
	ownership.Check(t, ownership.Owner{
		Dir: "shared/storage/store",
		// Words of other vocabularies too, which may appear as whole
		// literals elsewhere, never in an expression or an item.
		Vocabulary: map[string]string{
			"id": "Stripe's event and object fields", "type": "Stripe's event field", "created": "Stripe's event field",
			"livemode": "Stripe's event field", "api_version": "Stripe's event field", "account": "Stripe's event field",
			"expires_at": "Stripe's checkout session field", "types": "Stripe's list parameter",
			"status": "log keys, inboxctl's labels", "outcome": "log keys, metric dimensions", "source": "inboxctl's labels",
			"payload": "inboxctl's flag and labels", "attempts": "log keys, inboxctl's labels",
			"status_at": "log keys", "lease_until": "log keys", "run_id": "log keys", "payload_omitted": "the receiver's metric",
			"received_at": "inboxctl's labels", "claimed_at": "inboxctl's labels", "processed_at": "inboxctl's labels",
			"last_error": "inboxctl's labels", "last_error_at": "inboxctl's labels", "payload_hash": "inboxctl's labels",
			"discarded_at": "inboxctl's labels", "discard_reason": "inboxctl's labels",
			"provider": "the route's path parameter ({provider}), the console's query and path parameters, log keys, inboxctl's flag and labels",
			"cursor":   "GitHub's list query parameter (tools/testing/githubfake)",
		},
		Except: map[string]string{
			"pk": "the partition key of every table in template.yaml, which test fakes and effects' own items use",
		},
		Others: []string{"shared/stripe/mirror"},
	})
}
