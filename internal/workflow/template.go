package workflow

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A template expression is ${{ ... }}; it cannot contain "}}".
var (
	exprRef   = regexp.MustCompile(`\$\{\{((?:[^}]|\}[^}])*)\}\}`)
	wholeExpr = regexp.MustCompile(`^\s*\$\{\{((?:[^}]|\}[^}])*)\}\}\s*$`)
)

// walkTemplate calls f with the source of every expression in template v
// (a YAML value: strings, maps, lists, scalars), in a stable order.
func walkTemplate(v any, f func(src string) error) error {
	switch t := v.(type) {
	case string:
		for _, m := range exprRef.FindAllStringSubmatch(t, -1) {
			if err := f(strings.TrimSpace(m[1])); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if err := walkTemplate(t[k], f); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, e := range t {
			if err := walkTemplate(e, f); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// render renders template v: a string that is one expression becomes the
// expression's value; expressions inside a longer string are replaced by
// their values' text; maps and lists are rendered member by member.
func render(v any, eval func(src string) (any, error)) (any, error) {
	switch t := v.(type) {
	case string:
		if m := wholeExpr.FindStringSubmatch(t); m != nil {
			return eval(strings.TrimSpace(m[1]))
		}
		var err error
		out := exprRef.ReplaceAllStringFunc(t, func(ref string) string {
			if err != nil {
				return ""
			}
			var val any
			val, err = eval(strings.TrimSpace(exprRef.FindStringSubmatch(ref)[1]))
			return text(val)
		})
		return out, err
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) {
			r, err := render(t[k], eval)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := render(e, eval)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// text is how a value reads inside a string: strings as they are, nil as
// nothing, anything else as JSON.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// payloadBytes is a rendered payload as a job carries it: a string as its
// bytes, nothing as nothing, anything else as JSON.
func payloadBytes(v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(t), nil
	case []byte:
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return b, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
