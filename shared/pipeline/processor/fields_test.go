package processor_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
)

// TestTemplateKeepFieldsReachTheMirror wires the processor as Lambda does,
// from the environment the template gives ProcessorFunction with the
// MirrorKeepFields parameter set, and checks that the snapshot keeps the
// one metadata key named there and nothing else of metadata: the
// parameter, the variable, boot and the mirror agree.
func TestTemplateKeepFieldsReachTheMirror(t *testing.T) {
	e := newEnv(t, map[string]string{"MirrorKeepFields": "subscription:metadata.app_user_id"})
	ctx := context.Background()
	f, err := e.stack.Template.Function("ProcessorFunction")
	if err != nil {
		t.Fatal(err)
	}
	environment, err := e.stack.Resources.Environment(f)
	if err != nil {
		t.Fatal(err)
	}
	environment["STRIPE_API_KEY"] = "rk_test_unused" // not Parameter Store
	p, err := processorboot.FromEnv(ctx, func(k string) string { return environment[k] }, e.stack.AWS, slog.New(slog.NewJSONHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ObjectID: "sub_keep", Customer: "cus_keep",
		Set: map[string]any{"metadata": map[string]any{"app_user_id": "u_42", "email": "jane@example.com"}},
	}))
	if resp, err := p.Handle(ctx, batch(message(rec, 1))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v %+v", err, resp)
	}
	snap, err := e.reader.Object(ctx, "sub_keep")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Status   string            `json:"status"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(snap.Data, &data); err != nil {
		t.Fatal(err)
	}
	if len(data.Metadata) != 1 || data.Metadata["app_user_id"] != "u_42" || data.Status != "active" {
		t.Errorf("snapshot: status %q metadata %v; want active and only app_user_id", data.Status, data.Metadata)
	}
}
