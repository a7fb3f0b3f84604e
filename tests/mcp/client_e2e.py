"""The MCP server through the official MCP Python SDK client, over
Streamable HTTP: build, validate, create, test, execute, update, publish a
workflow; data tables; credentials; bad input. Run by tests/tests/mcp.rs
with MCP_URL, MCP_KEY and MCP_SECRET set; prints one JSON summary line last.
"""
import asyncio
import json
import os
import sys

from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["MCP_URL"]
KEY = os.environ["MCP_KEY"]
SECRET = os.environ["MCP_SECRET"]

SPEC_TOOLS = {
    "search_workflows", "get_workflow_details", "execute_workflow", "test_workflow", "prepare_test_pin_data",
    "publish_workflow", "unpublish_workflow", "search_projects", "search_folders", "get_execution",
    "search_executions", "list_credentials", "get_sdk_reference", "search_nodes", "get_node_types",
    "get_suggested_nodes", "validate_workflow", "create_workflow_from_code", "update_workflow", "archive_workflow",
    "search_data_tables", "create_data_table", "add_data_table_column", "rename_data_table_column",
    "delete_data_table_column", "rename_data_table", "add_data_table_rows",
}

# webhook → Set → If → two branches, in TypeScript against our SDK.
SDK_CODE = """
import { workflow, node, trigger, ifElse, expr } from '@n8n/workflow-sdk';

interface Order { total: number }

const hook = trigger({ type: 'n8n-nodes-base.webhook', version: 2, config: {
  name: 'Webhook', parameters: { httpMethod: 'POST', path: 'orders' },
} });
const prepare = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Prepare', parameters: {
  mode: 'manual',
  assignments: { assignments: [{ id: 'a1', name: 'total', value: expr('{{ $json.body.total }}'), type: 'number' }] },
} } });
const isBig = ifElse({ version: 2.2, config: { name: 'Is big', parameters: { conditions: {
  options: { caseSensitive: true, typeValidation: 'strict' },
  combinator: 'and',
  conditions: [{ id: 'c1', leftValue: expr('{{ $json.total }}'), rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
} } } });
const label = (size: string): any => node({ type: 'n8n-nodes-base.set', version: 3.4, config: {
  name: size === 'big' ? 'Big order' : 'Small order',
  parameters: { includeOtherFields: true, assignments: { assignments: [{ id: 's1', name: 'size', value: size, type: 'string' }] } },
} });

export default workflow('orders', 'Order triage')
  .add(hook)
  .to(prepare)
  .to(isBig.onTrue(label('big')).onFalse(label('small')));
"""

checks = 0


def check(what, cond, detail=None):
    global checks
    if not cond:
        raise AssertionError(f"{what}: {json.dumps(detail, default=str)[:2000] if detail is not None else ''}")
    checks += 1
    print(f"ok - {what}")


async def call(c, name, args):
    """A tool call that must succeed; returns its structured content."""
    r = await c.call_tool(name, args)
    text = r.content[0].text if r.content else ""
    check(f"{name} succeeds", not r.is_error, text)
    check(f"{name} has structured content and a text copy", r.structured_content is not None and json.loads(text) == r.structured_content)
    return r.structured_content


async def fail(c, name, args, needle):
    """A tool call that must fail as a tool result (isError), mentioning `needle`."""
    r = await c.call_tool(name, args)
    text = r.content[0].text if r.content else ""
    check(f"{name} fails with isError ({needle})", r.is_error and needle.lower() in text.lower(), text)
    return text


async def main():
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {KEY}"})
    async with Client(streamable_http_client(URL, http_client=http)) as c:
        tools = (await c.list_tools()).tools
        names = {t.name for t in tools}
        check("tools/list has every spec tool", names == SPEC_TOOLS, sorted(names ^ SPEC_TOOLS))
        for t in tools:
            check(f"{t.name} schemas are objects", t.input_schema.get("type") == "object" and (t.output_schema or {}).get("type") == "object")

        # Builder: reference, catalog, validation, creation.
        ref = await call(c, "get_sdk_reference", {"section": "patterns"})
        check("reference has patterns", "ifElse" in ref["reference"])
        found = await call(c, "search_nodes", {"queries": ["webhook", "if"]})
        check("search_nodes finds the webhook", "n8n-nodes-base.webhook" in found["results"])
        types = await call(c, "get_node_types", {"nodeIds": ["n8n-nodes-base.set", {"nodeId": "n8n-nodes-base.if", "version": "2.2"}]})
        check("get_node_types returns TypeScript", "assignments" in types["definitions"] and "conditions" in types["definitions"])
        sugg = await call(c, "get_suggested_nodes", {"categories": ["triage", "notification"]})
        check("suggestions cover both categories", "## triage" in sugg["suggestions"] and "## notification" in sugg["suggestions"])

        v = await call(c, "validate_workflow", {"code": SDK_CODE})
        check("SDK code validates", v["valid"] and v["nodeCount"] == 5, v)
        bad_code = await call(c, "validate_workflow", {"code": "export default workflow('x', 'Broken').add(node({ type: 'n8n-nodes-base.set' }));"})
        check("invalid code is reported, not thrown", not bad_code["valid"] and bad_code["errors"], bad_code)
        # expressions are compiled in the executor's sandbox: one that does not parse is named
        bad_expr = await call(c, "validate_workflow", {"code": SDK_CODE.replace("{{ $json.body.total }}", "{{ $json.body.total + }}", 1)})
        check("an expression that does not parse is reported", not bad_expr["valid"] and any("does not parse" in e for e in bad_expr["errors"]), bad_expr)
        bad_json = await call(c, "validate_workflow", {"code": json.dumps({"nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [200, 0], "parameters": {"mode": "raw", "jsonOutput": "={{ $json.a + }}"}}],
            "connections": {"Start": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}})})
        check("workflow JSON's expressions are checked too", not bad_json["valid"] and any("does not parse" in e and "Set" in e for e in bad_json["errors"]), bad_json)

        before = (await call(c, "search_workflows", {}))["count"]
        await fail(c, "create_workflow_from_code", {"code": "const x = ;"}, "syntax")
        await fail(c, "create_workflow_from_code", {"code": SDK_CODE.replace("version: 3.4", "version: 99", 1)}, "typeVersion 99")
        check("failed creates wrote nothing", (await call(c, "search_workflows", {}))["count"] == before)

        created = await call(c, "create_workflow_from_code", {"code": SDK_CODE, "description": "Labels incoming orders as big or small."})
        wid = created["workflowId"]
        check("created with 5 nodes and a url", created["nodeCount"] == 5 and wid in created["url"], created)

        listed = await call(c, "search_workflows", {"query": "order triage"})
        row = next(w for w in listed["data"] if w["id"] == wid)
        check("search finds it, available in MCP", row["availableInMCP"] and row["canExecute"] and row["triggerCount"] == 1, row)

        details = await call(c, "get_workflow_details", {"workflowId": wid})
        wf = details["workflow"]
        check("details: webhook trigger info", "Webhook" in details["triggerInfo"] and "webhook" in details["triggerInfo"], details["triggerInfo"])
        check("details: builder metadata", wf["meta"]["aiBuilderAssisted"] is True, wf["meta"])
        check("details: no credentials on nodes", all("credentials" not in n for n in wf["nodes"]))
        check("details: webhook id resolved", any(n.get("webhookId") for n in wf["nodes"] if n["type"] == "n8n-nodes-base.webhook"))

        prep = await call(c, "prepare_test_pin_data", {"workflowId": wid})
        check("pin data: the webhook needs pins", "Webhook" in prep["nodeSchemasToGenerate"] and "Prepare" in prep["nodesSkipped"], prep)
        check("pin data: coverage adds up", prep["coverage"]["total"] == 5 and prep["coverage"]["skipped"] == 4, prep["coverage"])

        # Test with pin data (big order), then execute with webhook input (small order).
        tested = await call(c, "test_workflow", {"workflowId": wid, "pinData": {"Webhook": [{"json": {"body": {"total": 150}}}]}})
        check("test run succeeds", tested["status"] == "success", tested)
        ex = await call(c, "get_execution", {"workflowId": wid, "executionId": tested["executionId"], "includeData": True})
        run_data = ex["data"]["resultData"]["runData"]
        check("test: big branch ran", run_data["Big order"][0]["data"]["main"][0][0]["json"]["size"] == "big", run_data.get("Big order"))
        check("test: small branch did not", "Small order" not in run_data, list(run_data))
        check("test: metadata", ex["execution"]["status"] == "success" and ex["execution"]["mode"] == "manual", ex["execution"])

        run = await call(c, "execute_workflow", {"workflowId": wid, "executionMode": "manual",
                                                 "inputs": {"type": "webhook", "webhookData": {"method": "POST", "body": {"total": 20}}}})
        check("execute succeeds", run["status"] == "success" and run["executionId"], run)
        ex = await call(c, "get_execution", {"workflowId": wid, "executionId": run["executionId"], "includeData": True,
                                             "nodeNames": ["Small order"], "truncateData": 1})
        rd = ex["data"]["resultData"]["runData"]
        check("execute: only the asked node, small branch", list(rd) == ["Small order"] and rd["Small order"][0]["data"]["main"][0][0]["json"]["size"] == "small", rd)
        meta_only = await call(c, "get_execution", {"workflowId": wid, "executionId": run["executionId"]})
        check("get_execution without data is metadata only", "data" not in meta_only and meta_only["execution"]["id"] == run["executionId"])

        page1 = await call(c, "search_executions", {"workflowId": wid, "limit": 1})
        page2 = await call(c, "search_executions", {"workflowId": wid, "limit": 1, "lastId": page1["data"][0]["id"]})
        check("search_executions pages with lastId", page1["count"] == 2 and page2["data"] and page2["data"][0]["id"] != page1["data"][0]["id"], [page1, page2])
        succ = await call(c, "search_executions", {"status": ["success"]})
        check("search_executions by status", succ["count"] >= 2)

        creds = await call(c, "list_credentials", {"query": "orders api"})
        cred_id = creds["data"][0]["id"]

        # A batch with one invalid operation changes nothing.
        v0 = wf["versionId"]
        await fail(c, "update_workflow", {"workflowId": wid, "operations": [
            {"type": "setNodeParameter", "nodeName": "Prepare", "path": "/options/dotNotation", "value": False},
            {"type": "renameNode", "oldName": "Small order", "newName": "Small"},
            {"type": "removeNode", "nodeName": "No such node"},
        ]}, "operation 2")
        after = (await call(c, "get_workflow_details", {"workflowId": wid}))["workflow"]
        check("failed batch saved nothing", after["versionId"] == v0 and {n["name"] for n in after["nodes"]} == {n["name"] for n in wf["nodes"]})

        upd = await call(c, "update_workflow", {"workflowId": wid, "operations": [
            {"type": "setNodeParameter", "nodeName": "Prepare", "path": "/options/dotNotation", "value": False},
            {"type": "updateNodeParameters", "nodeName": "Big order", "parameters": {"options": {"ignoreConversionErrors": True}}},
            {"type": "addNode", "node": {"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [900, 0]}},
            {"type": "addConnection", "source": "Big order", "target": "Done"},
            {"type": "renameNode", "oldName": "Small order", "newName": "Small"},
            {"type": "setNodePosition", "nodeName": "Small", "position": [660, 200]},
            {"type": "setNodeDisabled", "nodeName": "Done", "disabled": False},
            {"type": "removeConnection", "source": "Big order", "target": "Done"},
            {"type": "addConnection", "source": "Small", "target": "Done"},
            {"type": "setWorkflowMetadata", "name": "Order triage v2", "description": "Labels orders."},
            {"type": "addNode", "node": {"name": "Call API", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2,
                                         "parameters": {"url": "https://api.example.com/orders", "authentication": "genericCredentialType",
                                                        "genericAuthType": "httpHeaderAuth"}}},
            {"type": "setNodeCredential", "nodeName": "Call API", "credentialKey": "httpHeaderAuth",
             "credentialId": cred_id, "credentialName": "Orders API token"},
        ]})
        check("update applied every operation", upd["appliedOperations"] == 12 and upd["nodeCount"] == 7 and upd["name"] == "Order triage v2", upd)
        check("update warns about the unconnected node", any(w["code"] == "DISCONNECTED_NODE" and w.get("nodeName") == "Call API" for w in upd["validationWarnings"]), upd["validationWarnings"])
        check("update notes the HTTP Request node skipped by auto-assignment", "Call API" in (upd.get("note") or ""), upd)
        check("update returns no auto-assignment for it", upd["autoAssignedCredentials"] == [], upd)
        await fail(c, "update_workflow", {"workflowId": wid, "operations": [
            {"type": "setNodeCredential", "nodeName": "Prepare", "credentialKey": "httpHeaderAuth", "credentialId": cred_id, "credentialName": "x"}]},
            "does not accept")
        after = (await call(c, "get_workflow_details", {"workflowId": wid}))["workflow"]
        check("update: renamed and rewired", after["connections"]["Is big"]["main"][1][0]["node"] == "Small" and after["connections"]["Small"]["main"][0][0]["node"] == "Done", after["connections"])

        # Publish, run the published version, unpublish.
        await fail(c, "execute_workflow", {"workflowId": wid}, "not published")
        pub = await call(c, "publish_workflow", {"workflowId": wid})
        check("published", pub["success"] and pub["activeVersionId"], pub)
        d = (await call(c, "get_workflow_details", {"workflowId": wid}))["workflow"]
        check("details show the active version", d["active"] and d["activeVersionId"] == pub["activeVersionId"] and d["activeVersion"] is not None)
        prod = await call(c, "execute_workflow", {"workflowId": wid, "inputs": {"type": "webhook", "webhookData": {"body": {"total": 500}}}})
        check("production run succeeds", prod["status"] == "success", prod)
        unpub = await call(c, "unpublish_workflow", {"workflowId": wid})
        check("unpublished", unpub["success"])
        d = (await call(c, "get_workflow_details", {"workflowId": wid}))["workflow"]
        check("details show it inactive", not d["active"] and d["activeVersionId"] is None)

        # Plain workflow JSON is accepted as code; a chat trigger takes chat input.
        chat_wf = {"name": "Echo chat", "nodes": [
            {"name": "Chat", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "typeVersion": 1.1, "position": [0, 0], "parameters": {}},
            {"name": "Reply", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [220, 0], "parameters": {
                "assignments": {"assignments": [{"id": "r", "name": "output", "value": "=You said: {{ $json.chatInput }}", "type": "string"}]}}}],
            "connections": {"Chat": {"main": [[{"node": "Reply", "type": "main", "index": 0}]]}}}
        chat = await call(c, "create_workflow_from_code", {"code": json.dumps(chat_wf)})
        said = await call(c, "execute_workflow", {"workflowId": chat["workflowId"], "executionMode": "manual", "inputs": {"type": "chat", "chatInput": "hello"}})
        out = await call(c, "get_execution", {"workflowId": chat["workflowId"], "executionId": said["executionId"], "includeData": True, "nodeNames": ["Reply"]})
        check("chat input reaches the workflow", out["data"]["resultData"]["runData"]["Reply"][0]["data"]["main"][0][0]["json"]["output"] == "You said: hello", out["data"])
        await fail(c, "execute_workflow", {"workflowId": chat["workflowId"], "executionMode": "manual", "inputs": {"type": "webhook"}}, "chatInput")

        # Data tables.
        projects = await call(c, "search_projects", {"type": "personal"})
        pid = projects["data"][0]["id"]
        check("a personal project", projects["count"] == 1 and projects["data"][0]["type"] == "personal", projects)
        folders = await call(c, "search_folders", {"projectId": pid, "query": "client"})
        check("the seeded folder is found", folders["count"] == 1 and folders["data"][0]["name"] == "Clients" and folders["data"][0]["parentFolderId"] is None, folders)
        fid = folders["data"][0]["id"]
        await fail(c, "create_workflow_from_code", {"code": json.dumps(chat_wf), "folderId": fid}, "requires projectId")
        filed = await call(c, "create_workflow_from_code", {"code": json.dumps(chat_wf), "name": "Filed chat", "projectId": pid, "folderId": fid})
        d = (await call(c, "get_workflow_details", {"workflowId": filed["workflowId"]}))["workflow"]
        check("created in the folder", d["parentFolderId"] == fid and d["name"] == "Filed chat", d)
        dt = await call(c, "create_data_table", {"projectId": pid, "name": "orders", "columns": [{"name": "customer", "type": "string"}]})
        tid = dt["id"]
        col = await call(c, "add_data_table_column", {"dataTableId": tid, "projectId": pid, "name": "total", "type": "number"})
        check("column added", col["success"] and col["column"]["type"] == "number", col)
        note = await call(c, "add_data_table_column", {"dataTableId": tid, "projectId": pid, "name": "note", "type": "string"})
        await call(c, "rename_data_table_column", {"dataTableId": tid, "projectId": pid, "columnId": note["column"]["id"], "name": "remark"})
        await call(c, "delete_data_table_column", {"dataTableId": tid, "projectId": pid, "columnId": note["column"]["id"]})
        ins = await call(c, "add_data_table_rows", {"dataTableId": tid, "projectId": pid, "rows": [{"customer": "acme", "total": 150}, {"customer": "bits", "total": 20.5}]})
        check("rows inserted", ins["success"] and ins["insertedCount"] == 2, ins)
        await fail(c, "add_data_table_rows", {"dataTableId": tid, "projectId": pid, "rows": [{"customer": "x"}] * 1001}, "1000")
        await fail(c, "add_data_table_rows", {"dataTableId": tid, "projectId": pid, "rows": [{"customer": "ok"}, {"nope": 1}]}, "nope")
        await fail(c, "create_data_table", {"projectId": pid, "name": "orders", "columns": [{"name": "a", "type": "string"}]}, "already exists")
        await fail(c, "create_data_table", {"projectId": pid, "name": "bad", "columns": [{"name": "1abc", "type": "string"}]}, "1abc")
        await call(c, "rename_data_table", {"dataTableId": tid, "projectId": pid, "name": "orders-2026"})
        found = await call(c, "search_data_tables", {"query": "ORDERS"})
        check("search finds the table with its columns", found["count"] == 1 and [x["name"] for x in found["data"][0]["columns"]] == ["customer", "total"], found)

        # Credentials: listed, never their secret.
        creds = await call(c, "list_credentials", {})
        check("credential listed", any(x["name"] == "Orders API token" and x["type"] == "httpHeaderAuth" for x in creds["data"]), creds)
        raw = await c.call_tool("list_credentials", {"type": "header"})
        check("no secret anywhere in the result", SECRET not in json.dumps(raw.structured_content) and all(SECRET not in getattr(x, "text", "") for x in raw.content))
        d = await call(c, "get_workflow_details", {"workflowId": wid})
        check("no secret in workflow details", SECRET not in json.dumps(d))

        # Bad input: unknown tool, wrong argument types, unknown fields.
        await fail(c, "no_such_tool", {}, "unknown tool")
        await fail(c, "search_workflows", {"limit": "ten"}, "invalid arguments")
        await fail(c, "get_execution", {"workflowId": wid, "executionId": 5}, "invalid arguments")
        await fail(c, "update_workflow", {"workflowId": wid, "operations": [{"type": "explode"}]}, "invalid arguments")
        await fail(c, "test_workflow", {"workflowId": wid, "pinData": {"Ghost": [{}]}}, "Ghost")

        arch = await call(c, "archive_workflow", {"workflowId": wid})
        check("archived", arch["archived"] and arch["workflowId"] == wid)
        again = await call(c, "archive_workflow", {"workflowId": wid})
        check("archive is idempotent", again["archived"])

    print(json.dumps({"ok": True, "checks": checks, "workflowId": wid, "dataTableId": tid, "rowsInserted": 2}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as e:  # report the first failed check clearly
        print(f"FAILED after {checks} checks: {e!r}", file=sys.stderr)
        raise
