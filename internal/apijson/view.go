// Package view is the JSON shape of Ward's records: what the HTTP API
// (package gateway) returns and what the CLI's `-o json` and `-o yaml`
// print, from one function, so that the two cannot drift apart.
//
// It is the protobuf message's fields under their proto names, as
// protojson writes them, with four changes that make it read as JSON a
// person or a script expects:
//
//   - an enum is its short name: "SUCCEEDED", not "JOB_STATE_SUCCEEDED";
//   - a 64-bit integer is a number, not a string (every one Ward sends is
//     a count, a size or a Unix time in ms, well inside 2^53);
//   - a bytes field (a payload, a result) is the JSON it holds when it
//     holds JSON, else its text under <name>_text when it is UTF-8, else
//     base64 under <name>_base64;
//   - a field at its zero value is left out, as protojson leaves it out.
//
// Maps keep their keys; repeated fields are arrays; nested messages are
// objects. Plain turns a view into plain values, for YAML.
package apijson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Of returns m's view: a map ready for encoding/json or yaml.v3. A nil
// message is an empty object.
func Of(m proto.Message) map[string]any {
	out := map[string]any{}
	if m == nil {
		return out
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return out
	}
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			a := make([]any, l.Len())
			for i := range a {
				a[i] = scalar(fd, l.Get(i))
			}
			out[name] = a
		case fd.IsMap():
			mm := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				mm[k.String()] = scalar(fd.MapValue(), mv)
				return true
			})
			out[name] = mm
		case fd.Kind() == protoreflect.BytesKind:
			k, b := Bytes(name, v.Bytes())
			out[k] = b
		default:
			out[name] = scalar(fd, v)
		}
		return true
	})
	return out
}

// List returns the views of ms, in order.
func List[M proto.Message](ms []M) []map[string]any {
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		out[i] = Of(m)
	}
	return out
}

// Bytes returns the key and value a bytes field named name takes in a
// view: name and the JSON it holds, name_text and its text, or
// name_base64 and its base64.
func Bytes(name string, b []byte) (string, any) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && json.Valid(t) {
		return name, json.RawMessage(t)
	}
	if utf8.Valid(b) {
		return name + "_text", string(b)
	}
	return name + "_base64", base64.StdEncoding.EncodeToString(b)
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return Of(v.Message().Interface())
	case protoreflect.EnumKind:
		return EnumName(fd.Enum(), v.Enum())
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		_, b := Bytes("", v.Bytes())
		return b
	}
	return v.Interface()
}

// Plain returns v (a view, or anything encoding/json writes) as plain Go
// values: maps, slices, strings, bools, int64 for whole numbers and
// float64 for others. yaml.v3 writes those as a person expects (a
// json.RawMessage it would write as a list of bytes).
func Plain(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return numbers(out), nil
}

func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

// EnumName is an enum value's short name: its name without the prefix
// the enum's values share (JOB_STATE_SUCCEEDED → SUCCEEDED). A number the
// enum does not name is written as the number.
func EnumName(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) any {
	vd := ed.Values().ByNumber(n)
	if vd == nil {
		return int64(n)
	}
	return strings.TrimPrefix(string(vd.Name()), enumPrefix(ed))
}

// EnumValue is the way back: the value of ed whose short or full name is
// s (case-insensitive). It reports false when none is.
func EnumValue(ed protoreflect.EnumDescriptor, s string) (protoreflect.EnumNumber, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return 0, false
	}
	if vd := ed.Values().ByName(protoreflect.Name(s)); vd != nil {
		return vd.Number(), true
	}
	if vd := ed.Values().ByName(protoreflect.Name(enumPrefix(ed) + s)); vd != nil {
		return vd.Number(), true
	}
	return 0, false
}

// enumPrefix is the prefix every value of ed shares, up to an underscore:
// JOB_STATE_ for JobState. Empty when they share none.
func enumPrefix(ed protoreflect.EnumDescriptor) string {
	vals := ed.Values()
	if vals.Len() < 2 {
		return ""
	}
	p := string(vals.Get(0).Name())
	for i := 1; i < vals.Len() && p != ""; i++ {
		n := string(vals.Get(i).Name())
		for !strings.HasPrefix(n, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndexByte(p, '_'); i >= 0 {
		return p[:i+1]
	}
	return ""
}
