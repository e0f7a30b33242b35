# Multi-stage build of rpsd. Not exercised by the tests (no Docker engine where they run).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/rpsd ./cmd/rpsd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rpsd /rpsd
EXPOSE 8080
ENTRYPOINT ["/rpsd"]
