# webhook-inbox. The two commands that matter on a fresh machine:
#   make dev    run the whole pipeline locally (Ctrl-C stops it)
#   make demo   the same, sent a realistic day with failures of every kind
#   make test   run every test, starting and stopping what they need
# Both install what they need (moto, cfn-lint and the SAM CLI in .venv, from
# dev/requirements.lock: every package pinned, with its hashes).
#   make test-localstack   the end-to-end tests, the drills and the CLI tests
#                          with SQS, SSM and CloudFormation on LocalStack
#                          (no Docker) and DynamoDB on moto: docs/localstack.md

SHELL := /bin/bash
GO ?= go
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# checkov pins boto3 to a release the SAM CLI refuses: its own virtualenv.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
# LocalStack's open-source runtime, run without Docker: its own virtualenv,
# with a newer Python than the others need (tools/cmd/findpython finds one on
# PATH or through pyenv); dev/localstack.lock is resolved for it.
LOCALSTACK_VENV := .venv-localstack
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
LOCALSTACK_PYTHON := 3.13
# The lock's resolution date: newer releases of LocalStack's dependencies
# break it (cbor2 6.3.0, pyOpenSSL 26.4.0). pip >= 26 resolves as of a date.
LOCALSTACK_UPLOADED_PRIOR_TO := 2026-03-31T00:00:00Z
LOCK_PIP_VERSION := 26.3
# Every package and its dependencies come from a lock file with hashes, as
# wheels (no setup.py runs at install time); the locks are resolved for
# CPython 3.11 (make lock). --no-deps: the lock is the whole set (pip check
# proves it consistent afterwards), and pip's resolver would otherwise
# demand a second pin for a package a dependency names with extras
# (boto3 beside boto3[crt]).
LOCK_PYTHON := 3.11
PIP_INSTALL := --quiet --disable-pip-version-check --require-hashes --only-binary :all: --no-deps
PIP_TOOLS_VERSION := 7.6.2
LOCK_FLAGS ?=
STATICCHECK_VERSION := v0.8.2
TEST_FLAGS ?= -race -count=1 -timeout 15m

LDFLAGS := -s -w
# Lambda runs arm64 (template.yaml); the runtime-emulator tests build the same
# binaries for this machine with LAMBDA_ARCH=$(go env GOARCH).
LAMBDA_ARCH ?= arm64
LAMBDA_BUILD = GOOS=linux GOARCH=$(LAMBDA_ARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='$(LDFLAGS)'

# The template's functions (logical ids ending in Function), so targets that
# build them follow the template as it grows.
FUNCTIONS := $(shell awk '/^[A-Za-z]/ { in_res = ($$0 ~ /^Resources:/) } in_res && /^  [A-Za-z0-9]+Function:[[:space:]]*$$/ { sub(/:.*/, ""); print $$1 }' template.yaml)

SAM := SAM_CLI_TELEMETRY=0 $(VENV)/bin/sam
# The Lambda runtime interface emulator, pinned; installed into .bin/.
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := .bin/aws-lambda-rie
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK := .bin/stripe-mock

.PHONY: install dev demo test test-localstack test-browser lint fuzz bench bench-coldstart cost venv checkov-venv localstack-venv lock lock-localstack build validate rie stripe-mock clean drills loadtest failpoints \
	build-ReceiverFunction build-ProcessorFunction build-ReconcilerFunction build-BridgeFunction build-HelloFunction

## venv: the project's virtualenv with the pinned emulator and validators
## (--clear: a changed lock file gives exactly its packages, none left over)
venv: $(STAMP)
$(STAMP): dev/requirements.lock
	@$(PYTHON) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(0 if v == "$(LOCK_PYTHON)" else "$(PYTHON) is Python " + v + ": dev/*.lock are resolved for Python $(LOCK_PYTHON); run make with PYTHON=python$(LOCK_PYTHON)")'
	$(PYTHON) -m venv --clear $(VENV)
	$(VENV)/bin/pip install $(PIP_INSTALL) -r dev/requirements.lock
	$(VENV)/bin/pip check --disable-pip-version-check
	touch $@

## checkov-venv: the policy scanner make validate runs, in its own virtualenv
checkov-venv: $(CHECKOV_STAMP)
$(CHECKOV_STAMP): dev/checkov.lock
	@$(PYTHON) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(0 if v == "$(LOCK_PYTHON)" else "$(PYTHON) is Python " + v + ": dev/*.lock are resolved for Python $(LOCK_PYTHON); run make with PYTHON=python$(LOCK_PYTHON)")'
	$(PYTHON) -m venv --clear $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install $(PIP_INSTALL) -r dev/checkov.lock
	$(CHECKOV_VENV)/bin/pip check --disable-pip-version-check
	touch $@

## localstack-venv: LocalStack (localstack-core, dev/localstack.lock: every
## package pinned, with its hashes) in its own virtualenv, with Python >=
## $(LOCALSTACK_PYTHON) from PATH or pyenv. Every package is a wheel but the
## two EventBridge needs that are published only as source
## (LOCALSTACK_SDISTS): their hash-checked sdists are built without build
## isolation by the pinned setuptools wheel of dev/localstack-build.lock,
## installed first, so no build dependency comes from outside the locks.
LOCALSTACK_SDISTS := crontab,jsonpath-rw
localstack-venv: $(LOCALSTACK_STAMP)
$(LOCALSTACK_STAMP): dev/localstack.lock dev/localstack-build.lock
	@py=$$($(GO) run ./tools/cmd/findpython -min $(LOCALSTACK_PYTHON) -for "LocalStack (dev/localstack.lock)") && \
	  echo "$$py -m venv --clear $(LOCALSTACK_VENV)" && $$py -m venv --clear $(LOCALSTACK_VENV)
	$(LOCALSTACK_VENV)/bin/pip install $(PIP_INSTALL) -r dev/localstack-build.lock
	$(LOCALSTACK_VENV)/bin/pip install $(PIP_INSTALL) --no-binary $(LOCALSTACK_SDISTS) --no-build-isolation -r dev/localstack.lock
	$(LOCALSTACK_VENV)/bin/pip check --disable-pip-version-check
	touch $@

## lock: resolve dev/requirements.in and dev/checkov.in again into their
## .lock files (every dependency pinned, hashes of every file of each pin),
## with a pinned pip-tools. Pins already in a lock stay unless
## LOCK_FLAGS=--upgrade (or --upgrade-package NAME) says otherwise.
lock:
	$(PYTHON) -m venv --clear .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check pip-tools==$(PIP_TOOLS_VERSION)
	@set -e; for f in requirements checkov; do \
	  echo "== dev/$$f.lock"; \
	  .venv-lock/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	    --no-emit-index-url --no-emit-find-links $(LOCK_FLAGS) --output-file dev/$$f.lock dev/$$f.in; \
	done
	rm -rf .venv-lock

## lock-localstack: resolve dev/localstack.in again into dev/localstack.lock,
## as of LOCALSTACK_UPLOADED_PRIOR_TO, with Python $(LOCALSTACK_PYTHON), and
## dev/localstack-build.in (the build backend of the two packages built from
## source) into dev/localstack-build.lock, constrained to the same pins.
## airspeed-ext, published only as source, serves a service not run for us
## (--unsafe-package: listed, not pinned). dev/localstack.in says more.
lock-localstack:
	@py=$$($(GO) run ./tools/cmd/findpython -min $(LOCALSTACK_PYTHON) -for "make lock-localstack") && $$py -m venv --clear .venv-lock
	.venv-lock/bin/pip install --quiet --disable-pip-version-check pip==$(LOCK_PIP_VERSION) pip-tools==$(PIP_TOOLS_VERSION)
	.venv-lock/bin/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links \
	  --unsafe-package airspeed-ext \
	  --pip-args "--uploaded-prior-to $(LOCALSTACK_UPLOADED_PRIOR_TO)" $(LOCK_FLAGS) \
	  --output-file dev/localstack.lock dev/localstack.in
	.venv-lock/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --pip-args "--uploaded-prior-to $(LOCALSTACK_UPLOADED_PRIOR_TO)" $(LOCK_FLAGS) \
	  --output-file dev/localstack-build.lock dev/localstack-build.in
	rm -rf .venv-lock

## install: put inboxctl on the PATH (go install ./cmd/inboxctl, into GOBIN or
## GOPATH/bin), as the README and the runbook run it
install:
	$(GO) install ./cmd/inboxctl
	@bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; \
	case ":$$PATH:" in *":$$bin:"*) echo "inboxctl installed in $$bin";; \
	*) echo "inboxctl installed in $$bin, which is not on your PATH: add it (export PATH=\"$$bin:\$$PATH\")";; esac

## dev: the whole pipeline on this machine, in the foreground
dev: venv
	$(GO) build -o bin/devstack ./tools/cmd/devstack
	exec bin/devstack $(DEV_FLAGS)

## demo: make dev's stack with a Stripe stand-in and a downstream that
## fails on purpose, sent a realistic day (tools/demo): the console then
## shows every status (devstack -demo)
demo: venv
	$(GO) build -o bin/devstack ./tools/cmd/devstack
	exec bin/devstack -demo $(DEV_FLAGS)

## test: unit, integration and end-to-end tests against the emulator (and
## the real bootstrap binaries under the Lambda runtime emulator). Each test
## package starts its own emulator (tools/testing/testenv) unless
## AWS_ENDPOINT_URL names one: an emulator runs its DynamoDB requests one at
## a time, so two packages at once on one emulator wait for each other (four
## heavy packages: 261 s on one, 214 s on their own).
## TEST_PACKAGES is how many packages run at once: twice the CPUs, since
## most of a package's time is spent waiting (SQS visibility timeouts,
## backoffs, the emulator's one-at-a-time DynamoDB): on 2 cores make test
## took 304 s at go test's default of one per CPU, 203 s at 4, 220 s at 8.
## TEST_SKIP leaves packages out (go list patterns): CI leaves out those it
## runs on LocalStack next, where they check the same things.
## TEST_SKIP_RUN leaves tests out by name (go test -skip): CI runs the fast
## path's own test in an earlier step
TEST_SKIP ?=
TEST_SKIP_RUN ?=
TEST_PACKAGES ?= $(shell echo $$((2 * $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1))))
test: venv rie stripe-mock
	@pkgs=./...; if [ -n "$(strip $(TEST_SKIP))" ]; then \
	  skip=$$($(GO) list $(TEST_SKIP)) && pkgs=$$($(GO) list ./... | grep -vxF "$$skip") || exit 1; \
	  echo "test: leaving out $$(echo $$skip | wc -w) packages (TEST_SKIP): $(TEST_SKIP)"; fi; \
	skiprun=; if [ -n "$(strip $(TEST_SKIP_RUN))" ]; then skiprun="-skip $(TEST_SKIP_RUN)"; \
	  echo "test: leaving out the tests matching $(TEST_SKIP_RUN) (TEST_SKIP_RUN)"; fi; \
	$(GO) test $(TEST_FLAGS) -p $(TEST_PACKAGES) $$skiprun $$pkgs

## test-localstack: the end-to-end tests, the drills and the CLI tests with
## SQS, SSM and CloudFormation on LocalStack (started here without Docker,
## on a free port) and DynamoDB on moto; fails if LocalStack cannot start
LOCALSTACK_TESTS := ./e2e/... ./drills ./internal/cli ./tools/cmd/provision ./tools/provision ./tools/testing/faultproxy ./shared/platform/secrets
test-localstack: venv rie localstack-venv
	$(GO) run ./tools/cmd/withemulator -localstack -- $(GO) test $(TEST_FLAGS) $(LOCALSTACK_TESTS)

## test-browser: the operator console in Debian's Chromium, headless,
## driven by chromedp against make dev's stack (e2e/browser, built with the
## browser tag; make test leaves it out). Installs chromium with apt-get
## when run as root and it is missing; otherwise says how. A screenshot of
## each step goes to bin/screenshots/; BROWSER_FLAGS=-docs-screenshot also
## rewrites docs/console.png.
BROWSER_FLAGS ?=
test-browser: venv
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "test-browser: installing chromium with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || exit 1; \
	  else \
	    echo "test-browser: no chromium: install Debian's with 'sudo apt-get install -y chromium' (as root, make test-browser installs it itself)"; exit 1; \
	  fi; }
	$(GO) run ./tools/cmd/withemulator -- $(GO) test -tags browser -race -count=1 -timeout 8m ./e2e/browser $(BROWSER_FLAGS)

## drills: the seven failure drills, and the kill and throttling drills (also part of make test)
drills: venv
	$(GO) run ./tools/cmd/withemulator -- $(GO) test -count=1 -v -run 'Drill|Concurrent|Throttling|Kills' ./drills

## loadtest: duplicated, reordered, missing deliveries with injected faults; one table
LOADTEST_FLAGS ?=
loadtest: venv
	$(GO) run ./tools/cmd/withemulator -- $(GO) run ./tools/cmd/loadtest $(LOADTEST_FLAGS)

## failpoints: the failure-point enumeration: every AWS and outside call of
## every function, discovered from a fault-free run per provider, with every
## fault kind, each again with a second event of the same object in flight,
## and sampled pairs, spread over one emulator per core; prints the table
## of docs/reliability.md (FAILPOINTS_FLAGS=-write rewrites it there) and
## fails on a broken invariant
FAILPOINTS_FLAGS ?=
failpoints: venv
	$(GO) run ./tools/cmd/withemulator -- $(GO) run ./tools/cmd/failpoints $(FAILPOINTS_FLAGS)

## fuzz: a short run of each fuzz target (package:Target)
# The budget is a number of executions, not a duration: Go 1.26's fuzz
# coordinator can fail a duration-limited run with a bare "context deadline
# exceeded" when the time runs out mid-execution on a busy machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 100000x
FUZZ_TARGETS := ./shared/pipeline/event:FuzzDecodeEnvelope ./shared/providers/provider:FuzzVerify ./shared/pipeline/receiver:FuzzHandle
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "== $$fn ($$pkg, $(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; done

## lint: formatting, vet, staticcheck, and a tidy go.mod
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@# A build output committed by mistake (a 21 MB binary once was): no
	@# tracked file over 1 MB outside test data.
	@big=$$(git ls-files -z | xargs -0 stat -c '%s %n' 2>/dev/null | \
	  awk '$$1 > 1048576 && $$2 !~ /(^|\/)(testdata|fixtures)\// {print "  " $$2 " (" $$1 " bytes)"}'); \
	  if [ -n "$$big" ]; then echo "tracked files over 1 MB outside testdata/ (build outputs belong in .gitignore):"; echo "$$big"; exit 1; fi
	@# -tags browser: the browser test (e2e/browser) too.
	$(GO) vet -tags browser ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags browser ./...
	@cp go.mod /tmp/go.mod.lint.$$$$ && cp go.sum /tmp/go.sum.lint.$$$$ && $(GO) mod tidy && \
	  if ! diff -q go.mod /tmp/go.mod.lint.$$$$ >/dev/null || ! diff -q go.sum /tmp/go.sum.lint.$$$$ >/dev/null; then \
	    echo "go mod tidy changed go.mod/go.sum: commit the tidy result"; git --no-pager diff go.mod go.sum; exit 1; fi; \
	  rm -f /tmp/go.mod.lint.$$$$ /tmp/go.sum.lint.$$$$

## bench: the one benchmark table. The receiver's and processor's
## benchmarks and the cold-start benchmark run first (their output, and the
## receiver's detailed ratio table, are printed as they come); then
## benchtable measures the pipeline through an in-process local stack and
## prints the table, every ratio from this run.
BENCH_COUNT ?= 3
BENCHTIME ?= 10x
bench: venv rie
	@set -o pipefail; $(GO) run ./tools/cmd/withemulator -- bash -c 'set -o pipefail; \
	  $(GO) test -run "^$$" -bench "Receiver|DecodeEnvelope|Processor" -benchmem -count $(BENCH_COUNT) ./shared/... \
	    | $(GO) run ./tools/cmd/benchratio && \
	  $(GO) test -run "^$$" -bench ColdStart -benchtime $(BENCHTIME) ./e2e/lambda' \
	  | $(GO) run ./tools/cmd/benchtable

## cost: the cost meter (tools/cost): write and read units per event from
## the items the code really writes, priced by DynamoDB's published rules
## and template.yaml's own indexes; $ per million events line by line, the
## fixed monthly cost beside the hosted alternatives, and the hottest key at
## 3,000 events a second. The last three lines are the figures with targets:
## write units per event, $ per million events, the hottest key's WU/s.
cost: venv
	@$(GO) run ./tools/cmd/withemulator -- $(GO) run ./tools/cmd/cost

## bench-coldstart: each function's init (process start to the runtime's
## first /next) under the Lambda runtime emulator and its package-init
## allocations, as ratios to a hello-world binary in the same run; zipped
## sizes, first and warm answers
BENCHTIME ?= 10x
bench-coldstart: venv rie
	$(GO) run ./tools/cmd/withemulator -- $(GO) test -run '^$$' -bench ColdStart -benchtime $(BENCHTIME) ./e2e/lambda

## rie: the pinned Lambda runtime interface emulator, in .bin/
rie: $(RIE)
$(RIE):
	GOBIN=$(CURDIR)/.bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

## stripe-mock: Stripe's pinned API mock, in .bin/ (checks the requests the inbox sends Stripe)
stripe-mock: $(STRIPE_MOCK)
$(STRIPE_MOCK):
	GOBIN=$(CURDIR)/.bin $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)

## build: the template's Lambda binaries for linux/arm64, as sam build makes them
build: $(addprefix build-,$(FUNCTIONS))

## validate: the template as SAM and CloudFormation check it, checkov's
## policies (each check the template skips says why, in its Metadata), then
## sam build (which runs the build-<Function> targets below) and a look at
## what it built
validate: venv checkov-venv
	$(SAM) validate --lint --region us-east-1
	$(VENV)/bin/cfn-lint template.yaml
	CKV_SKIP_PACKAGE_UPDATE_CHECK=true $(CHECKOV_VENV)/bin/checkov --file template.yaml \
	  --framework cloudformation --skip-download --compact --quiet
	$(SAM) build
	@n=0; for id in $(FUNCTIONS); do \
	  f=.aws-sam/build/$$id/bootstrap; \
	  test -x $$f || { echo "validate: $$f missing"; exit 1; }; \
	  $(GO) version -m $$f | grep -q 'GOARCH=arm64' || { echo "validate: $$f is not linux/arm64"; exit 1; }; \
	  echo "validate: $$f linux/arm64 $$(stat -c %s $$f) bytes"; n=$$((n+1)); \
	done; test $$n -gt 0 || { echo "validate: no functions found in template.yaml"; exit 1; }

# sam build (BuildMethod: makefile) calls these with ARTIFACTS_DIR set.
ARTIFACTS_DIR ?= bin/lambda/$(subst build-,,$@)
build-ReceiverFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/receiver
build-ProcessorFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/processor
build-ReconcilerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/reconciler
build-BridgeFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/bridge
# The cold-start benchmark's baseline: hello world on aws-lambda-go, built the
# same way. Not in the template.
build-HelloFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./e2e/lambda/testdata/hello

clean:
	rm -rf bin .aws-sam
