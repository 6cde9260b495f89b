// Package boot is what the functions' wiring shares: reading the
// configuration from the environment (every problem reported at once), the
// rules for where a secret may come from, the handled event types, and the
// ingest path. Each function's wiring is its own package, so that a
// function links only what it runs (Go runs the initialization of every
// package a binary links, used or not):
//
//	receiverboot    the receiver: signature check, store, queue
//	processorboot   the processor: store, mirror, effects, Stripe's API
//	reconcilerboot  the reconciler: Stripe's API, store, queue
//	bridgeboot      the bridge (Stripe's EventBridge destination): store, queue
//
// Each has a typed Config and one parser of it, ConfigFromEnv, the only
// place its variables are named (those several functions share are read
// here, by Reader). Its New builds the handler once, at cold start, from a
// Config, an aws.Config (package awsenv in Lambda) and the team's effects
// (hooks.Registry()); the functions' main packages parse then build, the
// local stack parses the environment the template gives each function, and
// the CLI, the tools and the tests call the same constructors with a
// Config they fill, so the code that runs locally is the code that runs in
// Lambda. None makes a network call: secrets are read on first need
// (package secrets).
package boot
