// Package cli implements inboxctl, the operator's command line: send test
// deliveries, inspect events, objects and entitlements, replay events, list,
// redrive and discard the dead-letter queue's messages, diagnose signatures,
// and print what to register in Stripe, against the local stack or a
// deployed one, with the same configuration as the functions. docs/cli.md
// documents every command, its flags, its exit codes and its JSON shapes;
// the JSON shapes are the exported *JSON types here.
//
// Commands format; the logic they rely on lives elsewhere: reads in the
// shared packages that own each table (store queries, mirror reads,
// signature diagnosis), and what an operator does to a stack (replay, the
// dead-letter queue's redrive and discard, erasure) in internal/ops, which
// the console runs too. Every command reaches the stack through open.
package cli
