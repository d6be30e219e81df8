# Ward — see README.md. `make run` starts everything on one machine;
# `make test` runs the whole test suite.

GO        ?= go
MODULES   := $(notdir $(patsubst %/,%,$(dir $(wildcard modules/*/main.go))))
WASM_DIR  := modules/build
WASM      := $(addprefix $(WASM_DIR)/,$(addsuffix .wasm,$(MODULES)))

.PHONY: all build modules run test proto bench clean

all: build modules

build:
	$(GO) build -o bin/ward ./cmd/ward

modules: $(WASM)

$(WASM_DIR)/%.wasm: $(shell find modules -name '*.go' 2>/dev/null) go.mod
	@mkdir -p $(WASM_DIR)
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -o $@ ./modules/$*

run: build modules
	./bin/ward dev --modules $(WASM_DIR)

test: modules
	$(GO) test -race -count=1 -timeout 20m ./...

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

clean:
	rm -rf bin $(WASM_DIR)
