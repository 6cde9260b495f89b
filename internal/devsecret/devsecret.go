// Package devsecret holds the signing secret of the local stack (make dev,
// the tests, inboxctl --dev): one constant, for local use only. A
// deployment reads its secrets from SSM Parameter Store and never this.
//
// It imports nothing, so a shipped command (inboxctl) names the local
// stack's secret without linking the local stack (tools/devstack).
package devsecret

// Webhook is the local stack's webhook signing secret, Stripe's and every
// other provider's unless the local stack is given one.
const Webhook = "whsec_local_development_only"
