// Package sdkhttp is the HTTP client under every AWS SDK client the
// project builds, the functions' and the tools' alike: a per-attempt
// timeout, reused connections and TLS sessions across invocations, and
// ReadOnlyBodies, the fix for a race in which net/http's transport closes
// a connection under an answer that already arrived (see ReadOnlyBodies).
//
// Package awsenv builds the functions' AWS configuration on it;
// internal/awsconfig builds the tools' (the SDK's full configuration
// chain) on it too.
package sdkhttp
