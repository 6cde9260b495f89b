package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// LogLine is one line a function logged.
type LogLine struct {
	Label    string
	Function string
	Bytes    int // with its newline, as CloudWatch Logs ingests it
	// AboutEvent: the line names an event (event_id), so it is logged once
	// per event; other lines are once per invocation.
	AboutEvent bool
	// Metrics are the EMF metrics the line carries, each as
	// "namespace|name|dim=value,...".
	Metrics []string
}

// Logs collects what the functions log, as Lambda would ingest it.
type Logs struct {
	mu    sync.Mutex
	label string
	lines []LogLine
}

// SetLabel labels the lines logged from now on.
func (l *Logs) SetLabel(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.label = label
}

// Lines returns the lines logged under label ("" for all).
func (l *Logs) Lines(label string) []LogLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []LogLine
	for _, x := range l.lines {
		if label == "" || x.Label == label {
			out = append(out, x)
		}
	}
	return out
}

// Logger returns the logger a function gets in Lambda (lambdacontext's
// JSON handler: time as "timestamp", message as "message", the request id
// added from the invocation's context), writing here, at level.
func (l *Logs) Logger(function string, level slog.Level) *slog.Logger {
	w := &sink{logs: l, function: function}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdacontext.ReplaceAttr})
	return slog.New(requestID{h})
}

type sink struct {
	logs     *Logs
	function string
}

func (s *sink) Write(p []byte) (int, error) {
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var fields map[string]any
		_ = json.Unmarshal(line, &fields)
		_, about := fields["event_id"]
		s.logs.mu.Lock()
		s.logs.lines = append(s.logs.lines, LogLine{Label: s.logs.label, Function: s.function, Bytes: len(line), AboutEvent: about, Metrics: emf(fields)})
		s.logs.mu.Unlock()
	}
	return len(p), nil
}

// emf returns the metrics a line's Embedded Metric Format directive
// declares: one per metric name and dimension set, with the line's
// dimension values, which is what CloudWatch bills as custom metrics.
func emf(fields map[string]any) []string {
	meta, _ := fields["_aws"].(map[string]any)
	dirs, _ := meta["CloudWatchMetrics"].([]any)
	var out []string
	for _, d := range dirs {
		dir, _ := d.(map[string]any)
		ns, _ := dir["Namespace"].(string)
		sets, _ := dir["Dimensions"].([]any)
		if len(sets) == 0 {
			sets = []any{[]any{}}
		}
		ms, _ := dir["Metrics"].([]any)
		for _, set := range sets {
			names, _ := set.([]any)
			var dims []string
			for _, n := range names {
				name, _ := n.(string)
				v, _ := fields[name].(string)
				dims = append(dims, name+"="+v)
			}
			sort.Strings(dims)
			for _, m := range ms {
				mm, _ := m.(map[string]any)
				name, _ := mm["Name"].(string)
				out = append(out, ns+"|"+name+"|"+strings.Join(dims, ","))
			}
		}
	}
	return out
}

// requestID adds the Lambda request id to each record, as lambdacontext's
// own handler does (its constructor writes to stdout only).
type requestID struct{ slog.Handler }

func (h requestID) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestID) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestID{h.Handler.WithAttrs(attrs)}
}

func (h requestID) WithGroup(name string) slog.Handler { return requestID{h.Handler.WithGroup(name)} }
