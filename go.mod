module github.com/sidecar-dev/sidecar

go 1.26.8

require (
	github.com/gorilla/mux v1.8.1
	github.com/hashicorp/go-retryablehttp v0.7.8
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
