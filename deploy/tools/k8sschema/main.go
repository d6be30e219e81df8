// Command k8sschema writes kubeconform's strict, standalone JSON schemas
// of the Kubernetes kinds from the API's OpenAPI v2 document
// (api/openapi-spec/swagger.json of the k8s.io/kubernetes module, which the
// Go module proxy serves), so that manifests are validated without the
// network kubeconform would otherwise fetch its schemas from:
//
//	k8sschema -swagger .../swagger.json -out DIR
//	kubeconform -strict -schema-location DIR ...
//
// It does what kubeconform's openapi2jsonschema.py does with --strict
// --stand-alone: objects with properties take no others, IntOrString and
// Quantity take strings and numbers, and each kind's file carries the
// definitions it refers to. Files: DIR/master-standalone-strict/
// <kind>[-<group>]-<version>.json, kubeconform's layout for
// -kubernetes-version master.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const refPrefix = "#/definitions/"

func main() {
	swagger := flag.String("swagger", "", "the Kubernetes OpenAPI v2 document (swagger.json)")
	out := flag.String("out", "", "directory to write the schemas to")
	flag.Parse()
	if *swagger == "" || *out == "" {
		log.Fatal("usage: k8sschema -swagger swagger.json -out DIR")
	}
	b, err := os.ReadFile(*swagger)
	if err != nil {
		log.Fatal(err)
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		log.Fatalf("%s: %v", *swagger, err)
	}
	defs := map[string]any{}
	for name, d := range doc.Definitions {
		defs[name] = convertDef(name, d)
	}
	dir := filepath.Join(*out, "master-standalone-strict")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	names := make([]string, 0, len(doc.Definitions))
	for n := range doc.Definitions {
		names = append(names, n)
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		gvks, _ := doc.Definitions[name]["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if kind == "" || version == "" {
				continue
			}
			schema := map[string]any{}
			for k, v := range defs[name].(map[string]any) {
				schema[k] = v
			}
			schema["definitions"] = reachable(defs, name)
			file := strings.ToLower(kind)
			if group != "" {
				file += "-" + strings.Split(group, ".")[0]
			}
			file += "-" + version + ".json"
			data, err := json.Marshal(schema)
			if err != nil {
				log.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				log.Fatal(err)
			}
			n++
		}
	}
	fmt.Printf("k8sschema: %d schemas in %s\n", n, dir)
}

// convertDef is a definition as kubeconform's strict schemas have it.
func convertDef(name string, d map[string]any) any {
	switch {
	case strings.HasSuffix(name, ".util.intstr.IntOrString"):
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	case strings.HasSuffix(name, ".api.resource.Quantity"):
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
	}
	return convert(d)
}

func convert(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"]; ok {
			return map[string]any{"$ref": ref}
		}
		if t["format"] == "int-or-string" {
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		}
		out := map[string]any{}
		for k, val := range t {
			switch {
			case k == "description" || strings.HasPrefix(k, "x-kubernetes-"):
			case k == "properties":
				props := map[string]any{}
				for p, ps := range val.(map[string]any) {
					props[p] = convert(ps)
				}
				out[k] = props
			default:
				out[k] = convert(val)
			}
		}
		if props, ok := out["properties"].(map[string]any); ok && len(props) > 0 {
			if _, set := out["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = convert(e)
		}
		return out
	}
	return v
}

// reachable returns the definitions that root refers to, transitively.
func reachable(defs map[string]any, root string) map[string]any {
	out := map[string]any{}
	queue := []string{root}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, done := out[name]; done {
			continue
		}
		d, ok := defs[name]
		if !ok {
			continue
		}
		out[name] = d
		walkRefs(d, func(ref string) { queue = append(queue, strings.TrimPrefix(ref, refPrefix)) })
	}
	return out
}

func walkRefs(v any, f func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if s, ok := val.(string); ok && k == "$ref" {
				f(s)
			}
			walkRefs(val, f)
		}
	case []any:
		for _, e := range t {
			walkRefs(e, f)
		}
	}
}
