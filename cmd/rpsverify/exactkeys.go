package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// exactKeys checks that data, the JSON a value of type t is decoded from, names each member
// exactly as a field of t does, once, and at every depth. encoding/json matches a member to a
// field whatever its case, folding "ſ" to "s" and the Kelvin sign to "k": data holding
// {"reason":"maintenance","reaſon":"banned"} decodes here as "banned" while every reader that
// goes by exact keys (the console, the app, anyone's JSON.parse) shows "maintenance". The
// operator could thus show people one thing and have this verifier check another. A member no
// field names is one the contract does not have either: event data is closed
// (additionalProperties: false). Members a field leaves open (a map, json.RawMessage, any) are
// not looked into.
func exactKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return exactValue(dec, t, "")
}

// exactValue reads the next value from dec and checks it against t; path names it in errors.
func exactValue(dec *json.Decoder, t reflect.Type, path string) error {
	nullable := t.Kind() == reflect.Pointer
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface || t.Kind() == reflect.Map || decodesItself(t):
		var skip json.RawMessage
		return dec.Decode(&skip)
	case t.Kind() == reflect.Struct:
		return exactObject(dec, t, path, nullable)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		tok, err := dec.Token()
		if err != nil || tok == nil {
			return err
		}
		if tok != json.Delim('[') {
			return fmt.Errorf("%s: an array, not %v", pathOr(path), tok)
		}
		for i := 0; dec.More(); i++ {
			if err := exactValue(dec, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	var skip json.RawMessage
	return dec.Decode(&skip)
}

// decodesItself reports whether t reads its own JSON (a UUID, a time): a value, not members.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// exactObject reads an object (or null, when nullable) and checks its members against t's fields.
func exactObject(dec *json.Decoder, t reflect.Type, path string, nullable bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		if nullable {
			return nil
		}
		return fmt.Errorf("%s: an object, not null", pathOr(path))
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: an object, not %v", pathOr(path), tok)
	}
	fields := jsonFields(t)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		member := strings.TrimPrefix(path+"."+key, ".")
		field, ok := fields[key]
		switch {
		case !ok:
			return fmt.Errorf("member %q, which the contract does not have (names are exact)", member)
		case seen[key]:
			return fmt.Errorf("member %q twice", member)
		}
		seen[key] = true
		if err := exactValue(dec, field, member); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func pathOr(path string) string {
	if path == "" {
		return "the data"
	}
	return path
}
