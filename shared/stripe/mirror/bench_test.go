package mirror_test

import (
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// BenchmarkPlan measures planning the writes of one event (decoding, the
// allowlist, the guard) for the subscription fixture (about 7 KB), with the
// default allowlist and with the whole object kept (subscription:*, the
// mirror's behaviour before the allowlist), in one run:
//
//	go test -run '^$' -bench BenchmarkPlan -benchmem ./shared/stripe/mirror
func BenchmarkPlan(b *testing.B) {
	r, body := ev(b, "customer.subscription.updated", "evt_bench", 1700000000, stripefixture.Options{ObjectID: "sub_bench", Customer: "cus_bench"})
	whole, err := mirror.ParseFields("subscription:*")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		fields *mirror.Fields
	}{{"allowlist", nil}, {"whole", whole}} {
		b.Run(bc.name, func(b *testing.B) {
			m := &mirror.Mirror{Table: "t", Fields: bc.fields}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Plan(r, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
