package samconfig

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Env is one environment of samconfig.toml: what `sam deploy --config-env
// <Name>` deploys.
type Env struct {
	Name string
	// StackName is the deploy's stack_name (its own, else global's).
	StackName string
	// Deploy is the [<name>.deploy.parameters] section, nil when the
	// environment has none (default holds only the build's settings).
	Deploy map[string]any
	// Overrides are the template parameters the deploy passes.
	Overrides map[string]string
}

// Load reads the environments of the samconfig.toml at path, by name.
func Load(path string) (map[string]Env, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samconfig: %w", err)
	}
	return Parse(string(data))
}

// Parse reads samconfig.toml's text.
func Parse(data string) (map[string]Env, error) {
	var raw map[string]any
	if _, err := toml.Decode(data, &raw); err != nil {
		return nil, fmt.Errorf("samconfig: %w", err)
	}
	doc := map[string]map[string]map[string]any{}
	for name, v := range raw {
		if name == "version" {
			continue
		}
		cmds, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("samconfig: %s is not an environment", name)
		}
		doc[name] = map[string]map[string]any{}
		for cmd, section := range cmds {
			s, ok := section.(map[string]any)
			params, ok2 := s["parameters"].(map[string]any)
			if !ok || !ok2 {
				return nil, fmt.Errorf("samconfig: [%s.%s] has no parameters table", name, cmd)
			}
			doc[name][cmd] = params
		}
	}
	return envs(doc)
}

func envs(doc map[string]map[string]map[string]any) (map[string]Env, error) {
	out := map[string]Env{}
	for name, cmds := range doc {
		e := Env{Name: name, Deploy: cmds["deploy"]}
		e.StackName, _ = cmds["global"]["stack_name"].(string)
		if v, ok := e.Deploy["stack_name"].(string); ok {
			e.StackName = v
		}
		overrides, ok := e.Deploy["parameter_overrides"]
		if !ok {
			overrides, ok = cmds["global"]["parameter_overrides"]
		}
		if ok {
			entries, err := list(overrides)
			if err != nil {
				return nil, fmt.Errorf("samconfig: [%s] parameter_overrides: %w", name, err)
			}
			if e.Overrides, err = ParseOverrides(entries); err != nil {
				return nil, fmt.Errorf("samconfig: [%s] parameter_overrides: %w", name, err)
			}
		}
		out[name] = e
	}
	return out, nil
}

// list is parameter_overrides as a list of strings: SAM takes a list or
// one string.
func list(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("entry %d is %T, not a string", i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T: want a list of Key=Value strings", v)
}

// pair is SAM's pattern for one Key=Value of parameter_overrides
// (samcli/cli/types.py, CfnParameterOverridesType): a value is quoted, or
// runs to the next space; a backslash escapes one character.
var pair = regexp.MustCompile(` ([A-Za-z0-9"']+)=("(?:\\.|[^"\\]+)*"|'(?:\\.|[^'\\]+)*'|(?:\\.|[^ "\\]+)+)`)

// ParseOverrides reads parameter_overrides entries as SAM does, and
// refuses an entry with text SAM would not read as part of a value (an
// unquoted space, say), or a parameter given twice.
func ParseOverrides(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		text := " " + strings.TrimSpace(e)
		matches := pair.FindAllStringSubmatchIndex(text, -1)
		covered := 0
		for _, m := range matches {
			if strings.TrimSpace(text[covered:m[0]]) != "" {
				break
			}
			covered = m[1]
			key, value := unquote(text[m[2]:m[3]]), unquote(text[m[4]:m[5]])
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("%s given twice", key)
			}
			out[key] = value
		}
		if rest := strings.TrimSpace(text[covered:]); rest != "" || len(matches) == 0 {
			return nil, fmt.Errorf("%q: SAM reads it as %s and cannot place %q: quote a value with a space (Key=\"a b\") and write an empty one as Key=\"\"",
				e, describe(text, matches), rest)
		}
	}
	return out, nil
}

// unquote is SAM's _unquote_wrapped_quotes.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == v[len(v)-1] && (v[0] == '"' || v[0] == '\'') {
		v = v[1 : len(v)-1]
	}
	return strings.NewReplacer(`\ `, " ", `\"`, `"`, `\'`, "'").Replace(v)
}

func describe(text string, matches [][]int) string {
	if len(matches) == 0 {
		return "nothing"
	}
	var parts []string
	for _, m := range matches {
		parts = append(parts, fmt.Sprintf("%s=%q", unquote(text[m[2]:m[3]]), unquote(text[m[4]:m[5]])))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
