package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

type listerFunc func() error

func (f listerFunc) ListSubscriptions(context.Context, stripeapi.SubscriptionQuery, func(stripeapi.SubscriptionPage) (bool, error)) error {
	return f()
}

type memCheckpoints struct{ cp store.Checkpoint }

func (m *memCheckpoints) Load(_ context.Context, name string) (store.Checkpoint, error) {
	if m.cp.Name == "" {
		m.cp.Name = name
	}
	return m.cp, nil
}

func (m *memCheckpoints) Save(_ context.Context, _, next store.Checkpoint) (store.Checkpoint, error) {
	next.Seq++
	m.cp = next
	return next, nil
}

// TestTemplateAlarmsWatchTheMetricsARunEmits: AuditRepairsAlarm and
// AuditFailedAlarm watch, in the namespace and with exactly the
// dimensions, the metrics a scheduled run's line carries.
func TestTemplateAlarmsWatchTheMetricsARunEmits(t *testing.T) {
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for alarmID, metric := range map[string]string{"AuditRepairsAlarm": audit.MetricRepaired, "AuditFailedAlarm": audit.MetricFailed} {
		for _, fail := range []bool{false, true} {
			var logs bytes.Buffer
			s := &audit.Scheduled{
				Auditor: &audit.Auditor{API: listerFunc(func() error {
					if fail {
						return errors.New("stripe down")
					}
					return nil
				})},
				Checkpoints: &memCheckpoints{},
				Logger:      slog.New(slog.NewJSONHandler(&logs, nil)),
			}
			_, _ = s.Run(context.Background())
			var line struct {
				AWS struct {
					CloudWatchMetrics []struct {
						Namespace  string
						Dimensions [][]string
						Metrics    []struct{ Name string }
					}
				} `json:"_aws"`
				Function string `json:"function"`
			}
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil || len(line.AWS.CloudWatchMetrics) != 1 {
				t.Fatalf("run line: %v\n%s", err, logs.String())
			}
			emf := line.AWS.CloudWatchMetrics[0]
			emitted := slices.ContainsFunc(emf.Metrics, func(m struct{ Name string }) bool { return m.Name == metric })
			alarm, ok := tmpl.Resource(alarmID)
			if !ok {
				t.Fatalf("template has no %s", alarmID)
			}
			p := alarm.Properties
			if p["Namespace"] != emf.Namespace || p["MetricName"] != metric || !emitted {
				t.Errorf(
					"%s on %v/%v; the run (failed: %v) emits %s in %s (emitted: %v)",
					alarmID,
					p["Namespace"],
					p["MetricName"],
					fail,
					metric,
					emf.Namespace,
					emitted,
				)
			}
			var dims []string
			for _, d := range p["Dimensions"].([]any) {
				m := d.(map[string]any)
				dims = append(dims, fmt.Sprintf("%v=%v", m["Name"], m["Value"]))
			}
			if want := []string{"function=" + line.Function}; len(emf.Dimensions) != 1 || !slices.Equal(emf.Dimensions[0], []string{"function"}) ||
				!slices.Equal(dims, want) {
				t.Errorf("%s dimensions %v; the run emits %v with function=%s", alarmID, dims, emf.Dimensions, line.Function)
			}
		}
	}
}
