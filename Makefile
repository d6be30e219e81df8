# Ward — see README.md. `make run` starts everything on one machine;
# `make test` runs the whole test suite.

GO        ?= go
MODULES   := $(notdir $(patsubst %/,%,$(dir $(wildcard modules/*/main.go))))
WASM_DIR  := modules/build
WASM      := $(addprefix $(WASM_DIR)/,$(addsuffix .wasm,$(MODULES)))
MANIFESTS := $(addprefix $(WASM_DIR)/,$(addsuffix .yaml,$(MODULES)))
MODULE_GO := $(shell find modules -name '*.go' -not -path '*/testdata/*' -not -name '*_test.go' 2>/dev/null)

.PHONY: all build modules run test proto bench bench-auth bench-peers bench-scale bench-soak bench-review lattice-test clean

all: build modules

build:
	$(GO) build -o bin/ward ./cmd/ward

modules: $(WASM) $(MANIFESTS)

# Every module has a manifest (modules/<name>/manifest.yaml), installed
# beside its .wasm. One whose manifest says abi: ward-reactor-v1 is built as
# a WASI reactor (-buildmode=c-shared); any other as a WASI command.
$(WASM_DIR)/%.wasm: $(MODULE_GO) go.mod modules/%/manifest.yaml
	@mkdir -p $(WASM_DIR)
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false $(if $(shell grep -qs '^abi: *ward-reactor' modules/$*/manifest.yaml && echo reactor),-buildmode=c-shared) -o $@ ./modules/$*

$(WASM_DIR)/%.yaml: modules/%/manifest.yaml
	@mkdir -p $(WASM_DIR)
	cp $< $@

run: build modules
	./bin/ward dev --modules $(WASM_DIR)

# deps installs what the tests run besides Go and is missing (redis-server,
# chromium, docker-compose, promtool) with apt-get, or says what and how
# and fails (scripts/deps.sh; silent when all are there). .ci/run runs it too.
.PHONY: deps
deps:
	./scripts/deps.sh

# The modules are compiled into the tests' shared wazero cache first,
# without -race: seconds, where the race-instrumented suite would take
# minutes of CPU on a fresh machine. Twice: as test binaries key the cache
# (internal/testing/wasmtest/warm) and as the ward binary the CLI tests
# run keys it (warmprog, a program: wazero's version is part of the key).
#
# go test runs every fuzz target's seeds and saved findings; then the
# targets of what tenants send most directly (workflow definitions and
# expressions, module manifests and sizes, API keys) fuzz new inputs for
# FUZZTIME_TEST each. make fuzz runs every target longer: the short run
# keeps make test within its time, its builds being most of the cost.
FUZZTIME_TEST ?= 2s
FUZZ_TEST     ?= ^Fuzz(Workflow|Expression|Meter|ParseManifest|ParseByteSize|Bearer|Spec|KeyRecord)$$
test: deps modules
	$(GO) test -count=1 ./internal/testing/wasmtest/warm
	$(GO) run ./internal/testing/wasmtest/warmprog $(WASM_DIR)
	$(GO) test -race -count=1 -timeout 20m ./...
	FUZZTIME=$(FUZZTIME_TEST) FUZZ='$(FUZZ_TEST)' ./scripts/fuzz.sh

# proto regenerates api/ with protoc and the generators pinned in go.mod's
# tool block (protoc-gen-go, protoc-gen-go-grpc).
proto:
	$(GO) build -o bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	$(GO) build -o bin/protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc
	protoc -I api \
		--plugin=protoc-gen-go=bin/protoc-gen-go --go_out=api --go_opt=paths=source_relative \
		--plugin=protoc-gen-go-grpc=bin/protoc-gen-go-grpc --go-grpc_out=api --go-grpc_opt=paths=source_relative \
		$$(cd api && find . -name '*.proto' | sed 's|^\./||')

bench: build
	./bin/ward bench -n 5000 -c 32

# bench-auth compares ward dev with auth on and --insecure, alternating
# rounds: jobs/s and CPU per job of each (bench/auth-vs-insecure.sh).
bench-auth: build modules
	./bench/auth-vs-insecure.sh

# bench-peers runs `ward bench` on `ward dev --redis` and the same closed
# loop on asynq (bench/asynq, its own module) against one fresh redis-server:
# jobs/s, p50/p99 and CPU per job of each process, and the ratios
# (bench/peers.sh; N and C override 10000 and 64).
bench-peers: build modules
	./bench/peers.sh

# bench-scale runs `ward bench` on one redis-server through ward dev, then
# with a second `ward host`, then a second `ward scheduler` too: jobs/s,
# p50/p99 and CPU per job at each concurrency (bench/scale.sh; N, CS and
# CS_MULTI override the sizes).
bench-scale: build modules
	./bench/scale.sh

# bench-soak puts TOTAL jobs (100000) through ward dev --redis --retention
# 30s in batches and prints ward dev's RSS and Redis's memory and keys after
# each, then after the retention: do they stay flat? (bench/soak.sh)
bench-soak: build modules
	./bench/soak.sh

# bench-review reviews a generated repository of 10,000 files (FILES) with
# the repo.code_review workflow through ward dev, three times (RUNS): the
# wall time of each run, each step's span and the findings
# (bench/review.sh; docs/BENCHMARKS.md has the figures).
bench-review: build modules
	./bench/review.sh

# lattice-test runs Ward as separate processes (a 3-server NATS cluster,
# redis-server with AOF, 2 schedulers, 2 kernels, 4 hosts, the gateway;
# credentials on) under a steady load, injects faults one at a time and
# prints, for each, the jobs it left unended and the seconds until
# throughput is back (internal/testing/lattice; build tag lattice).
# SOAK=30m keeps the load on that long after the faults and reports each
# process's memory and goroutines at its start and end. REDIS=cluster puts
# the store on a 3-master Redis Cluster (redis+cluster://, the Sharded
# store) and restarts one master as the Redis fault; REDIS=log puts it on
# the logged store (log=lattice: one scheduler owns it, the other follows
# as a standby); REDIS=owned on the logged store of 4 shards with owners
# (log=lattice&shards=4: each scheduler owns two, and sends the other what
# is its); VIEW=1 with either keeps each log's view (view=1) and checks at
# the end that it holds what a replay of the log does. After every fault a
# history checker (internal/testing/history) checks the submitters', the
# hosts' and the store's records. HOG=1 runs a busy loop on every core
# beside it for the whole run.
lattice-test: modules
	$(GO) test -tags lattice -count=1 -timeout $(if $(SOAK),3h,60m) -v -run TestLattice ./internal/testing/lattice/ $(if $(or $(SOAK),$(filter cluster log owned,$(REDIS))),-args) $(if $(SOAK),-soak $(SOAK)) $(if $(filter cluster,$(REDIS)),-redis-cluster) $(if $(filter log,$(REDIS)),-redis-log) $(if $(filter owned,$(REDIS)),-redis-log -redis-shards 4) $(if $(and $(VIEW),$(filter log owned,$(REDIS))),-redis-view)

# deploy-check lints and renders the Helm chart (deploy/helm/ward) with helm
# and validates it with kubeconform -strict, both built from deploy/tools (a
# module of its own) with schemas made from the Kubernetes API's OpenAPI
# document, all through the Go module proxy (deploy/helm_test.go, build tag
# deploy); the compose file and systemd units are checked by make test.
.PHONY: deploy-check
deploy-check:
	$(GO) test -tags deploy -count=1 -timeout 30m ./deploy/...

# lint runs golangci-lint with .golangci.yml (errcheck, staticcheck, govet,
# ineffassign, unused; the gate is zero findings) over every package with
# its tests and the lattice and deploy build tags, then over modules/ as
# built for wasip1 (modules/sdk/wasip1.go), then over bench/ (a module of
# its own). golangci-lint is pinned in tools/lint/go.mod, a module of its
# own (not a dependency of Ward's), and built into bin/ through the Go
# module proxy when that go.mod changes.
GOLANGCI_LINT := bin/golangci-lint
.PHONY: lint
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...
	GOOS=wasip1 GOARCH=wasm $(GOLANGCI_LINT) run --tests=false ./modules/...
	cd bench && ../$(GOLANGCI_LINT) run --config ../.golangci.yml ./...

$(GOLANGCI_LINT): tools/lint/go.mod tools/lint/go.sum
	$(GO) -C tools/lint build -o $(CURDIR)/$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# fuzz runs every Go fuzz target in the repo, one after another, each for
# FUZZTIME (60s): scripts/fuzz.sh finds them in the test files
# (scripts/fuzzlist), so a new target is never left out. FUZZ=regexp picks
# targets. A finding fails it, saved under the package's testdata/fuzz/:
# keep it (a seed from then on) and fix the code. FUZZTIME=2s is the short
# run for make test.
FUZZTIME ?= 60s
.PHONY: fuzz
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

clean:
	rm -rf bin $(WASM_DIR)
