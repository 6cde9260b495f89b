// Package e2e tests the whole pipeline through the local stack as make dev
// runs it: a separate devstack process, its HTTP gateway and its SQS poller,
// against the AWS emulator.
package e2e
