package template

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// deferIf keeps a Fn::If for applyConditions: goformation's own handler
// looks the condition up in the unprocessed template, where it is still an
// expression, and so never picks a branch.
func deferIf(_ string, input any, _ any) any {
	return map[string]any{ifKey: input}
}

// contains is the rule function Fn::Contains: [list, value] is true when
// value is one of list's members (whole strings, not substrings).
func contains(_ string, input any, _ any) any {
	list, value, ok := listAndValue(input)
	if !ok {
		return nil
	}
	for _, m := range list {
		if reflect.DeepEqual(m, value) {
			return true
		}
	}
	return false
}

// eachMemberEquals is the rule function Fn::EachMemberEquals: [list, value]
// is true when every member of list is value.
func eachMemberEquals(_ string, input any, _ any) any {
	list, value, ok := listAndValue(input)
	if !ok {
		return nil
	}
	for _, m := range list {
		if !reflect.DeepEqual(m, value) {
			return false
		}
	}
	return true
}

// eachMemberIn is the rule function Fn::EachMemberIn: [list, allowed] is
// true when every member of list is one of allowed's.
func eachMemberIn(_ string, input any, _ any) any {
	list, value, ok := listAndValue(input)
	allowed, isList := value.([]any)
	if !ok || !isList {
		return nil
	}
	for _, m := range list {
		if contains("", []any{allowed, m}, nil) != true {
			return false
		}
	}
	return true
}

func listAndValue(input any) ([]any, any, bool) {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return nil, nil, false
	}
	list, ok := args[0].([]any)
	return list, args[1], ok
}

// unsupportedSeen lists the rule functions unsupported met during one
// Parse; parseMu guards it, as the processor runs under that lock.
var unsupportedSeen []string

// unsupported records a rule function that needs AWS to evaluate (it reads
// attributes of AWS-specific parameter types), so Parse reports it instead
// of a rule silently passing or failing.
func unsupported(name string, _ any, _ any) any {
	unsupportedSeen = append(unsupportedSeen, name)
	return nil
}

// describe renders an evaluated value for an error message.
func describe(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// applyConditions makes the document the one CloudFormation deploys: the
// conditions (already evaluated by the processor) choose each Fn::If's
// branch, AWS::NoValue removes what it stands for, and resources and
// outputs whose condition is false go.
func (t *Template) applyConditions() error {
	conds := map[string]bool{}
	for name, v := range t.section("Conditions") {
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("template: condition %s did not evaluate to a boolean: %s", name, describe(v))
		}
		conds[name] = b
	}
	for _, section := range []string{"Resources", "Outputs"} {
		entries := t.section(section)
		ids := make([]string, 0, len(entries))
		for id := range entries {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			m, _ := entries[id].(map[string]any)
			name, has := m["Condition"]
			if !has {
				continue
			}
			s, _ := name.(string)
			value, ok := conds[s]
			if !ok {
				return fmt.Errorf("template: %s %s: no condition %v", section, id, name)
			}
			if !value {
				delete(entries, id)
			}
		}
	}
	doc, keep, err := resolveConditions(t.doc, conds)
	if err != nil {
		return err
	}
	if !keep {
		return fmt.Errorf("template: the document is AWS::NoValue")
	}
	t.doc = doc.(map[string]any)
	return nil
}

// resolveConditions replaces each deferred Fn::If by its chosen branch and
// drops AWS::NoValue; keep is false when v itself is AWS::NoValue.
func resolveConditions(v any, conds map[string]bool) (out any, keep bool, err error) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[noValueKey]; ok {
			return nil, false, nil
		}
		if args, ok := x[ifKey]; ok {
			arr, _ := args.([]any)
			if len(arr) != 3 {
				return nil, false, fmt.Errorf("template: Fn::If needs [condition, value if true, value if false]: got %s", describe(args))
			}
			name, _ := arr[0].(string)
			value, ok := conds[name]
			if !ok {
				return nil, false, fmt.Errorf("template: Fn::If: no condition %s", describe(arr[0]))
			}
			if value {
				return resolveConditions(arr[1], conds)
			}
			return resolveConditions(arr[2], conds)
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			r, keep, err := resolveConditions(e, conds)
			if err != nil {
				return nil, false, err
			}
			if keep {
				m[k] = r
			}
		}
		return m, true, nil
	case []any:
		l := make([]any, 0, len(x))
		for _, e := range x {
			r, keep, err := resolveConditions(e, conds)
			if err != nil {
				return nil, false, err
			}
			if keep {
				l = append(l, r)
			}
		}
		return l, true, nil
	}
	return v, true, nil
}
