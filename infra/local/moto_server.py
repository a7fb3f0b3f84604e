"""moto_server with DynamoDB's atomicity.

moto serves requests on threads without a lock, so two conditional writes
on one key can both pass their condition, and a cancelled transaction
restores a snapshot over concurrent writes. DynamoDB makes every single
request atomic; this wrapper does the same by running DynamoDB requests
one at a time (SQS and everything else stay concurrent, so long polls do
not block). Usage: python moto_server.py [-H host] [-p port]

Transactions undo per item. moto makes a cancelled TransactWriteItems
all-or-nothing by deep-copying every table it names, once per item, before
it starts: O(table size x items) under the lock above, so one transaction
on a table of a few thousand items stalls every DynamoDB client for a third
of a second. With requests serialised, undoing just the items the
transaction names is as exact, so the whole-table copy is switched off and
the touched items are saved and restored instead.

Injected faults, for tests of what moto never does on its own: a POST to
/_faults with {"table": T, "operation": O, "count": N} makes the next N
requests of operation O naming table T fail as DynamoDB does while another
transaction holds the item (PutItem: TransactionConflictException;
TransactWriteItems: TransactionCanceledException with TransactionConflict
reasons), writing nothing. With "delay_ms": D they are answered D ms late
instead, as seen at the moment they finally run (a slow read, for races).

Durable state (--state FILE, what run.sh uses; tests run without it and
stay in memory): the DynamoDB, SQS and EventBridge Scheduler backends are
restored from FILE at start and saved to it atomically (written beside it,
fsynced, renamed over it) at most --save-interval-ms after a request that
changed something, and on SIGTERM/SIGINT. A crash (SIGKILL, power loss)
loses at most the writes of that last interval. GET /_state answers
{"written": n, "saved": m}: m == n once every write so far is on disk.
"""

import argparse
import io
import copy
import json
import os
import pickle
import signal
import sys
import threading
import time

from werkzeug.serving import run_simple
from moto.backends import get_backend
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

_dynamodb = threading.Lock()
_faults_lock = threading.Lock()
_faults = {}  # (table, operation) -> {"count": requests left, "delay_ms": or 0 to fail them}


def _tables_named(operation, body):
    if operation == "TransactWriteItems":
        return [next(iter(i.values())).get("TableName") for i in body.get("TransactItems", [])]
    return [body.get("TableName")]


def _take_fault(operation, body):
    """The armed fault this request triggers (and uses up), or None."""
    with _faults_lock:
        for table in _tables_named(operation, body):
            fault = _faults.get((table, operation))
            if fault and fault["count"] > 0:
                fault["count"] -= 1
                return fault
    return None


def _conflict(operation, body):
    """DynamoDB's answer to a write on an item a transaction holds."""
    prefix = "com.amazonaws.dynamodb.v20120810#"
    if operation == "TransactWriteItems":
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"} for _ in body["TransactItems"]]
        return {"__type": prefix + "TransactionCanceledException", "CancellationReasons": reasons,
                "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]"
                % ", ".join(r["Code"] for r in reasons)}
    return {"__type": prefix + "TransactionConflictException", "message": "Transaction is ongoing for the item"}


def _json_response(start_response, status, payload):
    data = json.dumps(payload).encode()
    start_response(status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(data)))])
    return [data]


class AtomicDynamoDB:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/_faults" and environ.get("REQUEST_METHOD") == "POST":
            spec = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            with _faults_lock:
                _faults[(spec["table"], spec["operation"])] = {
                    "count": int(spec.get("count", 1)), "delay_ms": int(spec.get("delay_ms", 0))}
            return _json_response(start_response, "200 OK", {"armed": spec})
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        operation = target.split(".", 1)[-1]
        if any(op == operation for (_, op) in _faults):
            raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            body = json.loads(raw or b"{}")
            environ["wsgi.input"] = io.BytesIO(raw)
            fault = _take_fault(operation, body)
            if fault and fault["delay_ms"]:
                time.sleep(fault["delay_ms"] / 1000)  # outside the lock: others go on meanwhile
            elif fault:
                return _json_response(start_response, "400 Bad Request", _conflict(operation, body))
        with _dynamodb:
            # The whole response is produced inside the lock.
            result = self.app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                close = getattr(result, "close", None)
                if close:
                    close()


class _CopyWithoutTables:
    """The `copy` module as moto's DynamoDB backend sees it: a deep copy of a
    Table is the table itself (the only such copy is the transaction
    snapshot, which `_transact_write_items` replaces); all else is copied."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(x, memo=None):
        return x if isinstance(x, Table) else copy.deepcopy(x, memo)


_moto_transact_write_items = DynamoDBBackend.transact_write_items


def _transact_write_items(self, transact_items):
    saved = []  # (table, key, attributes before, or None when absent)
    for entry in transact_items:
        try:
            op_type, op = next(iter(entry.items()))
            table = self.get_table(op["TableName"])
            if op_type == "Put":
                names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
                key = {n: op["Item"][n] for n in names}
            else:
                key = op["Key"]
            current = self.get_item(op["TableName"], key)
        except Exception:
            continue  # malformed: moto refuses it without writing that item
        before = copy.deepcopy(current.to_json()["Attributes"]) if current else None
        saved.append((op["TableName"], key, before))
    try:
        return _moto_transact_write_items(self, transact_items)
    except BaseException:
        # Cancelled: put back every item the transaction named.
        for table_name, key, before in reversed(saved):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before, overwrite=True)
        raise


dynamodb_models.copy = _CopyWithoutTables()
DynamoDBBackend.transact_write_items = _transact_write_items


# The services the stack keeps data in.
PERSISTED = ("dynamodb", "sqs", "scheduler")

# Requests that change nothing (by their X-Amz-Target operation); every
# other DynamoDB or SQS request, and any non-GET of another service, counts
# as a write. An SQS ReceiveMessage changes state only when it hands out a
# message (the consumers' empty long polls must not cause saves).
_READS = {
    "GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "DescribeTable", "ListTables",
    "DescribeTimeToLive", "DescribeContinuousBackups", "ListTagsOfResource",
    "GetQueueUrl", "GetQueueAttributes", "ListQueues", "ListQueueTags", "ListDeadLetterSourceQueues",
}
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class _FreshLocks(pickle.Pickler):
    """Pickles moto's backends, with every lock or condition saved as a new
    one (a queue's Condition cannot be pickled, and none is held across a
    restart anyway)."""

    def reducer_override(self, obj):
        if isinstance(obj, threading.Condition):
            return threading.Condition, ()
        if isinstance(obj, _LOCK_TYPES[1]):
            return threading.RLock, ()
        if isinstance(obj, _LOCK_TYPES[0]):
            return threading.Lock, ()
        return NotImplemented


class Persistence:
    def __init__(self, path, interval_ms):
        self.path = path
        self.interval = interval_ms / 1000
        self._written = 0  # writes seen so far
        self._saved = 0  # writes on disk
        self._counter = threading.Lock()
        self._save = threading.Lock()  # one save at a time
        self._pending = threading.Event()

    def restore(self):
        """Loads the saved backends, if any; a file that cannot be read
        stops the server rather than being overwritten with an empty state."""
        if not os.path.exists(self.path):
            print(f"moto state: none at {self.path}, starting empty", file=sys.stderr, flush=True)
            return
        try:
            with open(self.path, "rb") as f:
                saved = pickle.load(f)
        except Exception as e:
            sys.exit(f"moto state: cannot restore {self.path} ({type(e).__name__}: {e}); "
                     "move it aside, or start empty with ./infra/local/run.sh --reset")
        for service, accounts in saved["backends"].items():
            backends = get_backend(service)
            for account, regions in accounts.items():
                for region, backend in regions.items():
                    backends[account][region] = backend
        tables = sum(len(b.tables) for r in saved["backends"].get("dynamodb", {}).values() for b in r.values())
        print(f"moto state: restored {tables} tables from {self.path} (saved by moto {saved.get('moto')})",
              file=sys.stderr, flush=True)

    def wrote(self):
        with self._counter:
            self._written += 1
        self._pending.set()

    def status(self):
        with self._counter:
            return {"written": self._written, "saved": self._saved, "path": self.path}

    def save(self):
        with self._save:
            with self._counter:
                upto = self._written
            with _dynamodb:  # no DynamoDB request runs meanwhile: a consistent snapshot
                data = self._snapshot()
            tmp = self.path + ".tmp"
            # Owner-only: the tables hold API key hashes and encrypted secrets.
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            directory = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
            with self._counter:
                self._saved = max(self._saved, upto)

    @staticmethod
    def _snapshot():
        from moto import __version__
        # SQS requests run concurrently; one that changes a dict while it is
        # being pickled makes pickle raise, and the next try gets past it.
        for attempt in range(20):
            try:
                state = {s: {a: {r: b for r, b in dict.items(regions)} for a, regions in dict.items(get_backend(s))}
                         for s in PERSISTED}
                buf = io.BytesIO()
                _FreshLocks(buf, protocol=pickle.HIGHEST_PROTOCOL).dump({"moto": __version__, "backends": state})
                return buf.getvalue()
            except RuntimeError:
                if attempt == 19:
                    raise
                time.sleep(0.01)

    def run(self):
        """Saves at most one interval after the first unsaved write."""
        while True:
            self._pending.wait()
            time.sleep(self.interval)
            self._pending.clear()
            try:
                self.save()
            except Exception as e:  # keep serving; the next write retries
                print(f"moto state: save failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                self._pending.set()


class Persisted:
    """Counts the requests that change state, and answers GET /_state."""

    def __init__(self, app, persistence):
        self.app = app
        self.persistence = persistence

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/_state":
            return _json_response(start_response, "200 OK", self.persistence.status())
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        operation = target.split(".", 1)[-1] if target else None
        body = self.app(environ, start_response)
        if operation in _READS:
            return body
        if operation == "ReceiveMessage":
            body = [b"".join(body)]
            if b"ReceiptHandle" not in body[0]:
                return body
        elif operation is None and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return body
        self.persistence.wrote()
        return body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    parser.add_argument("--state", help="keep DynamoDB, SQS and Scheduler state in this file")
    parser.add_argument("--save-interval-ms", type=int, default=1000)
    args = parser.parse_args()
    # SIGTERM (run.sh stopping) and SIGINT (Ctrl-C) end serving; the final save follows.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    app = AtomicDynamoDB(DomainDispatcherApplication(create_backend_app))
    persistence = None
    if args.state:
        os.makedirs(os.path.dirname(os.path.abspath(args.state)), exist_ok=True)
        persistence = Persistence(os.path.abspath(args.state), args.save_interval_ms)
        persistence.restore()
        threading.Thread(target=persistence.run, daemon=True, name="moto-state").start()
        app = Persisted(app, persistence)
    try:
        run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    finally:
        if persistence:
            persistence.save()
            print(f"moto state: saved to {persistence.path}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
