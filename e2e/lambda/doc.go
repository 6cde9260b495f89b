// Package lambda runs the real bootstrap binaries of the template's functions
// under the Lambda runtime interface emulator (aws-lambda-rie), against
// resources provisioned from template.yaml on the AWS emulator, and invokes
// them with the JSON Lambda itself sends: an API Gateway HTTP API payload 2.0
// event for the receiver, an SQS event built from a message really received
// from the queue for the processor.
//
// This proves what the in-process tests cannot: that each binary loads its
// configuration from the environment the template gives it, reads its
// secrets from Parameter Store once, on first need (never at cold start),
// registers a handler with
// the signature Lambda expects, and answers in the shapes API Gateway and the
// SQS event source read (statusCode, batchItemFailures). A recording proxy in
// front of the emulator checks that every AWS call a function makes is one
// its IAM policy in the template allows, that every grant is used, and that
// init makes none. Deployed under a customer-managed key, the uses of the
// key that DynamoDB, SQS and Parameter Store make for those calls are
// checked the same way, against the grants' kms:ViaService conditions (the
// emulator encrypts nothing: which service asks what for which call is the
// check's model, keyUses).
//
// The binaries are built by the Makefile's build-<Function> targets, the ones
// sam build runs, for this machine's architecture (LAMBDA_ARCH). The emulator
// is installed by `make rie` into .bin/ (make test does it).
//
// BenchmarkColdStart measures each function's init (process start to the
// runtime's first /next) and its package initialization's allocations, as
// ratios to a hello-world aws-lambda-go binary built the same way, beside
// its zipped size and first answer (make bench-coldstart).
package lambda
