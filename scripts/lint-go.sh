#!/usr/bin/env bash
# Lints the Go code with the pinned golangci-lint (.golangci.yaml says which linters and why).
# Installs that version into .tools/bin with `go install` when it is missing (a cold build takes
# a few minutes once; later runs reuse the binary and golangci-lint's cache).
set -euo pipefail
cd "$(dirname "$0")/.."

version=v2.15.0
bin=.tools/bin/golangci-lint
if [ ! -x "$bin" ] || ! "$bin" version 2>/dev/null | grep -q "version ${version#v} "; then
  GOBIN="$PWD/.tools/bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version"
fi
"$bin" run ./...
