package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

func TestAttrsMakeAnEmbeddedMetricFormatLine(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.LogAttrs(
		context.Background(),
		slog.LevelInfo,
		"webhook",
		Attrs(time.UnixMilli(1700000000123), []Dim{{"function", "receiver"}, {"outcome", "stored"}}, C("requests", 1), Ms("latency", 1500*time.Microsecond))...)

	var line struct {
		Function string  `json:"function"`
		Outcome  string  `json:"outcome"`
		Requests float64 `json:"requests"`
		Latency  float64 `json:"latency"`
		AWS      struct {
			Timestamp         int64 `json:"Timestamp"`
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if line.Function != "receiver" || line.Outcome != "stored" || line.Requests != 1 || line.Latency != 1.5 {
		t.Errorf("values: got %+v", line)
	}
	d := line.AWS.CloudWatchMetrics
	if line.AWS.Timestamp != 1700000000123 || len(d) != 1 || d[0].Namespace != Namespace ||
		len(d[0].Dimensions) != 1 || len(d[0].Dimensions[0]) != 2 || len(d[0].Metrics) != 2 || d[0].Metrics[1].Unit != "Milliseconds" {
		t.Errorf("directive: got %+v", line.AWS)
	}
}
