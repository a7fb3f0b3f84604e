"""moto_server with DynamoDB's atomicity.

moto serves requests on threads without a lock, so two conditional writes
on one key can both pass their condition, and a cancelled transaction
restores a snapshot over concurrent writes. DynamoDB makes every single
request atomic; this wrapper does the same by running DynamoDB requests
one at a time (SQS and everything else stay concurrent, so long polls do
not block). Usage: python moto_server.py [-H host] [-p port]
"""

import argparse
import signal
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

_dynamodb = threading.Lock()


class AtomicDynamoDB:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with _dynamodb:
            # The whole response is produced inside the lock.
            result = self.app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close:
                    close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, AtomicDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
