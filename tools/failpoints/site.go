package failpoints

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// A Site is where a function makes a call: the function, the service and
// the call's shape, read from the request itself (the operation, the
// table or queue by its logical id, the kind of item by its key, the
// status an update sets). The same site called again (another shard of
// one index, the next run of the reconciler) is the same site; its
// occurrences are counted.
type Site struct {
	Function string `json:"function"`
	Service  string `json:"service"`
	Call     string `json:"call"`
}

func (s Site) String() string { return s.Function + " " + s.Service + " " + s.Call }

// reads are the operations that change nothing: for them an answer lost
// after the call took effect is the same fault as a call that failed.
var reads = []string{"GetItem", "Query", "Scan", "BatchGetItem", "GetParameter", "GetParameters",
	"ReceiveMessage", "GetQueueAttributes", "GetQueueUrl"}

// readOnly reports whether a call of site changes nothing.
func (s Site) readOnly() bool {
	op, _, _ := strings.Cut(s.Call, " ")
	return slices.Contains(reads, op) || op == "GET"
}

// awsRequest is what naming reads of an AWS JSON-protocol request.
type awsRequest struct {
	TableName                 string
	IndexName                 string
	Key, Item                 map[string]json.RawMessage
	UpdateExpression          string
	ExpressionAttributeValues map[string]json.RawMessage
	TransactItems             []map[string]awsRequest
	RequestItems              map[string]struct {
		Keys []map[string]json.RawMessage
	}
	QueueUrl string
	Name     string
}

// awsCall names an AWS call of a case whose resources are named
// prefix-<LogicalID>.
func awsCall(prefix, op string, body []byte) string {
	var r awsRequest
	_ = json.Unmarshal(body, &r)
	return op + " " + r.describe(prefix, op)
}

func (r awsRequest) describe(prefix, op string) string {
	switch {
	case op == "TransactWriteItems":
		var parts []string
		for _, it := range r.TransactItems {
			for kind, in := range it {
				parts = append(parts, strings.ToLower(kind)+":"+in.describe(prefix, kind))
			}
		}
		return strings.Join(parts, " + ")
	case op == "BatchGetItem":
		var parts []string
		for table, ka := range r.RequestItems {
			kinds := map[string]bool{}
			for _, k := range ka.Keys {
				kinds[keyKind(k)] = true
			}
			for _, k := range slices.Sorted(maps.Keys(kinds)) {
				parts = append(parts, logical(prefix, table)+"."+k)
			}
		}
		return strings.Join(parts, " + ")
	case r.QueueUrl != "":
		return logical(prefix, r.QueueUrl[strings.LastIndexByte(r.QueueUrl, '/')+1:])
	case r.Name != "":
		// A parameter: its last two segments (stripe/webhook-secrets).
		segs := strings.Split(strings.Trim(r.Name, "/"), "/")
		return strings.Join(segs[max(0, len(segs)-2):], "/")
	}
	where := logical(prefix, r.TableName)
	if r.IndexName != "" {
		where += "." + r.IndexName
		if part := r.partition(); part != "" {
			where += "/" + part
		}
		return where
	}
	item := r.Key
	if item == nil {
		item = r.Item
	}
	if item != nil {
		where += "." + keyKind(item)
	}
	if to := r.setsStatus(); to != "" {
		where += " →" + to
	}
	return where
}

// partition names the part of an index a query reads: the middle of a
// sharded key ("pending" of stripe#pending#07), unless it varies (a day).
func (r awsRequest) partition() string {
	for _, name := range slices.Sorted(maps.Keys(r.ExpressionAttributeValues)) {
		segs := strings.Split(stringValue(r.ExpressionAttributeValues[name]), "#")
		if len(segs) == 3 && !strings.ContainsAny(segs[1], "0123456789") {
			return segs[1]
		}
	}
	return ""
}

// setStatus finds the value an update gives a placeholder-named attribute
// whose value is a status: the transition the write makes.
var setStatus = regexp.MustCompile(`#\w+ = (:\w+)`)

func (r awsRequest) setsStatus() string {
	for _, m := range setStatus.FindAllStringSubmatch(r.UpdateExpression, -1) {
		if s := stringValue(r.ExpressionAttributeValues[m[1]]); s != "" {
			if _, err := event.ParseStatus(s); err == nil {
				return s
			}
		}
	}
	return ""
}

// keyKind reads an item's key: "record" for an event record (its key is
// <provider>#<id>), else the key's prefix before its first "#" (an item
// of another kind in the same table), else "item".
func keyKind(item map[string]json.RawMessage) string {
	var key string
	for _, name := range slices.Sorted(maps.Keys(item)) {
		if s := stringValue(item[name]); strings.Contains(s, "#") {
			key = s
			break
		}
	}
	kind, _, ok := strings.Cut(key, "#")
	switch {
	case !ok:
		return "item"
	case slices.Contains(event.Providers, kind), slices.ContainsFunc(DeclaredWorlds, func(w World) bool { return w.Provider == kind }):
		return "record"
	}
	return kind
}

func stringValue(raw json.RawMessage) string {
	var v struct{ S string }
	_ = json.Unmarshal(raw, &v)
	return v.S
}

// logical strips the case's prefix and "Table" from a resource's name.
func logical(prefix, name string) string {
	name = strings.TrimPrefix(name, prefix+"-")
	return strings.TrimSuffix(name, "Table")
}
