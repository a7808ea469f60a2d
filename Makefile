# Cairn build, test and run targets. See README.md.
GO        ?= go
BIN       := bin/cairn
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The embedded kubectl reports the Kubernetes version whose API we serve.
KUBE_VERSION_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v1.37.2 \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
LDFLAGS   := -X main.version=$(VERSION) $(KUBE_VERSION_LDFLAGS)
# Packages whose tests run in `make test`. Whole-cluster harnesses in test/
# build bin/cairn first.
TEST_PKGS ?= ./...
TEST_FLAGS ?= -timeout 25m

.PHONY: all build test test-race run bench vet clean

all: build

# cairn-shim, cairn-helper and cairn-demo are static: they start for every
# container (shim), exec and shared PID namespace (helper) and as the demo
# image's program, without a dynamic loader's start-up. The shim is C
# (node/runtime/embedded/shim; shimtest builds it alike for tests), built
# with musl-gcc when there is one (apt-get install musl-tools): its static
# binaries start in half the time of glibc's. SHIM_CC picks another.
CC        ?= cc
SHIM_CC   ?= $(shell command -v musl-gcc 2>/dev/null || echo $(CC))
SHIM_SRC  := $(wildcard node/runtime/embedded/shim/*.c)
SHIM_CFLAGS := -O2 -static -Wall -Wextra -Werror

build: $(dir $(BIN))cairn-shim
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/cairn
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))cairn-helper ./cmd/cairn-helper
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))cairn-demo ./cmd/cairn-demo

$(dir $(BIN))cairn-shim: $(SHIM_SRC) $(wildcard node/runtime/embedded/shim/*.h)
	@mkdir -p $(dir $@)
	@command -v $(SHIM_CC) >/dev/null || { echo "make build needs a C compiler for the container shim: apt-get install gcc libc6-dev musl-tools" >&2; exit 1; }
	$(SHIM_CC) $(SHIM_CFLAGS) -o $@ $(SHIM_SRC)

vet:
	$(GO) vet ./...

test: build
	CAIRN_BIN=$(CURDIR)/$(BIN) $(GO) test $(TEST_FLAGS) $(TEST_PKGS)
	$(MAKE) test-race

# The store's packages, and the API server's shared watch objects, again
# under the race detector. checkptr is off
# because raft-boltdb's bolt predates it; the race checks still run.
test-race:
	$(GO) test -race -gcflags=all=-d=checkptr=0 -timeout 10m ./raftstore/...
	$(GO) test -race -gcflags=all=-d=checkptr=0 -timeout 5m -run 'WatchersEncodeShared|Fence' ./apiserver/ ./apiserver/storage/

run: build
	./hack/run-local.sh $(RUN_FLAGS)

bench: build
	$(GO) run ./test/benchcompare $(BENCH_FLAGS)
	$(GO) run ./test/apibench -cairn $(BIN) $(APIBENCH_FLAGS)
	$(GO) run ./test/schedbench -workload basic $(SCHEDBENCH_FLAGS)
	$(GO) run ./test/schedbench -workload basic -raft-log-store wal $(SCHEDBENCH_FLAGS)
	$(GO) run ./test/schedbench -workload spread-affinity $(SCHEDBENCH_FLAGS)
	@if [ "$$(id -u)" = 0 ]; then $(GO) run ./test/proxybench $(PROXYBENCH_FLAGS); \
	else echo "proxybench skipped: it needs root (eBPF, network namespaces, iptables)"; fi
	@if [ "$$(id -u)" = 0 ]; then $(GO) run ./test/podbench $(PODBENCH_FLAGS) && \
	$(GO) run ./test/podbench -rate 20 $(PODBENCH_FLAGS) && \
	$(GO) run ./test/podbench -rate 5 $(PODBENCH_FLAGS) && \
	CAIRN_BIN=$(CURDIR)/$(BIN) $(GO) test ./node/agent -run '^$$' -bench PodStartup -benchtime 1x; \
	else echo "pod startup benchmarks skipped: they need root (network namespaces, cgroups, containerd)"; fi

clean:
	rm -rf bin .run
