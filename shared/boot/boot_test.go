package boot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

func envMap(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestHandledTypes(t *testing.T) {
	def := HandledTypes(EventTypesFrom(envMap(nil)), nil)
	if !def("invoice.paid") || def("charge.refunded") {
		t.Error("default allowlist: want the mirror's types only")
	}
	custom := HandledTypes(EventTypesFrom(envMap(map[string]string{"EVENT_TYPES": "charge.refunded, invoice.paid"})), nil)
	if !custom("charge.refunded") || !custom("invoice.paid") || custom("customer.created") {
		t.Error("EVENT_TYPES: want exactly the listed types")
	}
}

func TestHandledTypeListMatchesHandledTypes(t *testing.T) {
	for _, env := range []map[string]string{nil, {"EVENT_TYPES": " invoice.paid,charge.refunded,invoice.paid, "}} {
		accepts := HandledTypes(EventTypesFrom(envMap(env)), nil)
		list := HandledTypeList(EventTypesFrom(envMap(env)), nil)
		for _, ty := range list {
			if !accepts(ty) {
				t.Errorf("EVENT_TYPES=%q: %s listed but not accepted", env["EVENT_TYPES"], ty)
			}
		}
		if env == nil && len(list) != len(mirror.Types) {
			t.Errorf("default list: got %d types, want the mirror's %d", len(list), len(mirror.Types))
		}
		if env != nil && strings.Join(list, ",") != "charge.refunded,invoice.paid" {
			t.Errorf("EVENT_TYPES list: got %v", list)
		}
	}
}

func TestEffectTypesAreHandled(t *testing.T) {
	reg := &effect.Registry{}
	reg.On(
		effect.Func{HandlerName: "refund-notice", Fn: func(context.Context, effect.Event) ([]types.TransactWriteItem, error) { return nil, nil }},
		"charge.refunded",
	)
	if !HandledTypes(EventTypesFrom(envMap(nil)), reg)("charge.refunded") {
		t.Error("a type the team registered an effect for is not accepted: its events would be recorded as ignored")
	}
	if got := HandledTypeList(EventTypesFrom(envMap(nil)), reg); len(got) != len(mirror.Types)+1 {
		t.Errorf("list: got %d types, want the mirror's and the effect's", len(got))
	}
}

// ssmServer answers GetParameter with a SecureString holding value, and
// counts the requests.
func ssmServer(t *testing.T, value string) (aws.Config, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" {
			http.Error(w, "unexpected "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = w.Write([]byte(`{"Parameter":{"Name":"/p","Type":"SecureString","Value":"` + value + `"}}`))
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, nil
		}),
	}
	return cfg, &n
}

// TestSecretIsReadOnFirstUse: a secret in Parameter Store is read when it
// is first needed, once; building it makes no request.
func TestSecretIsReadOnFirstUse(t *testing.T) {
	cfg, requests := ssmServer(t, "sk_test_from_ssm")
	r := NewReader(envMap(map[string]string{"STRIPE_API_KEY_PARAMETER": "/webhook-inbox/dev/stripe/api-key", "AWS_LAMBDA_FUNCTION_NAME": "f"}), cfg)
	s := r.Secret("STRIPE_API_KEY", true)
	if err := r.Err("test"); err != nil || s == nil {
		t.Fatalf("got %v, %v", s, err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("requests before first use: got %d, want 0", n)
	}
	for range 2 {
		if v, err := s.Value(context.Background()); err != nil || v != "sk_test_from_ssm" {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("requests after two uses: got %d, want 1", n)
	}
}

func TestSecretSources(t *testing.T) {
	cfg, requests := ssmServer(t, "from_ssm")
	for _, tc := range []struct {
		name     string
		env      map[string]string
		required bool
		want     string // "" for no secret
		wantErr  string
	}{
		{"local variable outside Lambda", map[string]string{"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_KEY_PARAMETER": "/p"}, true, "sk_test_local", ""},
		{"parameter in Lambda", map[string]string{"STRIPE_API_KEY_PARAMETER": "/p", "AWS_LAMBDA_FUNCTION_NAME": "f"}, true, "from_ssm", ""},
		{"neither, optional", nil, false, "", ""},
		{"neither, required", nil, true, "", "STRIPE_API_KEY_PARAMETER is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(envMap(tc.env), cfg)
			s := r.Secret("STRIPE_API_KEY", tc.required)
			err := r.Err("test")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if s != nil {
					t.Fatalf("got a secret from %s, want none", s.Name())
				}
				return
			}
			if v, err := s.Value(context.Background()); err != nil || v != tc.want {
				t.Errorf("got %q, %v; want %q", v, err, tc.want)
			}
		})
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("requests: got %d, want 1 (the parameter case only)", n)
	}
}

func TestCheckedNamesTheVariable(t *testing.T) {
	r := NewReader(envMap(map[string]string{"X": "bad"}), aws.Config{})
	if v := r.Checked("X", "", func(v string) error {
		if v == "bad" {
			return errTest
		}
		return nil
	}); v != "bad" {
		t.Errorf("got %q", v)
	}
	if err := r.Err("test"); err == nil || !strings.Contains(err.Error(), "X: refused") || !strings.Contains(err.Error(), "boot test: configuration") {
		t.Errorf("got %v", err)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("refused")
