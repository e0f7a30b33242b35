# make test is the one test command; .ci/run calls it and nothing else.
GO ?= go

.PHONY: test test-go vet run bench

test: vet test-go

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -count=1 ./...
