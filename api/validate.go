package api

// Requests are decoded and validated once, here, before their handler runs: validateRequests
// checks a request's parameters and body against its operation in the spec, the body parsed by
// one pass of decodeJSONBody; the value it decoded stays on the request, and the generated strict
// server binds it into the operation's type without parsing the bytes again.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
	"github.com/gowebpki/jcs"
)

// specRoutes are the spec's operations by method and path template ("GET /v1/lobbies/{lobbyId}"),
// which is also how chi names the route it matched: the generated router registers the spec's
// paths as they are written.
type specRoutes map[string]*routers.Route

func newSpecRoutes(spec *openapi3.T) specRoutes {
	routes := specRoutes{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			// The validator checks the operation without its security requirements: s.authenticate
			// and adminOperations check the caller, and the validator's check of them, with a
			// function that accepts everyone, only read and copied the body once more.
			unsecured := *op
			unsecured.Security = &openapi3.SecurityRequirements{}
			routes[method+" "+path] = &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: &unsecured}
		}
	}
	return routes
}

// validateRequests checks each request against its operation in the spec (parameters, body)
// before the handler runs, once the caller may call it at all (adminOperations); a request that fails gets a problem naming the offending field. It runs
// after chi routed the request, and takes the operation and the path parameters from chi's match:
// the validator of oapi-codegen's middleware matched every request again against regular
// expressions of the spec's paths (5% of rpsd's CPU under the mixed load).
func (s *Server) validateRequests(spec *openapi3.T) func(http.Handler) http.Handler {
	routes := newSpecRoutes(spec)
	options := &openapi3filter.Options{
		// The body is parsed once, by decodeJSONBody: the validator checks the value it decoded
		// and leaves it on the request, and the strict server binds that value into the
		// operation's type (runtime.BindJSONBody) instead of decoding the bytes again.
		KeepValidatedValue: true,
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := chi.RouteContext(r.Context())
			route := routes[r.Method+" "+rc.RoutePattern()]
			if route == nil {
				// Every route of the validated group is an operation of the spec (a test checks it).
				s.writeProblem(w, r, newProblem(http.StatusNotFound, ProblemCodeNotFound, "no such route"))
				return
			}
			if adminOperations[route.Operation.OperationID] {
				if _, err := requireAdmin(r.Context()); err != nil {
					s.writeProblem(w, r, err)
					return
				}
				if r.ContentLength != 0 && r.Body != nil {
					// An admin's signature covers its body as sent (see adminAuth): kept, in
					// RFC 8785 form, before the validator fills in the defaults.
					sent, err := io.ReadAll(r.Body)
					// The validator reads the body again, and answers a read that failed (one
					// too large) as it would have.
					r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(sent), failedRead{err}))
					if canonical, err := jcs.Transform(sent); err == nil {
						r = r.WithContext(context.WithValue(r.Context(), sentBodyKey{}, canonical))
					}
				}
			}
			params := make(map[string]string, len(rc.URLParams.Keys))
			for i, key := range rc.URLParams.Keys {
				params[key] = rc.URLParams.Values[i]
			}
			if p := parameterText(r, route, params); p != nil {
				s.writeProblem(w, r, p)
				return
			}
			err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
				Request: r, PathParams: params, Route: route, Options: options,
			})
			if err != nil {
				s.validationFailed(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// parameterText refuses a parameter (path, query or header) that is not valid UTF-8 or holds
// U+0000: PostgreSQL stores neither (SQLSTATE 22021), and no parameter has a use for them. The
// spec's patterns cannot say it for every parameter; this rule does, for the ones added later too.
func parameterText(r *http.Request, route *routers.Route, path map[string]string) *problemError {
	var query url.Values
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, ref := range params {
			p := ref.Value
			var values []string
			switch p.In {
			case openapi3.ParameterInPath:
				values = []string{path[p.Name]}
			case openapi3.ParameterInQuery:
				if query == nil {
					query = r.URL.Query()
				}
				values = query[p.Name]
			case openapi3.ParameterInHeader:
				values = r.Header.Values(p.Name)
			}
			for _, v := range values {
				if !utf8.ValidString(v) {
					return validationProblem(p.Name, "must be valid UTF-8")
				}
				if strings.IndexByte(v, 0) >= 0 {
					return validationProblem(p.Name, "must not contain U+0000")
				}
			}
		}
	}
	return nil
}

// Request bodies are decoded here, once, by the request validator (the strict server binds the
// value it decoded into its types). A body is exactly one JSON value, whitespace after
// it allowed, and an I-JSON message (RFC 7493): its strings are UTF-8 with no lone surrogate
// escape, and no object names a member twice. Go's decoder would take the first value of
// `{"amount":100}{"amount":900000}` and ignore the rest, turn `"\ud800"` or a stray byte into
// U+FFFD, and keep the last of two members: every one of those is a request the client did not
// mean, refused with 400 naming the field. Strings also hold no U+0000, which PostgreSQL can store
// neither in text nor in jsonb (the audit log keeps admins' request bodies).
func init() {
	openapi3filter.RegisterBodyDecoder("application/json", decodeJSONBody)
}

// maxBodyDepth bounds how deeply a body's arrays and objects nest. The contract's bodies nest a
// few levels (an object in an object in the body); the bound keeps the work and memory of a
// hostile body (60 KB of '[' then ']') small and linear, and refuses it with a 400 naming where it
// went too deep.
const maxBodyDepth = 32

// bodyError is a body refused by decodeJSONBody; field is the member's path ("config.ruleset"),
// or "body" for the body as a whole.
type bodyError struct {
	field, detail string
}

func (e *bodyError) Error() string { return e.field + ": " + e.detail }

func decodeJSONBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return parseJSONBody(data)
}

// parseJSONBody decodes one JSON value as encoding/json would with UseNumber (objects as
// map[string]any, numbers as json.Number), refusing what the comment above lists.
func parseJSONBody(data []byte) (any, error) {
	p := &bodyParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &bodyError{field: "body", detail: fmt.Sprintf("the body must be exactly one JSON value, but more follows it at byte %d", p.dec.InputOffset())}
	}
	return v, nil
}

type bodyParser struct {
	data []byte
	dec  *json.Decoder
	// path is where the parser is: one step per open array or object, updated in place, and
	// spelled out as a field name only when an error names it.
	path []pathStep
}

// pathStep is one step of a body's path: a member's name, or an element's index in an array.
type pathStep struct {
	name  string
	index int
	inArr bool
}

// refuse is the error for the value at the parser's path.
func (p *bodyParser) refuse(detail string) error {
	return &bodyError{field: p.fieldName(), detail: detail}
}

// fieldName spells the parser's path as problems name fields ("config.ruleset", "items.0").
func (p *bodyParser) fieldName() string {
	if len(p.path) == 0 {
		return "body"
	}
	steps := make([]string, len(p.path))
	for i, s := range p.path {
		if s.inArr {
			steps[i] = strconv.Itoa(s.index)
		} else {
			steps[i] = s.name
		}
	}
	return strings.Join(steps, ".")
}

// value reads the value at the parser's path.
func (p *bodyParser) value() (any, error) {
	start := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntaxError(err)
	}
	switch t := tok.(type) {
	case string:
		return t, p.checkString(t, start)
	case json.Delim:
		if t != '[' && t != '{' {
			return nil, p.refuse(fmt.Sprintf("unexpected %q", t))
		}
		if len(p.path) >= maxBodyDepth {
			return nil, p.refuse(fmt.Sprintf("nests arrays and objects more than %d deep", maxBodyDepth))
		}
		if t == '[' {
			return p.array()
		}
		return p.object()
	case json.Number:
		// The validator reads every number as a float64: one past its range (a 60,000-digit bet,
		// 1e400) is refused here with words a client can act on, not the library's conversion error.
		if _, err := t.Float64(); err != nil {
			return nil, p.refuse("is a number too large to be represented")
		}
		return t, nil
	default:
		return t, nil // bool or nil
	}
}

func (p *bodyParser) object() (any, error) {
	obj := map[string]any{}
	p.path = append(p.path, pathStep{})
	step := len(p.path) - 1 // an index: a deeper value may move p.path
	for p.dec.More() {
		start := p.dec.InputOffset()
		tok, err := p.dec.Token()
		if err != nil {
			return nil, p.syntaxError(err)
		}
		name, _ := tok.(string) // More and Token guarantee a member name here
		p.path[step].name = name
		if err := p.checkString(name, start); err != nil {
			return nil, err
		}
		if _, dup := obj[name]; dup {
			return nil, p.refuse("appears twice in its object")
		}
		if obj[name], err = p.value(); err != nil {
			return nil, err
		}
	}
	if _, err := p.dec.Token(); err != nil { // the closing brace
		return nil, p.syntaxError(err)
	}
	p.path = p.path[:len(p.path)-1]
	return obj, nil
}

func (p *bodyParser) array() (any, error) {
	arr := []any{}
	p.path = append(p.path, pathStep{inArr: true})
	step := len(p.path) - 1 // an index: a deeper value may move p.path
	for ; p.dec.More(); p.path[step].index++ {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := p.dec.Token(); err != nil { // the closing bracket
		return nil, p.syntaxError(err)
	}
	p.path = p.path[:len(p.path)-1]
	return arr, nil
}

// checkString checks a string the decoder read from data[start:] (with the separators before it)
// up to its current offset: s is what it decoded.
func (p *bodyParser) checkString(s string, start int64) error {
	raw := p.data[start:p.dec.InputOffset()]
	switch {
	case !utf8.Valid(raw):
		return p.refuse("must be valid UTF-8")
	case hasLoneSurrogate(raw):
		return p.refuse("must not contain a lone surrogate escape such as \\ud800: it names no character")
	case strings.IndexByte(s, 0) >= 0:
		return p.refuse("must not contain U+0000")
	}
	return nil
}

func (p *bodyParser) syntaxError(err error) error {
	if errors.Is(err, io.EOF) {
		return &bodyError{field: "body", detail: "the body ends before its JSON value does"}
	}
	return &bodyError{field: "body", detail: "malformed JSON: " + err.Error()}
}

// hasLoneSurrogate reports whether JSON text the decoder accepted holds a \u escape of a UTF-16
// surrogate that is not the first half of a pair followed by the second.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character: a backslash escaped is not the start of an escape
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return true
			}
			if lo := hex4(raw[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape the decoder already checked.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 16)
	return rune(n)
}

// failedRead ends a body re-read with the error its first read met (nil: EOF).
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) {
	if f.err == nil {
		return 0, io.EOF
	}
	return 0, f.err
}
