"""Starts moto's AWS emulator in server mode, bound to 127.0.0.1.

moto's own server (werkzeug, threaded) runs requests on parallel threads and
takes no lock, so two concurrent conditional writes to one DynamoDB item are
not atomic there, while real DynamoDB guarantees they are. This launcher wraps
moto's WSGI application with a lock around DynamoDB requests (those whose
X-Amz-Target names DynamoDB), so concurrency tests exercise our code and not
the emulator's races. Everything else, SQS long polls included, stays parallel.

Usage: python tools/emulator/motoserver.py [--port 4566]
"""

import argparse
import copy
import json
import logging
import signal
import sys
import threading
import time

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    create_backend_app,
)
from werkzeug.serving import WSGIRequestHandler, make_server


def serialize_dynamodb(app):
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return app(environ, start_response)
        with lock:
            # Consume the whole response inside the lock: the write happens
            # while the body is produced.
            result = app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close:
                    close()
            return [body]

    return wrapped


def cheap_transaction_snapshots():
    """Make moto's TransactWriteItems snapshot only the items it touches.

    moto deep-copies every table a transaction touches, to roll back on
    failure, so each transaction costs time and memory in proportion to the
    tables' size: a load test slows to a crawl as its tables grow. Real
    DynamoDB's cost does not grow with the table. This keeps moto's own
    transaction code, makes its whole-table copy a no-op for the duration of
    the call, and restores the touched items itself when the transaction
    fails. It is safe because DynamoDB requests run one at a time (see
    serialize_dynamodb).
    """
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items

    def touched(backend, transact_items):
        saved = []
        for entry in transact_items:
            try:
                _, op = next(iter(entry.items()))
                table = backend.tables.get(op.get("TableName"))
                if table is None:
                    continue
                attrs = op["Item"] if "Item" in op else op["Key"]
                h = DynamoType(attrs[table.hash_key_attr])
                r = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
                saved.append((table, h, r, copy.deepcopy(table.get_item(h, r))))
            except Exception:
                # A malformed request: moto's own code reports it.
                continue
        return saved

    def transact_write_items(self, transact_items):
        saved = touched(self, transact_items)
        Table.__deepcopy__ = lambda table, memo: table
        try:
            return original(self, transact_items)
        except Exception:
            for table, h, r, old in reversed(saved):
                if old is None:
                    table.delete_item(h, r)
                elif r is not None:
                    table.items[h][r] = old
                else:
                    table.items[h] = old
            raise
        finally:
            del Table.__deepcopy__

    DynamoDBBackend.transact_write_items = transact_write_items


def idempotent_transactions(window_seconds=600):
    """Make TransactWriteItems honour ClientRequestToken, as DynamoDB does.

    The SDK gives every TransactWriteItems call a token and sends the same
    token on each retry. DynamoDB answers a retry of a call that succeeded
    with success and changes nothing, for ten minutes after the first call;
    the same token with other parameters is an
    IdempotentParameterMismatchException. moto ignores the token, so a retry
    after a commit whose answer was lost (a connection closed before the
    body was read) re-runs the transaction and fails its own conditions:
    an outcome real DynamoDB never gives. Only successes are remembered; a
    failed call is evaluated again, as a new one. Runs under the DynamoDB
    lock (see serialize_dynamodb).
    """
    from moto.core.responses import ActionResult
    from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException
    from moto.dynamodb.responses import DynamoHandler

    class IdempotentParameterMismatch(DynamodbException):
        def __init__(self):
            super().__init__(
                ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException",
                message="The request uses the same client token as a previous, but non-identical request.",
            )

    original = DynamoHandler.transact_write_items
    done = {}  # (account, region, token) -> (expires, fingerprint)

    def transact_write_items(self):
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        now = time.monotonic()
        for key in [k for k, (expires, _) in done.items() if expires < now]:
            del done[key]
        key = (self.current_account, self.region, token)
        # Binary attributes arrive decoded, as bytes.
        fingerprint = json.dumps(
            self.body.get("TransactItems"),
            sort_keys=True,
            default=lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else str(v),
        )
        if key in done:
            if done[key][1] != fingerprint:
                raise IdempotentParameterMismatch()
            return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
        result = original(self)
        done[key] = (now + window_seconds, fingerprint)
        return result

    DynamoHandler.transact_write_items = transact_write_items


def cheap_dispatch():
    """Take per-request work out of moto's dispatch that gives the same answer
    every time.

    Profiled under the failure-point enumeration (many small requests at
    once), about a sixth of the emulator's time went to work whose answer
    never changes while it runs: listing moto's own package directory to
    match a host name (backends.list_of_moto_modules, once per request) and
    listing a response class's methods (method_names_from_class, once per
    request). Both are computed once here. Answers are unchanged.
    """
    import functools

    from moto import backends
    from moto.core import responses

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)


class QuietRequestHandler(WSGIRequestHandler):
    """werkzeug formats each request's access-log line, dates included,
    before its logger drops it below WARNING: without --access-log the line
    is not built at all."""

    def log_request(self, code="-", size="-"):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    parser.add_argument("--access-log", action="store_true", help="log every request")
    args = parser.parse_args()
    handler = WSGIRequestHandler
    if not args.access_log:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        handler = QuietRequestHandler

    cheap_transaction_snapshots()
    idempotent_transactions()
    cheap_dispatch()
    app = serialize_dynamodb(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True, request_handler=handler)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"emulator listening on http://{args.host}:{server.server_port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
