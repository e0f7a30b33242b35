package api

import "net/http"

// Observed wraps h as the server wraps every route (request id, logging, panic recovery), for
// the tests of package api_test.
func Observed(s *Server, h http.Handler) http.Handler { return s.withRequestID(s.observe(h)) }
