package devstack

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func TestScheduleInterval(t *testing.T) {
	tests := []struct {
		expr    string
		want    time.Duration
		wantErr bool
	}{
		{expr: "rate(10 minutes)", want: 10 * time.Minute},
		{expr: "rate(1 minute)", want: time.Minute},
		{expr: " rate(2 hours) ", want: 2 * time.Hour},
		{expr: "rate(1 day)", want: 24 * time.Hour},
		{expr: "rate(30 seconds)", want: 30 * time.Second},
		{expr: "cron(0/10 * * * ? *)", wantErr: true},
		{expr: "rate(0 minutes)", wantErr: true},
		{expr: "rate(ten minutes)", wantErr: true},
		{expr: "rate(10 fortnights)", wantErr: true},
		{expr: "rate(10)", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := ScheduleInterval(tc.expr)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %s, %v; want %s (error: %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func start(t *testing.T, opts Options) (*Stack, *testenv.Buffer) {
	t.Helper()
	logs := &testenv.Buffer{}
	opts.Template = testenv.TemplatePath(t)
	opts.Prefix = testenv.Prefix(t)
	opts.Addr = "127.0.0.1:0"
	opts.AWS = testenv.AWS(t)
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

func TestReconcilerRunsOnItsScheduleAgainstAStripeStandIn(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	// Three events Stripe never delivered, old enough to have settled.
	var ids []string
	for _, typ := range []string{"customer.subscription.created", "invoice.paid", "customer.updated"} {
		body, err := stripefixture.Build(typ, stripefixture.Options{Created: time.Now().Add(-10 * time.Minute).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if err := fake.Add(body); err != nil {
			t.Fatal(err)
		}
		env, _ := event.DecodeEnvelope(body)
		ids = append(ids, env.ID)
	}
	s, logs := start(t, Options{Env: map[string]string{"STRIPE_API_BASE": fake.URL}, ReconcileEvery: 200 * time.Millisecond})
	if s.ReconcileEvery != 200*time.Millisecond {
		t.Fatalf("reconciler period: got %s, want the override", s.ReconcileEvery)
	}
	events := &store.Events{DB: dynamodb.NewFromConfig(testenv.AWS(t)), Table: s.FunctionEnv[ReconcilerID]["EVENTS_TABLE"]}
	testenv.Eventually(t, 30*time.Second, "the undelivered events to be reconciled and processed", func() bool {
		for _, id := range ids {
			r, err := events.Get(context.Background(), event.ProviderStripe, id)
			if err != nil || r.Status != event.StatusProcessed || r.Source != event.SourceReconciler {
				return false
			}
		}
		return true
	})
	// The run's line comes at its end, which may be after the processor is
	// done with what it ingested.
	testenv.Eventually(t, 10*time.Second, "the reconcile run's log line", func() bool {
		return strings.Contains(logs.String(), `"msg":"reconcile run"`)
	})
	// The first run had no checkpoint: it looked back the local default,
	// not Stripe's 30 days.
	first := fake.Lists()[0]
	if gte, _ := first.Created("gte"); time.Since(time.Unix(gte, 0)) > DefaultLocalReconcileSince+time.Minute {
		t.Errorf("first local run reached back to %s, want at most %s", time.Unix(gte, 0), DefaultLocalReconcileSince)
	}
}

func TestReconcilerFollowsTheTemplateScheduleOrSaysWhyItIsOff(t *testing.T) {
	s, _ := start(t, Options{APIKey: "sk_test_local"})
	if s.ReconcileEvery != 10*time.Minute {
		t.Errorf("with an API key: got period %s, want the template's rate(10 minutes)", s.ReconcileEvery)
	}
	s, logs := start(t, Options{})
	if s.ReconcileEvery != 0 {
		t.Errorf("without a key: got period %s, want off", s.ReconcileEvery)
	}
	if n := strings.Count(logs.String(), "reconciler off: no Stripe API key"); n != 1 {
		t.Errorf("lines saying the reconciler is off and why: got %d, want 1\n%s", n, logs.String())
	}
}
