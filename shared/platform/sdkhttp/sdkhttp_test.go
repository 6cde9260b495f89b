package sdkhttp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
)

// closedOnLastByte hands the transport the SDK's own request body and
// closes it as the last byte is read: the server answers once it has the
// last byte, and the SDK closes the body as soon as the answer arrives, so
// on a busy machine the close can land before the transport's final drain.
// This makes that interleaving happen every time.
type closedOnLastByte struct {
	body io.ReadCloser
	left int
}

func (b *closedOnLastByte) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.left -= n; b.left == 0 {
		b.body.Close()
	}
	return n, err
}

func (b *closedOnLastByte) WriteTo(w io.Writer) (int64, error) {
	return b.body.(io.WriterTo).WriteTo(w)
}
func (b *closedOnLastByte) Close() error { return b.body.Close() }

// send posts payload through client with the SDK's request body, and
// returns the answer's body or the error that lost it.
func send(t *testing.T, client aws.HTTPClient, target string, payload []byte) (string, error) {
	t.Helper()
	sr := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	sr.URL, sr.Method, sr.ContentLength = u, http.MethodPost, int64(len(payload))
	if sr, err = sr.SetStream(bytes.NewReader(payload)); err != nil {
		t.Fatal(err)
	}
	req := sr.Build(context.Background())
	req.Body = &closedOnLastByte{body: req.Body, left: len(payload)}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// capture records the request body the transport would get.
type capture struct{ body io.ReadCloser }

func (c *capture) Do(r *http.Request) (*http.Response, error) {
	c.body = r.Body
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// TestClosedSDKBodyEndsTheTransportsDrainCleanly pins down the cause: after
// the SDK closes its request body, io.Copy from it (the transport's final
// drain) fails with io.EOF; through ReadOnlyBodies it ends cleanly.
func TestClosedSDKBodyEndsTheTransportsDrainCleanly(t *testing.T) {
	build := func() *http.Request {
		sr := smithyhttp.NewStackRequest().(*smithyhttp.Request)
		sr.Method, sr.ContentLength = http.MethodPost, 2
		sr, err := sr.SetStream(bytes.NewReader([]byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		sr.URL, _ = url.Parse("http://127.0.0.1/")
		return sr.Build(context.Background())
	}

	raw := build().Body
	raw.Close()
	if _, err := io.Copy(io.Discard, raw); err != io.EOF {
		t.Logf("smithy-go's closed body now ends io.Copy with %v, not io.EOF: ReadOnlyBodies may no longer be needed", err)
	}

	c := &capture{}
	if _, err := sdkhttp.ReadOnlyBodies(c).Do(build()); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.body.(io.WriterTo); ok {
		t.Fatal("the body handed to the transport still has WriteTo")
	}
	if _, err := io.Copy(io.Discard, c.body); err != nil {
		t.Fatalf("draining the body before close: %v", err)
	}
	c.body.Close()
	if n, err := io.Copy(io.Discard, c.body); n != 0 || err != nil {
		t.Fatalf("draining the body after the SDK closed it: got %d bytes, %v; want 0, nil", n, err)
	}
}

func TestAnswerArrivesWhenTheSDKClosesTheRequestBodyEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write([]byte("committed " + string(b)))
	}))
	t.Cleanup(srv.Close)
	payload := []byte(`{"TransactItems":[]}`)
	client := sdkhttp.ReadOnlyBodies(sdkhttp.Client())
	for i := range 20 {
		got, err := send(t, client, srv.URL, payload)
		if err != nil || got != "committed "+string(payload) {
			t.Fatalf("request %d: got %q, %v; want the server's answer", i, got, err)
		}
	}
}

func TestClientResumesTLSSessions(t *testing.T) {
	tr := sdkhttp.Client().GetTransport()
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.ClientSessionCache == nil {
		t.Fatal("no TLS session cache: a connection closed while frozen would need a full handshake")
	}
	if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		t.Errorf("TLS minimum version: got %x, want at least TLS 1.2", tr.TLSClientConfig.MinVersion)
	}
}
