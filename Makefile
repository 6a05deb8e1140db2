# sandtop — see README.md. Everything the tests need is fetched here (Go
# modules through the module proxy); nothing is expected to be pre-installed
# beyond Go itself.
GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
BIN         := bin
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
PKGS        := ./...
BENCHTIME   ?= 1x

.PHONY: all build test lint vet fmt-check staticcheck tidy-check bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sandtop ./cmd/sandtop
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/sandsim ./cmd/sandsim

# The tests spawn real process trees, cgroups and signals; as root they
# also cover cgroup freeze/kill and PID reuse (they skip those otherwise).
test: vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

lint: fmt-check vet staticcheck

tidy-check:
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go mod tidy changed go.mod/go.sum"; exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

clean:
	rm -rf $(BIN)
