package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// thinBody is a thin event as an event destination delivers it and as
// GET /v2/core/events/{id} serves it.
func thinBody(t *testing.T, id, typ, created, account, snapshot string, related event.RelatedObject) []byte {
	t.Helper()
	m := map[string]any{
		"id": id, "object": event.ObjectThinEvent, "type": typ, "created": created, "livemode": false,
		"related_object": related, "reason": map[string]any{"type": "request"},
	}
	if account != "" {
		m["context"] = account
	}
	if snapshot != "" {
		m["snapshot_event"] = snapshot
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleObject is the data.object of Stripe's sample event of typ, as the
// API's retrieve call would serve it.
func sampleObject(t *testing.T, typ string, opts stripefixture.Options) []byte {
	t.Helper()
	obj, err := stripefixture.Object(typ, opts)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// thinStack is a local stack whose processor reads Stripe's API from the
// stand-in, with a Connect endpoint's secret.
type thinStack struct {
	stack  *testenv.Devstack
	fake   *stripefake.Server
	events *store.Events
	reader *mirror.Reader
}

const thinConnectSecret = "whsec_e2e_thin_connect"

func startThinStack(t *testing.T, overrides map[string]string, env map[string]string) *thinStack {
	t.Helper()
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	e := map[string]string{"STRIPE_CONNECT_WEBHOOK_SECRET": thinConnectSecret, "STRIPE_API_BASE": fake.URL}
	for k, v := range env {
		e[k] = v
	}
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Overrides: overrides, Env: e})
	return &thinStack{
		stack: stack, fake: fake, events: eventsStore(t, stack.Prefix),
		reader: &mirror.Reader{DB: dynamodb.NewFromConfig(testenv.AWS(t)), Table: stack.Prefix + "-MirrorTable"},
	}
}

// send delivers body signed with secret, wants it acknowledged, and
// waits for the record of id to be processed.
func (s *thinStack) send(t *testing.T, id string, body []byte, secret string) event.Record {
	t.Helper()
	if status, resp := deliver(t, s.stack.URL, body, secret); status != 200 {
		t.Fatalf("delivery of %s: got %d %s, want 200", id, status, resp)
	}
	var rec event.Record
	testenv.Eventually(t, 60*time.Second, "event "+id+" to be processed", func() bool {
		r, err := s.events.Get(context.Background(), "stripe", id)
		rec = r
		return err == nil && r.Status == event.StatusProcessed
	})
	return rec
}

// status reads the mirror's snapshot of key: its status and what settled
// it.
func (s *thinStack) status(t *testing.T, key string) (status, settledBy string) {
	t.Helper()
	snap, err := s.reader.Object(context.Background(), key)
	if err != nil {
		t.Fatalf("mirror object %s: %v", key, err)
	}
	var data struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(snap.Data, &data)
	return data.Status, snap.SettledBy
}

func subscriptionRelated(id string) event.RelatedObject {
	return event.RelatedObject{ID: id, Type: "subscription", URL: "/v1/subscriptions/" + id}
}

// TestAThinEventThroughTheGateway: on the local stack with the Stripe
// stand-in, a signed thin v1.customer.subscription.updated is
// acknowledged, stored, read whole from the API (the event, then the
// subscription it names) and applied: the mirror and the entitlement are
// as its snapshot would make them, and a redelivery changes nothing. A
// connected account's thin event (its account in "context"), signed
// with the Connect secret, lands in that account's mirror only.
func TestAThinEventThroughTheGateway(t *testing.T) {
	s := startThinStack(t, nil, nil)
	ctx := context.Background()

	t.Run("platform", func(t *testing.T) {
		sub, cus := "sub_e2e_thin", "cus_e2e_thin"
		if err := s.fake.PutObject("", sampleObject(t, "customer.subscription.updated",
			stripefixture.Options{ObjectID: sub, Customer: cus, Status: "active"})); err != nil {
			t.Fatal(err)
		}
		const id = "evt_e2e_thin"
		body := thinBody(t, id, "v1.customer.subscription.updated", time.Now().UTC().Format(time.RFC3339Nano), "", "", subscriptionRelated(sub))
		if err := s.fake.AddV2("", body); err != nil {
			t.Fatal(err)
		}
		rec := s.send(t, id, body, devstack.DefaultWebhookSecret)
		if rec.Outcome != outcome.Applied || rec.ObjectID != sub {
			t.Errorf("record: outcome %s, object %s; want applied, %s", rec.Outcome, rec.ObjectID, sub)
		}
		if st, by := s.status(t, sub); st != "active" || by != mirror.SourceThin {
			t.Errorf("mirror: got %q settled by %q, want active, thin", st, by)
		}
		ent, err := s.reader.Entitlement(ctx, cus)
		if err != nil || !ent.Active || len(ent.Subscriptions) != 1 || ent.Subscriptions[0].Status != "active" {
			t.Errorf("entitlement: got %+v, %v; want active with its one subscription", ent, err)
		}
		var paths []string
		for _, q := range s.fake.Requests() {
			if strings.HasSuffix(q.Path, "/"+id) || strings.HasSuffix(q.Path, "/"+sub) {
				paths = append(paths, q.Method+" "+q.Path)
			}
		}
		if want := []string{"GET /v2/core/events/" + id, "GET /v1/subscriptions/" + sub}; strings.Join(paths, ",") != strings.Join(want, ",") {
			t.Errorf("API requests: got %v, want %v", paths, want)
		}

		// A redelivery: acknowledged, and nothing read or applied again.
		s.fake.ResetRequests()
		if err := s.fake.PutObject("", sampleObject(t, "customer.subscription.updated",
			stripefixture.Options{ObjectID: sub, Customer: cus, Status: "canceled"})); err != nil {
			t.Fatal(err)
		}
		again := s.send(t, id, body, devstack.DefaultWebhookSecret)
		if again.Attempts != rec.Attempts || again.Outcome != rec.Outcome {
			t.Errorf("record after the redelivery: attempts %d, outcome %s; want %d, %s", again.Attempts, again.Outcome, rec.Attempts, rec.Outcome)
		}
		time.Sleep(2 * time.Second) // room for a wrongly enqueued second processing
		if st, _ := s.status(t, sub); st != "active" {
			t.Errorf("mirror after the redelivery: got %q, want active (not read again)", st)
		}
		for _, q := range s.fake.Requests() {
			if strings.HasSuffix(q.Path, "/"+id) || strings.HasSuffix(q.Path, "/"+sub) {
				t.Errorf("the redelivery read %s %s", q.Method, q.Path)
			}
		}
	})

	t.Run("connected account", func(t *testing.T) {
		acct, sub, cus := "acct_e2e_thin", "sub_e2e_thin_connect", "cus_e2e_thin_connect"
		if err := s.fake.PutObject(acct, sampleObject(t, "customer.subscription.updated",
			stripefixture.Options{ObjectID: sub, Customer: cus, Status: "active"})); err != nil {
			t.Fatal(err)
		}
		const id = "evt_e2e_thin_connect"
		body := thinBody(t, id, "v1.customer.subscription.updated", time.Now().UTC().Format(time.RFC3339Nano), acct, "", subscriptionRelated(sub))
		if err := s.fake.AddV2(acct, body); err != nil {
			t.Fatal(err)
		}
		rec := s.send(t, id, body, thinConnectSecret)
		if rec.Account != acct || rec.Outcome != outcome.Applied {
			t.Errorf("record: account %q, outcome %s; want %s, applied", rec.Account, rec.Outcome, acct)
		}
		if st, _ := s.status(t, mirror.Key(acct, sub)); st != "active" {
			t.Errorf("the account's mirror: got %q, want active", st)
		}
		if ent, err := s.reader.Entitlement(ctx, mirror.Key(acct, cus)); err != nil || !ent.Active || ent.Account != acct {
			t.Errorf("the account's entitlement: got %+v, %v; want active, of %s", ent, err, acct)
		}
		if ent, err := s.reader.Entitlement(ctx, cus); err != nil || ent.Active || len(ent.Subscriptions) != 0 {
			t.Errorf("the platform's entitlement of %s: got %+v, %v; want none", cus, ent, err)
		}
		if _, err := s.reader.Object(ctx, sub); err == nil {
			t.Errorf("the platform's mirror has %s, want it in %s's only", sub, acct)
		}
	})
}

// TestThinAndSnapshotTwinsThroughTheGateway: during a migration Stripe
// delivers a change twice, as a snapshot event and as a thin event naming
// it (snapshot_event). Delivered through the gateway in either order, the
// pair has one business effect: the example billing effect (as
// TestTheExampleEffectThroughTheLocalStack sets it up) is called under
// the snapshot's idempotency key only, never the thin event's.
func TestThinAndSnapshotTwinsThroughTheGateway(t *testing.T) {
	doc := documentedTrial(t)
	const token = "bt_local_e2e_thin"
	var mu sync.Mutex
	keys := map[string]int{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer api.Close()
	overrides := map[string]string{}
	for k, v := range doc.overrides {
		overrides[k] = strings.ReplaceAll(v, doc.apiBase, api.URL)
	}
	s := startThinStack(t, overrides, map[string]string{doc.secretVariable: token})
	snapType := doc.eventType
	for _, thinFirst := range []bool{false, true} {
		name := "snapshot first"
		if thinFirst {
			name = "thin first"
		}
		t.Run(name, func(t *testing.T) {
			suffix := strings.ReplaceAll(name, " ", "_")
			inv, cus := "in_e2e_twin_"+suffix, "cus_e2e_twin_"+suffix
			snapID, thinID := "evt_e2e_twin_snap_"+suffix, "evt_e2e_twin_thin_"+suffix
			created := time.Now().UTC().Truncate(time.Second)
			opts := stripefixture.Options{ID: snapID, ObjectID: inv, Customer: cus, Created: created.Unix(), Set: map[string]any{"amount_paid": 4200}}
			snapBody, err := stripefixture.Build(snapType, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.fake.PutObject("", sampleObject(t, snapType, opts)); err != nil {
				t.Fatal(err)
			}
			related := event.RelatedObject{ID: inv, Type: "invoice", URL: "/v1/invoices/" + inv}
			thin := thinBody(t, thinID, event.ThinV1Prefix+snapType, created.Add(500*time.Millisecond).Format(time.RFC3339Nano), "", snapID, related)
			if err := s.fake.AddV2("", thin); err != nil {
				t.Fatal(err)
			}
			var snapRec, thinRec event.Record
			if thinFirst {
				thinRec = s.send(t, thinID, thin, devstack.DefaultWebhookSecret)
				snapRec = s.send(t, snapID, snapBody, devstack.DefaultWebhookSecret)
			} else {
				snapRec = s.send(t, snapID, snapBody, devstack.DefaultWebhookSecret)
				thinRec = s.send(t, thinID, thin, devstack.DefaultWebhookSecret)
			}
			wantSnap, wantThin := outcome.Applied, outcome.Twinned
			if thinFirst {
				wantSnap, wantThin = outcome.Twinned, outcome.Applied
			}
			if snapRec.Outcome != wantSnap || thinRec.Outcome != wantThin {
				t.Errorf("outcomes: snapshot %s, thin %s; want %s, %s", snapRec.Outcome, thinRec.Outcome, wantSnap, wantThin)
			}
			time.Sleep(2 * time.Second) // room for a wrongly made second call
			mu.Lock()
			defer mu.Unlock()
			// Thin first, the snapshot's delivery is a duplicate at the
			// gateway; snapshot first, the thin event finds its twin in
			// hand before running any effect. One call either way.
			if got := keys[snapID+doc.keySuffix]; got != 1 {
				t.Errorf("billing API calls under the snapshot's key: got %d, want 1", got)
			}
			if got := keys[thinID+doc.keySuffix]; got != 0 {
				t.Errorf("billing API calls under the thin event's key: got %d, want 0", got)
			}
		})
	}
}

// TestAHealthEventRepairsItsObjectThroughTheGateway: Stripe failed to
// generate an event for a subscription (canceled at Stripe, active in
// the mirror); the v2.core.health.event_generation_failure.resolved
// delivered for it makes the processor read the subscription from the
// stand-in and repair the mirror and the entitlement.
func TestAHealthEventRepairsItsObjectThroughTheGateway(t *testing.T) {
	s := startThinStack(t, nil, nil)
	ctx := context.Background()
	sub, cus := "sub_e2e_health", "cus_e2e_health"
	before, err := stripefixture.Build("customer.subscription.updated",
		stripefixture.Options{ID: "evt_e2e_health_before", ObjectID: sub, Customer: cus, Created: time.Now().Add(-time.Hour).Unix(), Status: "active"})
	if err != nil {
		t.Fatal(err)
	}
	s.send(t, "evt_e2e_health_before", before, devstack.DefaultWebhookSecret)
	if ent, err := s.reader.Entitlement(ctx, cus); err != nil || !ent.Active {
		t.Fatalf("entitlement before: got %+v, %v; want active", ent, err)
	}
	if err := s.fake.PutObject("", sampleObject(t, "customer.subscription.updated",
		stripefixture.Options{ObjectID: sub, Customer: cus, Status: "canceled"})); err != nil {
		t.Fatal(err)
	}
	const id = "evt_e2e_health"
	body := thinBody(t, id, event.TypeEventGenerationFailureResolved, time.Now().UTC().Format(time.RFC3339Nano), "", "", subscriptionRelated(sub))
	if err := s.fake.AddV2("", body); err != nil {
		t.Fatal(err)
	}
	rec := s.send(t, id, body, devstack.DefaultWebhookSecret)
	if rec.Outcome != outcome.Repaired {
		t.Errorf("record: outcome %s, want repaired", rec.Outcome)
	}
	if st, by := s.status(t, sub); st != "canceled" || by != mirror.SourceHealth {
		t.Errorf("mirror: got %q settled by %q, want canceled, health", st, by)
	}
	if ent, err := s.reader.Entitlement(ctx, cus); err != nil || ent.Active {
		t.Errorf("entitlement after the repair: got %+v, %v; want inactive", ent, err)
	}
}
