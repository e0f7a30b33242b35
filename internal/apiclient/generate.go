// Package apiclient is the typed HTTP client of the public API, generated from openapi.yaml,
// plus small helpers (problem decoding, idempotent retries) shared by the bots and the benchmark.
package apiclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../openapi.yaml
