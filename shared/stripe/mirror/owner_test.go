package mirror_test

import (
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/ownership"
)

// TestNoOtherPackageNamesTheMirrorTable: the mirror is the mirror table's
// one owner. No other Go file names one of its attributes or its index as
// DynamoDB reads them (in an expression, an item, an index name), and the
// names that are the mirror's alone appear nowhere else at all. Package
// ownership says exactly what is looked for.
func TestNoOtherPackageNamesTheMirrorTable(t *testing.T) {
	ownership.Check(t, ownership.Owner{
		Dir: "shared/stripe/mirror",
		// Words of other vocabularies too, which may appear as whole
		// literals elsewhere, never in an expression or an item.
		Vocabulary: map[string]string{
			"object": "Stripe's object field", "customer": "Stripe's object field", "data": "Stripe's event field",
			"status": "Stripe's object field", "livemode": "Stripe's object field", "deleted": "Stripe's object field",
			"current_period_end": "Stripe's subscription field", "trial_end": "Stripe's subscription field",
			"price": "Stripe's field", "product": "Stripe's field", "erased": "inboxctl erase's output",
			"cancel_at_period_end": "Stripe's subscription field", "c": "a one-letter key of a subscription's stored state", "e": "a one-letter key of a subscription's stored state",
		},
		Except: map[string]string{
			"pk": "the partition key of every table in template.yaml, which test fakes and effects' own items use",
		},
		Others: []string{"shared/storage/store"},
	})
}
