package api

import "net/http"

// Observed wraps h as the server wraps every route (request id, logging, panic recovery), for
// the tests of package api_test.
func Observed(s *Server, h http.Handler) http.Handler { return s.withRequestID(s.observe(h)) }

// OpenWaits is how many long polls and event streams s holds open for client.
func OpenWaits(s *Server, client string) int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return s.streams.open[client]
}

// ProblemCodes are the problem codes the server sends.
func ProblemCodes() []ProblemCode {
	codes := make([]ProblemCode, 0, len(problemTitles))
	for c := range problemTitles {
		codes = append(codes, c)
	}
	return codes
}

// ParseJSONBody is the request validator's body decoder.
func ParseJSONBody(data []byte) (any, error) { return parseJSONBody(data) }

// AdminOperations are the operation ids only an admin may call.
func AdminOperations() map[string]bool { return adminOperations }
