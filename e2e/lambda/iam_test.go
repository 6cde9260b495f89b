package lambda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/provision"
	"github.com/webhook-inbox/webhook-inbox/internal/template"
	awsemulator "github.com/webhook-inbox/webhook-inbox/tools/emulator"
)

// apiCall is one AWS API call a function made, as the recorder saw it.
type apiCall struct {
	Service string // dynamodb, sqs, ssm
	Action  string // PutItem, SendMessage, GetParameter
	Body    []byte
}

func (c apiCall) String() string { return c.Service + ":" + c.Action }

// recorder is a reverse proxy in front of the AWS emulators: the functions
// get its URL as AWS_ENDPOINT_URL (and no other endpoint variable), and it
// records every call on its way to its service's emulator.
type recorder struct {
	URL   string
	mu    sync.Mutex
	calls []apiCall
}

func startRecorder(t testing.TB, targets awsemulator.Endpoints) *recorder {
	t.Helper()
	proxy, err := awsemulator.NewRouter(targets)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		service, action := parseTarget(r.Header.Get("X-Amz-Target"))
		if service == "" {
			service, action = "unknown", r.Method+" "+r.URL.Path
		}
		rec.mu.Lock()
		rec.calls = append(rec.calls, apiCall{Service: service, Action: action, Body: body})
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	rec.URL = "http://" + ln.Addr().String()
	return rec
}

// parseTarget reads the JSON protocol's X-Amz-Target header, like
// "DynamoDB_20120810.PutItem", "AmazonSQS.SendMessage", "AmazonSSM.GetParameter".
func parseTarget(target string) (service, action string) {
	prefix, action, ok := strings.Cut(target, ".")
	if !ok {
		return "", ""
	}
	switch {
	case strings.HasPrefix(prefix, "DynamoDB_"):
		return "dynamodb", action
	case prefix == "AmazonSQS":
		return "sqs", action
	case prefix == "AmazonSSM":
		return "ssm", action
	}
	return "", ""
}

// Calls returns the calls recorded from index from on.
func (r *recorder) Calls(from int) []apiCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]apiCall(nil), r.calls[min(from, len(r.calls)):]...)
}

// Len is the number of calls so far.
func (r *recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func names(calls []apiCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// secretReads counts the calls to Parameter Store among calls.
func secretReads(calls []apiCall) int {
	n := 0
	for _, c := range calls {
		if c.Service == "ssm" {
			n++
		}
	}
	return n
}

// permission is an IAM action on a resource ARN.
type permission struct{ Action, Resource string }

func (p permission) String() string { return p.Action + " on " + p.Resource }

// statement is an Allow statement of a function's inline policy, resolved
// against the provisioned resources.
type statement struct {
	Actions, Resources []string
}

// policy reads function id's inline policy statements from the template.
// Only inline statements are accepted: a managed policy or a SAM policy
// template could not be checked here, and grants more than the function
// needs.
func policy(t testing.TB, tmpl *template.Template, res *provision.Resources, id string) []statement {
	t.Helper()
	r, ok := tmpl.Resource(id)
	if !ok {
		t.Fatalf("template: no %s", id)
	}
	docs, _ := r.Properties["Policies"].([]any)
	if len(docs) == 0 {
		t.Fatalf("%s: no Policies", id)
	}
	var out []statement
	for _, d := range docs {
		doc, ok := d.(map[string]any)
		if !ok || doc["Statement"] == nil {
			t.Fatalf("%s: policy %v is not an inline policy document", id, d)
		}
		for _, s := range doc["Statement"].([]any) {
			st := s.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Fatalf("%s: statement %v: only Allow statements are expected", id, st)
			}
			var out1 statement
			for _, a := range list(st["Action"]) {
				out1.Actions = append(out1.Actions, template.Scalar(a))
			}
			for _, v := range list(st["Resource"]) {
				arn, err := res.Resolve(v)
				if err != nil {
					t.Fatalf("%s: resource %v: %v", id, v, err)
				}
				out1.Resources = append(out1.Resources, arn)
			}
			out = append(out, out1)
		}
	}
	return out
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// permissions returns what IAM authorizes for call: TransactWriteItems is
// authorized per item (PutItem, UpdateItem, ... on each item's table).
func permissions(c apiCall, res *provision.Resources) ([]permission, error) {
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		return nil, fmt.Errorf("%s: body is not JSON: %w", c, err)
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch c.Service {
	case "dynamodb":
		table := func(name string) string {
			return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", template.Region, template.AccountID, name)
		}
		if c.Action == "TransactWriteItems" {
			var out []permission
			items, _ := body["TransactItems"].([]any)
			for _, it := range items {
				for op, v := range it.(map[string]any) {
					action := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}[op]
					if action == "" {
						return nil, fmt.Errorf("%s: unknown transaction item %s", c, op)
					}
					out = append(out, permission{"dynamodb:" + action, table(str(v.(map[string]any), "TableName"))})
				}
			}
			return out, nil
		}
		if c.Action == "BatchGetItem" {
			var out []permission
			requests, _ := body["RequestItems"].(map[string]any)
			for name := range requests {
				out = append(out, permission{"dynamodb:BatchGetItem", table(name)})
			}
			return out, nil
		}
		name := str(body, "TableName")
		if name == "" {
			return nil, fmt.Errorf("%s: no TableName", c)
		}
		arn := table(name)
		if idx := str(body, "IndexName"); idx != "" {
			arn += "/index/" + idx
		}
		return []permission{{"dynamodb:" + c.Action, arn}}, nil
	case "sqs":
		u := str(body, "QueueUrl")
		for _, q := range res.Queues {
			if q.URL == u {
				return []permission{{"sqs:" + c.Action, q.ARN}}, nil
			}
		}
		return nil, fmt.Errorf("%s: queue %s is not one of the template's", c, u)
	case "ssm":
		name := str(body, "Name")
		if !strings.HasPrefix(name, "/") {
			name = "/" + name
		}
		return []permission{{"ssm:" + c.Action, fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", template.Region, template.AccountID, name)}}, nil
	}
	return nil, fmt.Errorf("%s: a call to an unexpected service", c)
}

// glob matches IAM's wildcards: * any run of characters, ? one.
func glob(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*"), `\?`, ".") + "$"
	return regexp.MustCompile("(?i)" + re).MatchString(s)
}

func (s statement) allows(p permission) bool {
	action, resource := false, false
	for _, a := range s.Actions {
		action = action || glob(a, p.Action)
	}
	for _, r := range s.Resources {
		resource = resource || glob(r, p.Resource)
	}
	return action && resource
}

// checkLeastPrivilege fails the test unless every call is allowed by the
// function's policy and every grant of the policy was used by some call: the
// policy is exactly what the function does.
func checkLeastPrivilege(t *testing.T, tmpl *template.Template, res *provision.Resources, id string, calls []apiCall) {
	t.Helper()
	stmts := policy(t, tmpl, res, id)
	used := map[permission]bool{}
	for _, c := range calls {
		perms, err := permissions(c, res)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		for _, p := range perms {
			allowed := false
			for _, s := range stmts {
				if s.allows(p) {
					allowed = true
				}
			}
			if !allowed {
				t.Errorf("%s made a call its policy in template.yaml does not allow: %s", id, p)
			}
			used[p] = true
		}
	}
	var unused []string
	for _, s := range stmts {
		for _, a := range s.Actions {
			for _, r := range s.Resources {
				hit := false
				for p := range used {
					if glob(a, p.Action) && glob(r, p.Resource) {
						hit = true
					}
				}
				if !hit {
					unused = append(unused, permission{a, r}.String())
				}
			}
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("%s's policy grants what it never used in this test: %v", id, unused)
	}
}
