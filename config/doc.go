// Package config owns the sidecar's YAML method map: its schema, defaults,
// strict decoding (unknown keys rejected, with line numbers) and validation
// that reports every problem at once.
//
// A method map, every key shown with its default:
//
//	listen: ":8080"
//	upstream:
//	  url: http://127.0.0.1:8000      # required; or unix:///run/agent.sock
//	  ready: {path: "", interval: 1s, timeout: 1s}
//	  idle_timeout: 4s                # pooled connections; keep below the agent's keep-alive
//	timeouts: {connect: 5s, first_byte: 5m, idle: 5m, total: 14m50s}   # 0 = no limit
//	limits: {request_bytes: 10MiB, record_bytes: 8MiB, reply_bytes: 32MiB}
//	keep_alive_probe:                 # off by default
//	  path: /busy                     # GET/HEAD on the platform's listener: 200 while a call is in flight, else 503
//	  max_seconds: 3600               # the deploy request's maxSeconds, 1..3600
//	methods:                          # required, at least one
//	  query:                          # a class_method name, or "*" for all others
//	    mode: ""                      # "" | async | stream | async_stream
//	    call: POST /query             # VERB /path/{input_field}/{class_method}
//	    body: input                   # input | envelope | none | a template
//	    reply: auto                   # auto | json | sse | ndjson | text
//	    output: wrap                  # wrap | as_is (unary methods only)
//	    timeouts: {}                  # per-key overrides of the top-level timeouts
//	    description: ""               # the deploy request's classMethods, MCP, the playground
//	    parameters: {}                # an OpenAPI schema (type: object, properties…)
//
// A body template is a YAML mapping or list, or a string holding JSON; a
// string leaf "{input}" or "{input.a.b}" is replaced by that input value
// when a call is made. A GET or DELETE method sends no body unless it says
// so. A "*" method without a mode serves unlisted names on both routes.
//
// Anchors, aliases and merge keys ("<<: *defaults") work as in YAML 1.1, so
// methods can share settings.
package config
