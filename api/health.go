package api

// Health, readiness and the spec: the service describing itself.

import (
	"bytes"
	"context"

	"github.com/commitreveal/rps"
)

func (h *handlers) GetHealth(ctx context.Context, _ GetHealthRequestObject) (GetHealthResponseObject, error) {
	return GetHealth200JSONResponse{Status: HealthStatusOk}, nil
}

func (h *handlers) GetReadiness(ctx context.Context, _ GetReadinessRequestObject) (GetReadinessResponseObject, error) {
	if err := h.s.store.Ready(ctx); err != nil {
		detail := err.Error()
		return GetReadiness503JSONResponse{Status: HealthStatusUnavailable, Detail: &detail}, nil
	}
	return GetReadiness200JSONResponse{Status: HealthStatusOk}, nil
}

func (h *handlers) GetOpenApiSpec(ctx context.Context, _ GetOpenApiSpecRequestObject) (GetOpenApiSpecResponseObject, error) {
	return GetOpenApiSpec200ApplicationyamlResponse{Body: bytes.NewReader(rps.OpenAPI), ContentLength: int64(len(rps.OpenAPI))}, nil
}
