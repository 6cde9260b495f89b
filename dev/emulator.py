"""Starts moto's AWS emulator in server mode, bound to 127.0.0.1.

moto's own server (werkzeug, threaded) runs requests on parallel threads and
takes no lock, so two concurrent conditional writes to one DynamoDB item are
not atomic there, while real DynamoDB guarantees they are. This launcher wraps
moto's WSGI application with a lock around DynamoDB requests (those whose
X-Amz-Target names DynamoDB), so concurrency tests exercise our code and not
the emulator's races. Everything else, SQS long polls included, stays parallel.

Usage: python dev/emulator.py [--port 4566]
"""

import argparse
import logging
import signal
import sys
import threading

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    create_backend_app,
)
from werkzeug.serving import make_server


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    parser.add_argument("--access-log", action="store_true", help="log every request")
    args = parser.parse_args()
    if not args.access_log:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

    app = serialize_dynamodb(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"emulator listening on http://{args.host}:{server.server_port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
