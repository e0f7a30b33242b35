package api

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
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
