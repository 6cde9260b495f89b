package awsconfig_test

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/shared/sdkhttp"
)

func TestLoadKeepsTheCABundleAndGuardsRequestBodies(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	// The server's certificate is trusted only through AWS_CA_BUNDLE, which
	// the SDK applies to its buildable client only.
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	t.Setenv("AWS_REGION", "us-east-1")
	cfg, err := awsconfig.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("TLS through AWS_CA_BUNDLE: %v", err)
	}
	resp.Body.Close()
	if sdkhttp.ReadOnlyBodies(cfg.HTTPClient) != cfg.HTTPClient {
		t.Error("the loaded client does not guard request bodies (sdkhttp.ReadOnlyBodies)")
	}
}
