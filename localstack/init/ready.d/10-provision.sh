#!/bin/bash
# LocalStack init hook (READY stage): provision template.yaml's tables and
# queues, and the local secrets, with tools/cmd/provision, the provisioner make dev
# and the tests use. Build it on the host first (the container has no Go):
#   CGO_ENABLED=0 GOOS=linux go build -o localstack/bin/provision ./tools/cmd/provision
# The resources and each function's environment are printed as JSON
# (docker compose -f localstack/compose.yaml logs localstack).
set -euo pipefail

home=${WEBHOOK_INBOX_HOME:-/opt/webhook-inbox}
bin=$home/bin/provision
if [ ! -x "$bin" ]; then
  echo "webhook-inbox: $bin missing; on the host run:" >&2
  echo "  CGO_ENABLED=0 GOOS=linux go build -o localstack/bin/provision ./tools/cmd/provision" >&2
  exit 1
fi

# Inside the container LocalStack listens on localhost:4566. It accepts any
# credentials; these are not secrets.
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://localhost:4566}
export AWS_REGION=${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test}

"$bin" -template "$home/template.yaml" \
  -prefix "${WEBHOOK_INBOX_PREFIX:-webhook-inbox-local}" \
  -parameter-overrides "${WEBHOOK_INBOX_PARAMETER_OVERRIDES:-}"
echo "webhook-inbox: provisioned on $AWS_ENDPOINT_URL" >&2
