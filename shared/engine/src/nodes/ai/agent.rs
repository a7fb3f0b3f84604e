//! AI Agent (`agent`, the tools agent) and Basic LLM Chain (`chainLlm`):
//! for each input item, the prompt (the chat input or the node's text),
//! the memory's window, the model's tool-calling loop up to
//! `maxIterations`, the memory's save and the output parser's parse. Each
//! model, tool, memory and parser call is recorded as a run of its sub-node.

use serde_json::{json, Value};

use super::model::{ChatModel, ChatRequest, ChatResponse, Message, ToolCall};
use crate::stream::{ChunkKind, ChunkMetadata, StreamChunk};
use super::tools::Tool;
use super::{NodeContext, LANGUAGE_MODEL, MEMORY, OUTPUT_PARSER, TOOL};
use crate::data::item_from;
use crate::error::{EngineError, Result};
use crate::nodes::NodeOutput;
use crate::workflow::Node;

/// What the agent returns when the loop ran out of iterations (LangChain's text).
pub const MAX_ITERATIONS_OUTPUT: &str = "Agent stopped due to max iterations.";

pub fn agent(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let flavour = ctx.param_str("agent", 0, "toolsAgent")?;
    if !matches!(flavour.as_str(), "toolsAgent" | "conversationalAgent" | "openAiFunctionsAgent") {
        return Err(EngineError::node(format!("The {flavour} agent is not supported on this instance; use the Tools Agent")));
    }
    if ctx.param_bool("needsFallback", 0, false)? {
        return Err(EngineError::node("AI Agent: a fallback model (Enable Fallback Model) is not supported on this instance"));
    }
    each_item(ctx, Root::Agent)
}

pub fn chain_llm(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    each_item(ctx, Root::Chain)
}

#[derive(Clone, Copy, PartialEq)]
enum Root {
    Agent,
    Chain,
}

fn each_item(ctx: &mut NodeContext<'_>, root: Root) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = Vec::with_capacity(input.len());
    for i in 0..input.len() {
        match run_item(ctx, root, i) {
            Ok(json) => out.push(item_from(json, i)),
            Err(EngineError::Canceled) => return Err(EngineError::Canceled),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The one sub-node of `conn_type` (the first, if several are connected).
fn one_sub_node<'a>(ctx: &NodeContext<'a>, conn_type: &str) -> Option<&'a Node> {
    ctx.sub_nodes(conn_type).into_iter().next()
}

/// The user's prompt: the chat input, or the text the node defines.
fn prompt(ctx: &mut NodeContext<'_>, item: usize) -> Result<String> {
    let auto = ctx.version() >= 1.5 && ctx.param_str("promptType", item, "auto")? == "auto";
    let v = if auto {
        ctx.resolve(&json!("={{ $json.chatInput }}"), item)?
    } else {
        match ctx.raw("text").cloned() {
            Some(t) => ctx.resolve(&t, item)?,
            None => ctx.resolve(&json!("={{ $json.chatInput }}"), item)?,
        }
    };
    let text = match v {
        Value::Null => String::new(),
        other => crate::nodes::js_string(&other),
    };
    if text.trim().is_empty() {
        return Err(EngineError::node_with(
            "No prompt specified",
            if auto {
                "Expected to find the prompt in an input field called 'chatInput' (this is what the chat trigger node outputs). To use something else, change the 'Prompt' parameter"
            } else {
                "The 'Prompt (User Message)' parameter is empty"
            },
        ));
    }
    Ok(text)
}

/// n8n's default system message of the tools agent.
pub const SYSTEM_MESSAGE: &str = "You are a helpful assistant";

/// The instruction n8n's tools agent passes with every call (used only when
/// a structured output parser turns into a tool; recorded in memory's values).
const FORMATTING_INSTRUCTIONS: &str = "IMPORTANT: For your response to user, you MUST use the `format_final_json_response` tool with your complete answer formatted according to the required schema. Do not attempt to format the JSON manually - always use this tool. Your response will be rejected if it is not properly formatted through this tool. Only use this tool once you are ready to provide your final answer.";

fn run_item(ctx: &mut NodeContext<'_>, root: Root, item: usize) -> Result<Value> {
    let model_node = one_sub_node(ctx, LANGUAGE_MODEL).ok_or_else(|| {
        EngineError::node_with("A Chat Model sub-node must be connected and enabled", "connect a chat model (e.g. OpenAI Chat Model) to the node's Chat Model input")
    })?;
    let model = ctx.with_sub_node(model_node, None, |c| super::model::supply(c, item))?;
    let text = prompt(ctx, item)?;
    let wants_parser = root == Root::Chain || ctx.version() < 1.1 || ctx.param_bool("hasOutputParser", item, false)?;
    let parser = match one_sub_node(ctx, OUTPUT_PARSER).filter(|_| wants_parser) {
        Some(p) => Some((p, ctx.with_sub_node(p, None, |c| super::output_parser::supply(c, item))?)),
        None => None,
    };
    let memory = match one_sub_node(ctx, MEMORY).filter(|_| root == Root::Agent) {
        Some(m) => Some((m, ctx.with_sub_node(m, None, |c| super::memory::supply(c, item))?)),
        None => None,
    };
    let mut messages = vec![];
    let system_message = match root {
        Root::Agent => ctx.param_str("options.systemMessage", item, SYSTEM_MESSAGE)?,
        Root::Chain => String::new(),
    };
    let mut system = match root {
        Root::Agent => system_message.clone(),
        Root::Chain => chain_messages(ctx, item, &mut messages)?,
    };
    if let Some((_, p)) = &parser {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&p.format_instructions());
    }
    if !system.is_empty() {
        messages.insert(0, Message::System { content: system });
    }
    // what LangChain's AgentExecutor hands memory (its chain inputs)
    let memory_values = json!({"input": text, "system_message": system_message, "formatting_instructions": FORMATTING_INSTRUCTIONS});
    if let Some((node, mem)) = &memory {
        let call = ctx.begin_call(&node.name, MEMORY, json!({"action": "loadMemoryVariables", "values": memory_values}));
        let history = mem.load();
        let out = history.as_ref().map(|h| json!({"action": "loadMemoryVariables", "chatHistory": h.iter().map(super::memory::lc_message).collect::<Vec<_>>()}));
        ctx.end_call_one(call, out.as_ref().map_err(|e| *e));
        messages.extend(history?);
    }
    messages.push(Message::User { content: text.clone() });

    let tools: Vec<Tool<'_>> = if root == Root::Agent {
        let mut tools = vec![];
        for t in ctx.sub_nodes(TOOL) {
            tools.extend(ctx.with_sub_node(t, None, |c| super::tools::supply_all(c, t, item))?);
        }
        tools
    } else {
        vec![]
    };
    let specs: Vec<_> = tools.iter().map(|t| t.spec.clone()).collect();
    let max_iterations = if root == Root::Agent { ctx.param_f64("options.maxIterations", item, 10.0)?.max(1.0) as usize } else { 1 };
    // n8n streams the tools agent's answer from version 2.1 when the caller waits for a stream
    let streaming = root == Root::Agent && ctx.version() >= 2.1 && ctx.env.stream.is_some() && ctx.param_bool("options.enableStreaming", item, true)?;
    let stream = streaming.then(|| Streamer::new(ctx, item));
    if let Some(s) = &stream {
        s.send(ChunkKind::Begin, None);
    }
    let mut streamed = String::new();
    let mut steps = vec![];
    let mut answer = None;
    for _ in 0..max_iterations {
        let resp = call_model(ctx, model_node, &model, &messages, &specs, stream.as_ref(), &mut streamed)?;
        if resp.tool_calls.is_empty() || root == Root::Chain {
            answer = Some(resp.content);
            break;
        }
        messages.push(Message::Assistant { content: resp.content.clone(), tool_calls: resp.tool_calls.clone() });
        for call in &resp.tool_calls {
            let observation = call_tool(ctx, &tools, call, item)?;
            let log = if resp.content.is_empty() { format!("Calling {} with input: {}", call.name, call.arguments) } else { resp.content.clone() };
            steps.push(json!({
                "action": {"tool": call.name, "toolInput": call.arguments, "log": log, "toolCallId": call.id, "type": "tool_call"},
                "observation": observation,
            }));
            messages.push(Message::Tool { tool_call_id: call.id.clone(), name: call.name.clone(), content: observation });
        }
    }
    if let Some(s) = &stream {
        s.send(ChunkKind::End, None);
    }
    let answer = answer.unwrap_or_else(|| MAX_ITERATIONS_OUTPUT.to_owned());
    let output = match &parser {
        Some((node, p)) if answer != MAX_ITERATIONS_OUTPUT => {
            let call = ctx.begin_call(&node.name, OUTPUT_PARSER, json!({"action": "parse", "text": answer}));
            let parsed = p.parse(&answer);
            let out = parsed.as_ref().map(|v| json!({"action": "parse", "response": v}));
            ctx.end_call_one(call, out.as_ref().map_err(|e| *e));
            parsed?
        }
        // a streamed answer is everything the model streamed, as n8n's event stream collects it
        _ if streaming => Value::String(streamed.clone()),
        _ => Value::String(answer.clone()),
    };
    if let Some((node, mem)) = &memory {
        let call = ctx.begin_call(&node.name, MEMORY, json!({"action": "saveContext", "input": memory_values, "output": {"output": answer}}));
        let saved = mem.save(&text, &answer);
        let out = saved.as_ref().map(|h| json!({"action": "saveContext", "chatHistory": h.iter().map(super::memory::lc_message).collect::<Vec<_>>()}));
        ctx.end_call_one(call, out.as_ref().map_err(|e| *e));
        saved?;
    }
    let key = if root == Root::Chain && parser.is_none() { "text" } else { "output" };
    let mut json = json!({ key: output });
    if root == Root::Agent && ctx.param_bool("options.returnIntermediateSteps", item, false)? {
        json["intermediateSteps"] = Value::Array(steps);
    }
    Ok(json)
}

/// Sends a root node's chunks of one item to the streaming caller.
pub(crate) struct Streamer {
    hook: crate::stream::StreamHook,
    node_id: String,
    node_name: String,
    item: usize,
    run_index: usize,
}

impl Streamer {
    pub(crate) fn new(ctx: &NodeContext<'_>, item: usize) -> Self {
        Streamer {
            hook: ctx.env.stream.clone().expect("a streaming run"),
            node_id: ctx.node.id.clone(),
            node_name: ctx.node.name.clone(),
            item,
            run_index: ctx.run_index,
        }
    }

    pub(crate) fn send(&self, kind: ChunkKind, content: Option<String>) {
        self.hook.send(StreamChunk {
            kind,
            content,
            metadata: ChunkMetadata { node_id: self.node_id.clone(), node_name: self.node_name.clone(), item_index: self.item, run_index: self.run_index, timestamp: Some(crate::data::now_ms()) },
        });
    }
}

/// Basic LLM Chain's extra messages (`messages.messageValues`); returns its system text.
fn chain_messages(ctx: &mut NodeContext<'_>, item: usize, messages: &mut Vec<Message>) -> Result<String> {
    let mut system = vec![];
    for m in ctx.param("messages.messageValues", item, json!([]))?.as_array().cloned().unwrap_or_default() {
        let text = m.get("message").map(crate::nodes::js_string).unwrap_or_default();
        match m.get("type").and_then(Value::as_str).unwrap_or("SystemMessagePromptTemplate") {
            "HumanMessagePromptTemplate" => messages.push(Message::User { content: text }),
            "AIMessagePromptTemplate" => messages.push(Message::Assistant { content: text, tool_calls: vec![] }),
            _ => system.push(text),
        }
    }
    Ok(system.join("\n\n"))
}

/// The conversation as one prompt string, as LangChain's `getBufferString`
/// writes it for the tracing n8n records (`Human: …\nAI: …`).
pub(crate) fn buffer_string(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| match m {
            Message::System { content } => format!("System: {content}"),
            Message::User { content } => format!("Human: {content}"),
            Message::Assistant { content, .. } => format!("AI: {content}"),
            Message::Tool { content, .. } => format!("Tool: {content}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A token count estimate for text (about four characters a token; n8n
/// estimates with tiktoken when a provider reports no usage).
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// One model call, recorded as a run of the model sub-node as n8n's
/// `N8nLlmTracing` records it: in `{messages: [prompt], estimatedTokens,
/// options}`, out `{response: {generations: [[{text, generationInfo}]]},
/// tokenUsage}` (`tokenUsageEstimate` when the provider reported none). The
/// text streams to `stream` as it arrives and is appended to `streamed`.
pub(crate) fn call_model(
    ctx: &mut NodeContext<'_>,
    node: &Node,
    model: &ChatModel,
    messages: &[Message],
    tools: &[super::model::ToolSpec],
    stream: Option<&Streamer>,
    streamed: &mut String,
) -> Result<ChatResponse> {
    let prompt = buffer_string(messages);
    let estimated = estimate_tokens(&prompt);
    let input = json!({"messages": [prompt], "estimatedTokens": estimated, "options": model.options()});
    let call = ctx.begin_call(&node.name, LANGUAGE_MODEL, input);
    let res = model.chat(ctx.env, &ChatRequest { messages, tools }, &mut |t: &str| {
        streamed.push_str(t);
        if let Some(s) = stream {
            s.send(ChunkKind::Item, Some(t.to_owned()));
        }
    });
    let out = res.as_ref().map(|r| {
        let mut o = json!({"response": {"generations": [[{"text": r.content, "generationInfo": {"finish_reason": r.finish_reason}}]]}});
        let u = r.usage;
        if u.prompt_tokens > 0 || u.completion_tokens > 0 {
            o["tokenUsage"] = json!({"completionTokens": u.completion_tokens, "promptTokens": u.prompt_tokens, "totalTokens": u.total_tokens});
        } else {
            let completion = estimate_tokens(&r.content);
            o["tokenUsageEstimate"] = json!({"completionTokens": completion, "promptTokens": estimated, "totalTokens": completion + estimated});
        }
        o
    });
    ctx.end_call_one(call, out.as_ref().map_err(|e| *e));
    if let Ok(r) = &res {
        ctx.add_tokens(r.usage);
    }
    res
}

/// One tool call, recorded as a run of the tool sub-node. A tool's failure
/// goes back to the model as the observation (it may retry or explain), as
/// LangChain's tool error handling does; a cancel stops the run.
fn call_tool(ctx: &mut NodeContext<'_>, tools: &[Tool<'_>], call: &ToolCall, item: usize) -> Result<String> {
    let Some(tool) = tools.iter().find(|t| t.spec.name == call.name) else {
        return Ok(format!("{} is not a valid tool, try another one.", call.name));
    };
    let rec = ctx.begin_call(&tool.node.name, TOOL, tool.record_input(&call.arguments));
    let args = call.arguments.clone();
    let res = ctx.with_sub_node(tool.node, Some(args.clone()), |c| tool.run(c, &args, item));
    // the tool's own run record carries the metadata (a sub-workflow link)
    ctx.end_call(rec, res.as_ref().map(|r| r.record.clone()).map_err(|e| e));
    match res {
        Ok(r) => Ok(r.observation),
        Err(EngineError::Canceled) => Err(EngineError::Canceled),
        Err(e) => Ok(format!("There was an error: \"{e}\"")),
    }
}
