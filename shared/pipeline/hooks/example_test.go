package hooks_test

import (
	"fmt"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
)

// Register is where a team adds its effects (an effect.Spec each, as
// ExampleSpec in package effect declares one); every function reads them
// from Registry, so the receiver, the processor and the reconciler agree
// on the types that matter. This is what the repository declares: the
// billing example, off until BILLING_API_URL is configured. Adding an
// effect changes this output, on purpose: it is the list a deployment
// handles.
func ExampleRegister() {
	r := &effect.Registry{}
	hooks.Register(r)
	for _, s := range r.Specs() {
		fmt.Printf("%s on %v (optional: %v, settings %v, secrets %v)\n", s.Name, s.Types, s.Optional, s.Settings, s.Secrets)
	}
	fmt.Println("Stripe types with an effect:", hooks.Registry().Types())
	// Output:
	// billing on [invoice.paid] (optional: true, settings [BILLING_API_URL], secrets [billing-api-token])
	// Stripe types with an effect: [invoice.paid]
}
