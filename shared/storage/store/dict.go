package store

import (
	_ "embed"
	"sync"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// stripeDictData is the preset dictionary Stripe payloads are deflated
// against (ddbattr.Dict): the skeleton of Stripe's sample objects of the
// types the inbox handles, every string and number blanked, pretty-printed
// as Stripe sends events (TestStripeDictIsStripesSampleObjectsSkeleton
// says how it is made). It is part of the stored format: payloads name it
// by its Adler-32 (stripeDictID), and it never changes.
//
//go:embed dict/stripe.v1.json
var stripeDictData []byte

// stripeDictID is the Adler-32 of stripeDictData.
const stripeDictID = 0x0f3def2f

// stripeDict is built on first use, not at init: the functions that never
// store or read a payload pay nothing for it.
var stripeDict = sync.OnceValue(func() *ddbattr.Dict { return ddbattr.NewDict(stripeDictData) })

// payloadDict is the dictionary provider's payloads are packed with; nil
// (plain DEFLATE) for a provider without one.
func payloadDict(provider string) *ddbattr.Dict {
	if provider == event.ProviderStripe {
		return stripeDict()
	}
	return nil
}

// payloadDicts are every dictionary a stored payload may name.
func payloadDicts() []*ddbattr.Dict { return []*ddbattr.Dict{stripeDict()} }
