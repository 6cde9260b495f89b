# webhook-inbox. The two commands that matter on a fresh machine:
#   make dev    run the whole pipeline locally (Ctrl-C stops it)
#   make test   run every test, starting and stopping what they need
# Both install what they need (a pinned moto and cfn-lint in .venv).

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
STATICCHECK_VERSION := v0.8.2
TEST_FLAGS ?= -race -count=1 -timeout 15m

LDFLAGS := -s -w
LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='$(LDFLAGS)'

.PHONY: dev test lint fuzz bench venv build clean \
	build-ReceiverFunction build-ProcessorFunction build-ReconcilerFunction

## venv: the project's virtualenv with the pinned emulator and validators
venv: $(STAMP)
$(STAMP): dev/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r dev/requirements.txt
	touch $@

## dev: the whole pipeline on this machine, in the foreground
dev: venv
	$(GO) build -o bin/devstack ./cmd/devstack
	exec bin/devstack $(DEV_FLAGS)

## test: unit, integration and end-to-end tests against the emulator
test: venv
	$(GO) run ./internal/withemulator -- $(GO) test $(TEST_FLAGS) ./...

## fuzz: a short run of each fuzz target
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEnvelope$$' -fuzztime $(FUZZTIME) ./shared/event

## lint: formatting, vet, staticcheck, and a tidy go.mod
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@cp go.mod /tmp/go.mod.lint.$$$$ && cp go.sum /tmp/go.sum.lint.$$$$ && $(GO) mod tidy && \
	  if ! diff -q go.mod /tmp/go.mod.lint.$$$$ >/dev/null || ! diff -q go.sum /tmp/go.sum.lint.$$$$ >/dev/null; then \
	    echo "go mod tidy changed go.mod/go.sum: commit the tidy result"; git --no-pager diff go.mod go.sum; exit 1; fi; \
	  rm -f /tmp/go.mod.lint.$$$$ /tmp/go.sum.lint.$$$$

## bench: the benchmark table
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./shared/...

## build: the three Lambda binaries for linux/arm64, as sam build makes them
build: build-ReceiverFunction build-ProcessorFunction build-ReconcilerFunction
	@ls -l .aws-sam/build/*/bootstrap 2>/dev/null || true

# sam build (BuildMethod: makefile) calls these with ARTIFACTS_DIR set.
ARTIFACTS_DIR ?= bin/lambda/$(subst build-,,$@)
build-ReceiverFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/receiver
build-ProcessorFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/processor
build-ReconcilerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/reconciler

clean:
	rm -rf bin .aws-sam
