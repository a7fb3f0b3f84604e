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
"""

import argparse
import io
import copy
import json
import signal
import sys
import threading
import time

from werkzeug.serving import run_simple
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
