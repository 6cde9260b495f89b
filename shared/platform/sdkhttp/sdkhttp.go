package sdkhttp

import (
	"crypto/tls"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// AttemptTimeout bounds one HTTP attempt of an AWS call.
const AttemptTimeout = 3 * time.Second

// Client returns the HTTP client every AWS client of a function shares, so
// connections are reused across invocations. Its per-attempt timeout is a third of the
// receiver's default budget, so one hung connection leaves room for the SDK
// to retry within the budget instead of using it all up.
//
// The first invocation's connections are handled deliberately, not warmed:
// init makes no network call (the secrets are read on first need, see
// package secrets), and the first request opens its connections on this
// transport, where every later request finds them. Warming them during init would take either an extra
// API call (one the function's least-privilege policy does not grant) or
// dialing endpoints resolved outside the SDK (which must stay the only place
// endpoints come from). TLS sessions are cached, so a connection the server
// closed while the function was frozen is re-established with an
// abbreviated handshake rather than a full one.
//
// Use it wrapped in ReadOnlyBodies, as awsenv and internal/awsconfig do.
func Client() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTimeout(AttemptTimeout).WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = 64
		t.IdleConnTimeout = 90 * time.Second
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	})
}

// ReadOnlyBodies closes a race that can throw away an AWS answer after it
// arrived. net/http's transport, after sending a request body of known
// length, drains the body with io.Copy(io.Discard, body) to check it is
// empty. The SDK closes the body as soon as the response arrives, and
// smithy-go's closed body answers WriteTo, which io.Copy prefers, with
// io.EOF instead of nil (golang/go#44411: WriteTo must not return EOF). When
// the server answers before the transport's writer got to that drain (a busy
// CPU, a fast server), the transport takes the EOF for a write error and
// closes the connection under the response being read. The SDK then retries
// (net.ErrClosed is retryable) a request that already took effect: a
// conditional write that succeeded comes back as a failed condition.
// Hiding WriteTo makes the drain use Read, whose io.EOF io.Copy treats as
// the end it is.
//
// ReadOnlyBodies wraps client so that request bodies offer Read and Close
// only.
func ReadOnlyBodies(client aws.HTTPClient) aws.HTTPClient {
	if _, ok := client.(readOnlyBodies); ok {
		return client
	}
	return readOnlyBodies{client}
}

type readOnlyBodies struct{ aws.HTTPClient }

func (c readOnlyBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readCloser{r.Body}
	}
	return c.HTTPClient.Do(r)
}

// readCloser has exactly the methods of io.ReadCloser, whatever the value
// it holds has besides.
type readCloser struct{ io.ReadCloser }
