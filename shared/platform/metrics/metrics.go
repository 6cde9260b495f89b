// Package metrics writes CloudWatch metrics in the Embedded Metric Format:
// a metric is a field of a structured log line that carries an "_aws"
// directive, so CloudWatch extracts it from the logs with no API call, no
// extra latency and no extra IAM permission.
//
// The pipeline puts the metrics of a request on that request's one log line.
package metrics

import (
	"log/slog"
	"time"
)

// Namespace is the CloudWatch namespace of every metric of the pipeline.
const Namespace = "WebhookInbox"

// Unit is a CloudWatch unit.
type Unit string

// The units the pipeline uses.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
)

// Metric is one value.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// C is a count metric.
func C(name string, v int) Metric { return Metric{Name: name, Unit: Count, Value: float64(v)} }

// Ms is a duration metric in milliseconds.
func Ms(name string, d time.Duration) Metric {
	return Metric{Name: name, Unit: Milliseconds, Value: float64(d.Microseconds()) / 1000}
}

// Dim is a dimension: a name and its value on this line.
type Dim struct{ Name, Value string }

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []metricDecl `json:"Metrics"`
}

type metricDecl struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

// Attrs returns the slog attributes that make a log line carry ms, with the
// dimensions dims, as Embedded Metric Format. Pass them to Logger.LogAttrs.
func Attrs(now time.Time, dims []Dim, ms ...Metric) []slog.Attr {
	names := make([]string, len(dims))
	attrs := make([]slog.Attr, 0, 1+len(dims)+len(ms))
	for i, d := range dims {
		names[i] = d.Name
		attrs = append(attrs, slog.String(d.Name, d.Value))
	}
	decl := make([]metricDecl, len(ms))
	for i, m := range ms {
		decl[i] = metricDecl{Name: m.Name, Unit: m.Unit}
		attrs = append(attrs, slog.Float64(m.Name, m.Value))
	}
	aws := slog.Group("_aws",
		slog.Int64("Timestamp", now.UnixMilli()),
		slog.Any("CloudWatchMetrics", []directive{{Namespace: Namespace, Dimensions: [][]string{names}, Metrics: decl}}),
	)
	return append(attrs, aws)
}
