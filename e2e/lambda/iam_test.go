package lambda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	awsemulator "github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
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

// permission is an IAM action on a resource ARN, and the service that
// asks for it on the function's behalf (kms:ViaService: DynamoDB, SQS or
// Parameter Store using the customer-managed key for the function's call),
// "" for a call the function makes itself.
type permission struct{ Action, Resource, Via string }

func (p permission) String() string {
	s := p.Action + " on " + p.Resource
	switch {
	case p.Via != "":
		s += " via " + p.Via
	case strings.HasPrefix(p.Action, "kms:"):
		s += " called directly"
	}
	return s
}

// statement is an Allow statement of a function's inline policy, resolved
// against the provisioned resources.
type statement struct {
	Actions, Resources []string
	// Via holds the kms:ViaService values its condition allows; nil for
	// a statement without a condition, which allows the call whoever
	// makes it.
	Via []string
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
			if c, ok := st["Condition"]; ok {
				via, err := viaServices(c, res)
				if err != nil {
					t.Fatalf("%s: statement %v: %v", id, st["Sid"], err)
				}
				out1.Via = via
			}
			out = append(out, out1)
		}
	}
	return out
}

// viaServices reads a statement's condition. The one this check can
// evaluate is StringEquals on kms:ViaService; any other would be ignored
// silently, so it fails the test instead.
func viaServices(c any, res *provision.Resources) ([]string, error) {
	m, _ := c.(map[string]any)
	eq, _ := m["StringEquals"].(map[string]any)
	values, ok := eq["kms:ViaService"]
	if len(m) != 1 || len(eq) != 1 || !ok {
		return nil, fmt.Errorf("condition %v: the check evaluates only StringEquals on kms:ViaService", c)
	}
	var out []string
	for _, v := range list(values) {
		s, err := res.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("condition %v: %w", c, err)
		}
		out = append(out, s)
	}
	return out, nil
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
					out = append(out, permission{Action: "dynamodb:" + action, Resource: table(str(v.(map[string]any), "TableName"))})
				}
			}
			return out, nil
		}
		if c.Action == "BatchGetItem" {
			var out []permission
			requests, _ := body["RequestItems"].(map[string]any)
			for name := range requests {
				out = append(out, permission{Action: "dynamodb:BatchGetItem", Resource: table(name)})
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
		return []permission{{Action: "dynamodb:" + c.Action, Resource: arn}}, nil
	case "sqs":
		u := str(body, "QueueUrl")
		for _, q := range res.Queues {
			if q.URL == u {
				return []permission{{Action: "sqs:" + c.Action, Resource: q.ARN}}, nil
			}
		}
		return nil, fmt.Errorf("%s: queue %s is not one of the template's", c, u)
	case "ssm":
		name := str(body, "Name")
		if !strings.HasPrefix(name, "/") {
			name = "/" + name
		}
		return []permission{{Action: "ssm:" + c.Action, Resource: fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", template.Region, template.AccountID, name)}}, nil
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
	return action && resource && (s.Via == nil || slices.Contains(s.Via, p.Via))
}

// viaService is the kms:ViaService value of an AWS service in the local
// stack's region.
func viaService(service string) string {
	return service + "." + template.Region + ".amazonaws.com"
}

// keyUses are the uses of the customer-managed key (the template's
// KmsKeyArn) that the services make for function id's calls, with the
// function's own permissions: Decrypt through DynamoDB for any call on a
// table under the key; GenerateDataKey and Decrypt through SQS to send to
// a queue under it, Decrypt to receive from one, which Lambda's poller
// does with the function's role for its SQS event source; Decrypt through
// Parameter Store for each SecureString read (stored under the key, as
// docs/operations.md asks and newSetupWith does). None without a key.
func keyUses(t *testing.T, tmpl *template.Template, res *provision.Resources, id string, calls []apiCall) []permission {
	t.Helper()
	key, _ := tmpl.Parameter("KmsKeyArn")
	if key == "" {
		return nil
	}
	tables, queues := map[string]bool{}, map[string]bool{}
	for _, r := range tmpl.Resources("AWS::DynamoDB::Table") {
		if sse, _ := r.Properties["SSESpecification"].(map[string]any); sse["KMSMasterKeyId"] == key {
			tables[fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", template.Region, template.AccountID, res.Tables[r.LogicalID])] = true
		}
	}
	for _, r := range tmpl.Resources("AWS::SQS::Queue") {
		if r.Properties["KmsMasterKeyId"] == key {
			queues[res.Queues[r.LogicalID].ARN] = true
		}
	}
	decrypt := func(service string) permission { return permission{"kms:Decrypt", key, viaService(service)} }
	var out []permission
	if f, err := tmpl.Function(id); err == nil {
		if src, err := f.SQS(); err == nil && queues[res.Queues[src.Queue.LogicalID].ARN] {
			out = append(out, decrypt("sqs"))
		}
	}
	for _, c := range calls {
		perms, err := permissions(c, res)
		if err != nil {
			continue // checkLeastPrivilege reports it
		}
		for _, p := range perms {
			switch {
			case strings.HasPrefix(p.Action, "dynamodb:"):
				table, _, _ := strings.Cut(p.Resource, "/index/")
				if tables[table] {
					out = append(out, decrypt("dynamodb"))
				}
			case p.Action == "sqs:SendMessage" || p.Action == "sqs:SendMessageBatch":
				if queues[p.Resource] {
					out = append(out, permission{"kms:GenerateDataKey", key, viaService("sqs")}, decrypt("sqs"))
				}
			case p.Action == "sqs:ReceiveMessage":
				if queues[p.Resource] {
					out = append(out, decrypt("sqs"))
				}
			case p.Action == "ssm:GetParameter":
				out = append(out, decrypt("ssm"))
			}
		}
	}
	return out
}

// checkLeastPrivilege fails the test unless every call is allowed by the
// function's policy and every grant of the policy was used by some call: the
// policy is exactly what the function does. The calls include the uses of
// the customer-managed key that services make for them (keyUses); a grant
// without a kms:ViaService condition is one to call directly, and must be
// used so, a grant with one must be used through each service it names.
func checkLeastPrivilege(t *testing.T, tmpl *template.Template, res *provision.Resources, id string, calls []apiCall) {
	t.Helper()
	stmts := policy(t, tmpl, res, id)
	used := map[permission]bool{}
	var all []permission
	for _, c := range calls {
		perms, err := permissions(c, res)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		all = append(all, perms...)
	}
	all = append(all, keyUses(t, tmpl, res, id, calls)...)
	for _, p := range all {
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
	var unused []string
	for _, s := range stmts {
		vias := s.Via
		if vias == nil {
			vias = []string{""}
		}
		for _, a := range s.Actions {
			for _, r := range s.Resources {
				for _, v := range vias {
					hit := false
					for p := range used {
						if glob(a, p.Action) && glob(r, p.Resource) && p.Via == v {
							hit = true
						}
					}
					if !hit {
						unused = append(unused, permission{a, r, v}.String())
					}
				}
			}
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("%s's policy grants what it never used in this test: %v", id, unused)
	}
}
