// Package rps holds what belongs to the repository as a whole: the public contract, openapi.yaml,
// embedded so that the server can serve the very file its code is generated from.
package rps

import _ "embed"

// OpenAPI is the text of openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
