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

Usage metering, for the cost bench: a POST to /_usage with {"prefix": P}
starts counting (from zero) what DynamoDB and SQS would bill for the tables
and queues named P-…; GET /_usage?prefix=P answers the counts so far (see
Usage). Unarmed, nothing is parsed or counted.

Durable state (--state FILE, what run.sh uses; tests run without it and
stay in memory): the DynamoDB, SQS and EventBridge Scheduler backends are
restored from FILE at start and saved to it atomically (written beside it,
fsynced, renamed over it) at most --save-interval-ms after a request that
changed something, and on SIGTERM/SIGINT. A crash (SIGKILL, power loss)
loses at most the writes of that last interval. GET /_state answers
{"written": n, "saved": m}: m == n once every write so far is on disk.
"""

import argparse
import base64
import io
import math
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
from moto.core import DEFAULT_ACCOUNT_ID
from urllib.parse import parse_qs
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


def _value_size(v):
    """DynamoDB's size of one attribute value (its published rules; numbers
    approximated as one byte per two significant digits plus one)."""
    (t, x), = v.items()
    if t == "S":
        return len(x.encode())
    if t == "N":
        return len(x.lstrip("-").replace(".", "").strip("0")) // 2 + 2
    if t == "B":
        return len(base64.b64decode(x))
    if t in ("BOOL", "NULL"):
        return 1
    if t == "SS":
        return sum(len(e.encode()) for e in x)
    if t == "NS":
        return sum(len(e.lstrip("-").replace(".", "").strip("0")) // 2 + 2 for e in x)
    if t == "BS":
        return sum(len(base64.b64decode(e)) for e in x)
    if t == "L":
        return 3 + sum(1 + _value_size(e) for e in x)
    if t == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(e) for k, e in x.items())
    return 0


def _item_size(item):
    return sum(len(k.encode()) + _value_size(v) for k, v in item.items()) if item else 0


def _units(size, unit):
    return max(1, math.ceil(size / unit))


class Usage:
    """What DynamoDB (on-demand request units) and SQS (requests, per 64 KB
    of payload) would bill, per armed table/queue name prefix.

    Writes: per item max(1, ceil(max(size before, size after) / 1 KB)) write
    units, doubled in a transaction, plus the same for each global secondary
    index the item is in before or after (a key change is a delete plus a
    put); a write whose condition fails still costs its units. Reads:
    ceil(size / 4 KB) read units per item read, at least 1 per request, halved
    when eventually consistent (every index read), doubled in a transaction;
    a Query or Scan counts the full items it returns plus, for items its
    filter dropped, their average size. SQS: every request is one, a send
    one per 64 KB of its messages; empty receives are counted apart (in AWS
    they are the event source mapping's polling)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._armed = {}  # prefix -> counts

    @staticmethod
    def _fresh():
        return {"dynamodb": {"readUnits": 0.0, "writeUnits": 0.0, "requests": {}},
                "sqs": {"requests": 0, "emptyReceives": 0, "operations": {}}}

    def arm(self, prefix):
        with self._lock:
            self._armed[prefix] = self._fresh()

    def get(self, prefix):
        with self._lock:
            return copy.deepcopy(self._armed.get(prefix) or self._fresh())

    def _counts(self, name):
        for prefix, counts in self._armed.items():
            if name and name.startswith(prefix + "-"):
                return counts
        return None

    def armed(self):
        return bool(self._armed)

    # --- DynamoDB (called inside the DynamoDB lock: the items seen before
    # and after are exactly what the request changed)

    @staticmethod
    def _backend(environ):
        auth = environ.get("HTTP_AUTHORIZATION", "")
        region = "us-east-1"
        if "Credential=" in auth:
            parts = auth.split("Credential=", 1)[1].split("/")
            if len(parts) > 2:
                region = parts[2]
        return get_backend("dynamodb")[DEFAULT_ACCOUNT_ID][region]

    @staticmethod
    def _item(backend, table, key):
        try:
            item = backend.get_item(table, key)
        except Exception:
            return None
        return item.to_json()["Attributes"] if item else None

    @staticmethod
    def _key_of(backend, table, item):
        t = backend.get_table(table)
        names = [t.hash_key_attr] + ([t.range_key_attr] if t.range_key_attr else [])
        return {n: item[n] for n in names if n in item}

    def _write_units(self, backend, table, before, after, factor):
        if before == after and before is not None:
            changed = False
        else:
            changed = True
        units = _units(max(_item_size(before), _item_size(after)), 1024)
        if changed:
            for gsi in backend.get_table(table).global_indexes:
                attrs = [k["AttributeName"] for k in gsi.schema]
                old = before is not None and all(a in before for a in attrs)
                new = after is not None and all(a in after for a in attrs)
                if old and new and all(before[a] == after[a] for a in attrs):
                    units += _units(max(_item_size(before), _item_size(after)), 1024)
                else:
                    units += (_units(_item_size(before), 1024) if old else 0) + (_units(_item_size(after), 1024) if new else 0)
        return units * factor

    def dynamodb(self, environ, operation, body, run):
        """Runs the request (`run()` → response bytes) and counts it."""
        tables = _tables_named(operation, body)
        if operation in ("BatchWriteItem", "BatchGetItem"):
            tables = list(body.get("RequestItems", {}))
        elif operation == "TransactGetItems":
            tables = [i["Get"]["TableName"] for i in body.get("TransactItems", [])]
        counts = next((c for c in (self._counts(t) for t in tables) if c), None)
        if counts is None:
            return run()
        backend = self._backend(environ)
        writes = []  # (table, key, factor)
        if operation == "PutItem":
            writes = [(body["TableName"], self._key_of(backend, body["TableName"], body["Item"]), 1)]
        elif operation in ("UpdateItem", "DeleteItem"):
            writes = [(body["TableName"], body["Key"], 1)]
        elif operation == "BatchWriteItem":
            for table, requests in body.get("RequestItems", {}).items():
                for r in requests:
                    if "PutRequest" in r:
                        writes.append((table, self._key_of(backend, table, r["PutRequest"]["Item"]), 1))
                    elif "DeleteRequest" in r:
                        writes.append((table, r["DeleteRequest"]["Key"], 1))
        elif operation == "TransactWriteItems":
            for entry in body.get("TransactItems", []):
                kind, op = next(iter(entry.items()))
                if kind == "ConditionCheck":
                    continue
                key = self._key_of(backend, op["TableName"], op["Item"]) if kind == "Put" else op["Key"]
                writes.append((op["TableName"], key, 2))
        before = []
        try:
            before = [self._item(backend, t, k) for (t, k, _) in writes]
        except Exception:
            pass
        response = run()
        read = 0.0
        write = 0
        try:
            for (t, k, factor), b in zip(writes, before):
                write += self._write_units(backend, t, b, self._item(backend, t, k), factor)
            consistent = 1.0 if body.get("ConsistentRead") else 0.5
            if operation == "GetItem":
                read = _units(_item_size(self._item(backend, body["TableName"], body["Key"])), 4096) * consistent
            elif operation == "BatchGetItem":
                for table, spec in body.get("RequestItems", {}).items():
                    factor = 1.0 if spec.get("ConsistentRead") else 0.5
                    read += sum(_units(_item_size(self._item(backend, table, k)), 4096) * factor for k in spec.get("Keys", []))
            elif operation == "TransactGetItems":
                for i in body.get("TransactItems", []):
                    read += _units(_item_size(self._item(backend, i["Get"]["TableName"], i["Get"]["Key"])), 4096) * 2
            elif operation == "TransactWriteItems":
                for entry in body.get("TransactItems", []):
                    kind, op = next(iter(entry.items()))
                    if kind == "ConditionCheck":
                        read += _units(_item_size(self._item(backend, op["TableName"], op["Key"])), 4096) * 2
            elif operation in ("Query", "Scan"):
                answer = json.loads(response[0] if isinstance(response, list) else response)
                table = body["TableName"]
                sizes = []
                for item in answer.get("Items", []):
                    key = self._key_of(backend, table, item)
                    full = self._item(backend, table, key) if key else None
                    sizes.append(_item_size(full or item))
                dropped = max(0, answer.get("ScannedCount", 0) - answer.get("Count", 0))
                total = sum(sizes) + (dropped * (sum(sizes) / len(sizes)) if sizes else 0)
                factor = 0.5 if body.get("IndexName") else consistent
                read = _units(total, 4096) * factor
        except Exception as e:  # metering never fails a request
            print(f"usage: could not meter {operation}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        with self._lock:
            d = counts["dynamodb"]
            d["readUnits"] += read
            d["writeUnits"] += write
            d["requests"][operation] = d["requests"].get(operation, 0) + 1
        return response

    # --- SQS

    def sqs(self, operation, body, response):
        url = body.get("QueueUrl", "") or body.get("QueueName", "")
        counts = self._counts(url.rstrip("/").rsplit("/", 1)[-1])
        if counts is None:
            return
        n = 1
        if operation == "SendMessage":
            n = _units(len(body.get("MessageBody", "").encode()) + len(json.dumps(body.get("MessageAttributes", {}))), 65536)
        elif operation == "SendMessageBatch":
            size = sum(len(e.get("MessageBody", "").encode()) + len(json.dumps(e.get("MessageAttributes", {}))) for e in body.get("Entries", []))
            n = _units(size, 65536)
        with self._lock:
            q = counts["sqs"]
            if operation == "ReceiveMessage" and b"ReceiptHandle" not in response:
                q["emptyReceives"] += 1
                return
            q["requests"] += n
            q["operations"][operation] = q["operations"].get(operation, 0) + n


_usage = Usage()


class AtomicDynamoDB:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == "/_usage":
            if environ.get("REQUEST_METHOD") == "POST":
                spec = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
                _usage.arm(spec["prefix"])
                return _json_response(start_response, "200 OK", {"armed": spec["prefix"]})
            prefix = parse_qs(environ.get("QUERY_STRING", "")).get("prefix", [""])[0]
            return _json_response(start_response, "200 OK", _usage.get(prefix))
        if environ.get("PATH_INFO") == "/_faults" and environ.get("REQUEST_METHOD") == "POST":
            spec = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            with _faults_lock:
                _faults[(spec["table"], spec["operation"])] = {
                    "count": int(spec.get("count", 1)), "delay_ms": int(spec.get("delay_ms", 0))}
            return _json_response(start_response, "200 OK", {"armed": spec})
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            if _usage.armed() and target.startswith("AmazonSQS."):
                raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                environ["wsgi.input"] = io.BytesIO(raw)
                result = [b"".join(self.app(environ, start_response))]
                _usage.sqs(target.split(".", 1)[-1], json.loads(raw or b"{}"), result[0])
                return result
            return self.app(environ, start_response)
        operation = target.split(".", 1)[-1]
        metered = None
        if _usage.armed():
            raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(raw)
            metered = json.loads(raw or b"{}")
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
            def run():
                result = self.app(environ, start_response)
                try:
                    return [b"".join(result)]
                finally:
                    close = getattr(result, "close", None)
                    if close:
                        close()
            if metered is not None:
                return _usage.dynamodb(environ, operation, metered, run)
            return run()


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
