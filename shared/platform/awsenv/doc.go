// Package awsenv builds a function's AWS configuration from what Lambda
// puts in its environment, and nothing else: region, the execution role's
// credentials, and endpoints from the SDK's own variables. It is the light
// counterpart of the SDK's config package (see Load for why), which tools
// run by people use through internal/awsconfig. Both use package sdkhttp's
// client.
package awsenv
