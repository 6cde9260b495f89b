package template

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Function is an AWS::Serverless::Function with the Globals applied.
type Function struct {
	LogicalID string
	// Timeout in seconds.
	Timeout int
	// Environment holds values that may be Ref or GetAtt symbols.
	Environment map[string]any
	Events      map[string]FunctionEvent
}

// FunctionEvent is one entry of a function's Events.
type FunctionEvent struct {
	Type       string
	Properties map[string]any
}

// SQSSource is a function's SQS event source mapping.
type SQSSource struct {
	Queue                   GetAtt
	BatchSize               int
	MaxBatchingWindow       int // seconds
	ReportBatchItemFailures bool
	MaxConcurrency          int
}

// HTTPRoute is a route of an HttpApi event.
type HTTPRoute struct {
	Method, Path string
}

// Function returns the function id with the template's Globals applied.
func (t *Template) Function(id string) (Function, error) {
	r, ok := t.Resource(id)
	if !ok || r.Type != "AWS::Serverless::Function" {
		return Function{}, fmt.Errorf("template: no function %s", id)
	}
	globals, _ := t.section("Globals")["Function"].(map[string]any)
	f := Function{LogicalID: id, Timeout: 3, Environment: map[string]any{}, Events: map[string]FunctionEvent{}}
	for _, src := range []map[string]any{globals, r.Properties} {
		if v, ok := Int(src["Timeout"]); ok {
			f.Timeout = v
		}
		env, _ := src["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			f.Environment[k] = v
		}
	}
	events, _ := r.Properties["Events"].(map[string]any)
	for name, raw := range events {
		m, _ := raw.(map[string]any)
		typ, _ := m["Type"].(string)
		props, _ := m["Properties"].(map[string]any)
		f.Events[name] = FunctionEvent{Type: typ, Properties: props}
	}
	return f, nil
}

// Functions lists the logical ids of the template's functions.
func (t *Template) Functions() []string {
	var ids []string
	for _, r := range t.Resources("AWS::Serverless::Function") {
		ids = append(ids, r.LogicalID)
	}
	sort.Strings(ids)
	return ids
}

// SQS returns the function's SQS event source.
func (f Function) SQS() (SQSSource, error) {
	for name, ev := range f.Events {
		if ev.Type != "SQS" {
			continue
		}
		_, queue, ok := Symbol(ev.Properties["Queue"])
		if !ok || queue.Attr != "Arn" {
			return SQSSource{}, fmt.Errorf("template: %s.%s: Queue must be !GetAtt <queue>.Arn", f.LogicalID, name)
		}
		s := SQSSource{Queue: queue, BatchSize: 10, MaxConcurrency: 1000}
		if v, ok := Int(ev.Properties["BatchSize"]); ok {
			s.BatchSize = v
		}
		if v, ok := Int(ev.Properties["MaximumBatchingWindowInSeconds"]); ok {
			s.MaxBatchingWindow = v
		}
		if types, ok := ev.Properties["FunctionResponseTypes"].([]any); ok {
			for _, t := range types {
				if t == "ReportBatchItemFailures" {
					s.ReportBatchItemFailures = true
				}
			}
		}
		if sc, ok := ev.Properties["ScalingConfig"].(map[string]any); ok {
			if v, ok := Int(sc["MaximumConcurrency"]); ok {
				s.MaxConcurrency = v
			}
		}
		return s, nil
	}
	return SQSSource{}, fmt.Errorf("template: %s has no SQS event", f.LogicalID)
}

// Routes returns the function's HttpApi routes.
func (f Function) Routes() []HTTPRoute {
	var out []HTTPRoute
	for _, ev := range f.Events {
		if ev.Type != "HttpApi" {
			continue
		}
		method, _ := ev.Properties["Method"].(string)
		path, _ := ev.Properties["Path"].(string)
		out = append(out, HTTPRoute{Method: method, Path: path})
	}
	return out
}

// Schedule returns the expression of the function's ScheduleV2 (or
// Schedule) event: the one named Schedule when it has several (the
// reconciler's; its Audit is another), else the first by name.
func (f Function) Schedule() (string, bool) {
	names := make([]string, 0, len(f.Events))
	for name := range f.Events {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if (a == "Schedule") != (b == "Schedule") {
			if a == "Schedule" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		if expr, ok := f.ScheduleOf(name); ok {
			return expr, true
		}
	}
	return "", false
}

// ScheduleOf returns the expression of the function's schedule event name.
func (f Function) ScheduleOf(name string) (string, bool) {
	ev, ok := f.Events[name]
	if !ok || ev.Type != "ScheduleV2" && ev.Type != "Schedule" {
		return "", false
	}
	expr, ok := ev.Properties["ScheduleExpression"].(string)
	if !ok {
		expr, ok = ev.Properties["Schedule"].(string)
	}
	return expr, ok
}

// Globals returns the template's Globals section for a resource kind
// (Function, HttpApi, ...), as written: properties that a resource does not
// set take these values.
func (t *Template) Globals(kind string) map[string]any {
	m, _ := t.section("Globals")[kind].(map[string]any)
	return m
}
