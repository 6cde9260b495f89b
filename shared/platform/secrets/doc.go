// Package secrets reads the functions' secrets (signing secrets, API keys)
// from SSM Parameter Store SecureString parameters. Secrets never travel in
// plain environment variables or template parameters, and never reach a
// log or an error: errors name the parameter, never its value.
//
// A Secret is read on first use and kept: building one makes no network
// call, so a function's init costs nothing for a secret it may never need
// (the processor's API key serves only events too large to store), and a
// failure to read it is the error of the request or event that needed it,
// which is retried, rather than a failed cold start. Every function and
// effect gets its secrets this one way.
package secrets
