// Package template reads template.yaml, the single source of truth for the
// pipeline's resources, with goformation's intrinsic-function processor.
//
// goformation's typed SAM structs lag behind SAM (an SQS event with
// FunctionResponseTypes or ScalingConfig decodes to nil), so this package
// processes intrinsics and then reads the generic document. Parameters
// resolve to their values (after overrides); references to resources stay
// symbolic (Ref, GetAtt) until the local provisioner knows their names.
//
// The document is then what CloudFormation would deploy with those
// parameters: each Fn::If takes the branch its condition chose, a value of
// AWS::NoValue leaves its property or list element out, and a resource
// whose Condition is false is not there. goformation resolves neither (its
// Fn::If reads the conditions unevaluated, and its condition option
// replaces any map with a Condition key, resources included, by a boolean),
// so this package does it after the processor, from the Conditions section
// the processor evaluated. The Rules section is checked as CloudFormation
// checks it before a deploy, with the rule-specific functions
// Fn::Contains, Fn::EachMemberEquals and Fn::EachMemberIn evaluated here;
// Fn::RefAll, Fn::ValueOf and Fn::ValueOfAll (which ask AWS about
// AWS-specific parameter types) are refused.
package template

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// Ref is an unresolved reference to a resource.
type Ref struct{ LogicalID string }

// GetAtt is an unresolved attribute of a resource.
type GetAtt struct{ LogicalID, Attr string }

// Template is a processed template.
type Template struct {
	doc map[string]any
}

// Region and account the local stack pretends to be in.
const (
	Region    = "us-east-1"
	AccountID = "000000000000"
)

const (
	refKey     = "__local_ref"
	getAttKey  = "__local_getatt"
	ifKey      = "__local_if"
	noValueKey = "__local_novalue"
)

// Load reads and processes the template at path; overrides replace parameter
// defaults, as `sam deploy --parameter-overrides` does.
func Load(path string, overrides map[string]string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return Parse(data, overrides)
}

// parseMu serializes goformation's processor, which writes a package-level
// map (its YAML tag registry) on every call.
var parseMu sync.Mutex

// Parse processes a template document. It is safe for concurrent use.
func Parse(data []byte, overrides map[string]string) (*Template, error) {
	params := map[string]any{}
	for k, v := range overrides {
		params[k] = v
	}
	parseMu.Lock()
	defer parseMu.Unlock()
	unsupportedSeen = nil
	out, err := intrinsics.ProcessYAML(data, &intrinsics.ProcessorOptions{
		ParameterOverrides: params,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref":                  ref,
			"Fn::GetAtt":           getAtt,
			"Fn::Sub":              sub,
			"Fn::If":               deferIf,
			"Fn::Contains":         contains,
			"Fn::EachMemberEquals": eachMemberEquals,
			"Fn::EachMemberIn":     eachMemberIn,
			"Fn::RefAll":           unsupported,
			"Fn::ValueOf":          unsupported,
			"Fn::ValueOfAll":       unsupported,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if len(unsupportedSeen) > 0 {
		return nil, fmt.Errorf(
			"template: %s: not evaluated by the local template loader (it asks AWS about AWS-specific parameter types)",
			strings.Join(unsupportedSeen, ", "),
		)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	t := &Template{doc: doc}
	for name := range overrides {
		if _, ok := t.section("Parameters")[name]; !ok {
			return nil, fmt.Errorf("template: parameter override %s: no such parameter", name)
		}
	}
	if err := t.checkRules(); err != nil {
		return nil, err
	}
	if err := t.applyConditions(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkRules refuses parameters the template's Rules refuse, as
// CloudFormation does before it creates or updates a stack. The processor
// has already evaluated each rule's condition and assertions to booleans.
func (t *Template) checkRules() error {
	var failed []string
	names := make([]string, 0, len(t.section("Rules")))
	for name := range t.section("Rules") {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rule, _ := t.section("Rules")[name].(map[string]any)
		if cond, ok := rule["RuleCondition"]; ok && cond != true {
			if cond != false {
				return fmt.Errorf("template: rule %s: condition did not evaluate to a boolean: %s", name, describe(cond))
			}
			continue
		}
		asserts, _ := rule["Assertions"].([]any)
		for _, a := range asserts {
			as, _ := a.(map[string]any)
			switch as["Assert"] {
			case true:
			case false:
				failed = append(failed, fmt.Sprintf("%s: %v", name, as["AssertDescription"]))
			default:
				return fmt.Errorf("template: rule %s: assertion did not evaluate to a boolean: %s", name, describe(as["Assert"]))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("template: parameters refused by the template's rules:\n  %s", strings.Join(failed, "\n  "))
	}
	return nil
}

func ref(_ string, input any, tmpl any) any {
	name, ok := input.(string)
	if !ok {
		return nil
	}
	switch name {
	case "AWS::Region":
		return Region
	case "AWS::AccountId":
		return AccountID
	case "AWS::Partition":
		return "aws"
	case "AWS::URLSuffix":
		return "amazonaws.com"
	case "AWS::StackName":
		return "webhook-inbox-local"
	case "AWS::NoValue":
		return map[string]any{noValueKey: true}
	}
	if v := intrinsics.Ref("Ref", name, tmpl); v != nil {
		return v // a parameter
	}
	return map[string]any{refKey: name}
}

func getAtt(_ string, input any, _ any) any {
	switch v := input.(type) {
	case string:
		id, attr, _ := strings.Cut(v, ".")
		return map[string]any{getAttKey: []any{id, attr}}
	case []any:
		if len(v) == 2 {
			return map[string]any{getAttKey: v}
		}
	}
	return nil
}

// subVariable matches ${Name}, ${Resource.Attr} and the literal ${!Name}.
var subVariable = regexp.MustCompile(`\$\{!?[A-Za-z0-9_.:]+\}`)

// sub resolves the variables of a Fn::Sub that are known locally: its own
// variables when they are strings, parameters, and pseudo parameters with
// the values Ref gives them. goformation's own Fn::Sub resolves pseudo
// parameters to placeholders of its own (no partition, another account), so
// an ARN built with !Sub would not match the ones Ref and GetAtt give.
// Variables naming resources are left as written.
func sub(_ string, input any, tmpl any) any {
	var src string
	vars := map[string]any{}
	switch v := input.(type) {
	case string:
		src = v
	case []any:
		s, ok := v[0].(string)
		if len(v) != 2 || !ok {
			return nil
		}
		src = s
		if m, ok := v[1].(map[string]any); ok {
			vars = m
		}
	default:
		return nil
	}
	return subVariable.ReplaceAllStringFunc(src, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		if v, ok := vars[name].(string); ok {
			return v
		}
		if _, isVar := vars[name]; !isVar && !strings.Contains(name, ".") {
			if v, ok := ref("Ref", name, tmpl).(string); ok {
				return v
			}
		}
		return m
	})
}

// Symbol decodes a value that may be an unresolved Ref or GetAtt.
func Symbol(v any) (Ref, GetAtt, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Ref{}, GetAtt{}, false
	}
	if id, ok := m[refKey].(string); ok {
		return Ref{LogicalID: id}, GetAtt{}, true
	}
	if parts, ok := m[getAttKey].([]any); ok && len(parts) == 2 {
		id, _ := parts[0].(string)
		attr, _ := parts[1].(string)
		return Ref{}, GetAtt{LogicalID: id, Attr: attr}, true
	}
	return Ref{}, GetAtt{}, false
}

func (t *Template) section(name string) map[string]any {
	m, _ := t.doc[name].(map[string]any)
	return m
}

// Resource is one resource of the template.
type Resource struct {
	LogicalID  string
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Resources returns the resources of type typ, sorted by logical id.
func (t *Template) Resources(typ string) []Resource {
	var out []Resource
	for id, raw := range t.section("Resources") {
		m, _ := raw.(map[string]any)
		if m["Type"] != typ {
			continue
		}
		props, _ := m["Properties"].(map[string]any)
		meta, _ := m["Metadata"].(map[string]any)
		out = append(out, Resource{LogicalID: id, Type: typ, Properties: props, Metadata: meta})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// Resource returns one resource by logical id.
func (t *Template) Resource(id string) (Resource, bool) {
	m, ok := t.section("Resources")[id].(map[string]any)
	if !ok {
		return Resource{}, false
	}
	typ, _ := m["Type"].(string)
	props, _ := m["Properties"].(map[string]any)
	meta, _ := m["Metadata"].(map[string]any)
	return Resource{LogicalID: id, Type: typ, Properties: props, Metadata: meta}, true
}

// Parameters returns each parameter's declaration (Type, Default,
// AllowedValues, AllowedPattern, MinValue, ...) by name, as the template
// writes it.
func (t *Template) Parameters() map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, v := range t.section("Parameters") {
		if p, ok := v.(map[string]any); ok {
			out[name] = p
		}
	}
	return out
}

// Parameter returns a parameter's value (its override, else its default).
func (t *Template) Parameter(name string) (string, bool) {
	p, ok := t.section("Parameters")[name].(map[string]any)
	if !ok {
		return "", false
	}
	v, ok := p["Default"]
	if !ok {
		return "", false
	}
	return Scalar(v), true
}

// Scalar renders a scalar template value as CloudFormation does for
// environment variables: numbers without a fraction print as integers.
func Scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Int reads an integer value (number or numeric string).
func Int(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}
