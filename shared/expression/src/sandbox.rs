//! The QuickJS sandbox: one runtime + context with Luxon, the n8n prelude and
//! native host callbacks. No module loader, no std/os modules: scripts see only
//! ECMAScript built-ins plus what the prelude defines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use base64::Engine as _;
use rquickjs::context::EvalOptions;
use rquickjs::function::Func;
use rquickjs::{Array, Context, Ctx, Function, Object, Persistent, Runtime, Type, Value as JsValue};
use serde_json::Value;

use crate::fast::num_to_json;
use crate::{DataProxy, ExpressionError, Item, Json, Limits, PairedItem};

const INTL_JS: &str = include_str!("../js/intl.js");
const LUXON_JS: &str = include_str!("../js/luxon.min.js");
const PRELUDE_JS: &str = include_str!("../js/prelude.js");
const JMESPATH_JS: &str = include_str!("../js/jmespath.js");

/// Most functions kept compiled at once; the cache is cleared when full.
const MAX_CACHED_FUNCTIONS: usize = 4096;
/// Console output kept per script, so a chatty loop cannot exhaust host memory.
const MAX_CONSOLE_BYTES: usize = 1 << 20;

/// The data of the evaluation in progress, reachable from host callbacks.
struct DataPtr(*const (dyn DataProxy + 'static));
// SAFETY: the pointer is only set while an evaluation runs on the thread that
// owns the `&dyn DataProxy` (see `Sandbox::with_data`), and is cleared before
// that call returns; between evaluations it is `None`.
unsafe impl Send for DataPtr {}

#[derive(Default)]
struct HostState {
    data: Option<DataPtr>,
    console: Vec<String>,
    console_bytes: usize,
}

type Host = Arc<Mutex<HostState>>;

fn with_proxy<R>(host: &Host, f: impl FnOnce(&dyn DataProxy) -> R) -> rquickjs::Result<R> {
    let guard = host.lock().map_err(|_| rquickjs::Error::Unknown)?;
    match &guard.data {
        // SAFETY: set by `with_data` for exactly the duration of the evaluation
        Some(p) => Ok(f(unsafe { &*p.0 })),
        None => Err(rquickjs::Error::Unknown),
    }
}

pub(crate) enum Failure {
    Syntax(String),
    Runtime(String),
    Timeout,
    OutOfMemory,
    Sandbox(String),
}

impl Failure {
    pub(crate) fn into_error(self, expression: &str, limits: &Limits) -> ExpressionError {
        let expression = expression.to_string();
        match self {
            Failure::Syntax(message) => ExpressionError::Syntax { expression, message },
            Failure::Runtime(message) => ExpressionError::Runtime { expression, message },
            Failure::Timeout => {
                ExpressionError::Timeout { expression, limit_ms: limits.timeout.as_millis() as u64 }
            }
            Failure::OutOfMemory => {
                ExpressionError::OutOfMemory { expression, limit_bytes: limits.memory_bytes }
            }
            Failure::Sandbox(m) => ExpressionError::Sandbox(m),
        }
    }
    /// After these the runtime may be in a bad state: rebuild it.
    pub(crate) fn is_fatal(&self) -> bool {
        matches!(self, Failure::Timeout | Failure::OutOfMemory | Failure::Sandbox(_))
    }
}

pub(crate) struct Sandbox {
    // field order matters: persistent handles must drop before the runtime
    funcs: HashMap<String, Persistent<Function<'static>>>,
    state: Persistent<Object<'static>>,
    set_zone: Persistent<Function<'static>>,
    set_now: Persistent<Function<'static>>,
    /// The prelude's timer queue (`next`, `run`, `reset`).
    timers: Persistent<Object<'static>>,
    ctx: Context,
    _rt: Runtime,
    host: Host,
    gen: u64,
    epoch: Instant,
    /// Deadline in microseconds since `epoch`; 0 = none.
    deadline: Arc<AtomicU64>,
    interrupted: Arc<AtomicBool>,
    limits: Limits,
    pub(crate) proto_names: Vec<String>,
}

// SAFETY: `Persistent` handles are !Send only because they could outlive or
// leave their runtime; here they are owned together with it, dropped before
// it, and only touched inside `Context::with`, which locks the runtime
// (rquickjs' `parallel` feature makes Runtime/Context themselves Send).
unsafe impl Send for Sandbox {}

fn sandbox_err(e: impl std::fmt::Display) -> Failure {
    Failure::Sandbox(e.to_string())
}

impl Sandbox {
    pub(crate) fn new(limits: Limits, timezone: &str) -> Result<Sandbox, Failure> {
        let rt = Runtime::new().map_err(sandbox_err)?;
        // setup needs headroom beyond tiny user limits: Luxon alone is ~2 MB
        rt.set_memory_limit(limits.memory_bytes.max(8 << 20));
        rt.set_max_stack_size(512 * 1024);
        let epoch = Instant::now();
        let deadline = Arc::new(AtomicU64::new(0));
        let interrupted = Arc::new(AtomicBool::new(false));
        {
            let deadline = deadline.clone();
            let interrupted = interrupted.clone();
            rt.set_interrupt_handler(Some(Box::new(move || {
                let d = deadline.load(Ordering::Relaxed);
                if d != 0 && epoch.elapsed().as_micros() as u64 > d {
                    interrupted.store(true, Ordering::Relaxed);
                    return true;
                }
                false
            })));
        }
        let ctx = Context::full(&rt).map_err(sandbox_err)?;
        let host: Host = Arc::new(Mutex::new(HostState::default()));

        let setup = ctx.with(|ctx| -> rquickjs::Result<_> {
            let boot = boot_module(&ctx)?;
            let intl: Function = boot.get("intl")?;
            intl.call::<_, ()>((Func::from(tz_offset),))?;
            let luxon: JsValue = boot.get("luxon")?;
            let jmespath: JsValue = boot.get("jmespath")?;
            let h = host_object(&ctx, &host)?;
            let prelude: Function = boot.get("prelude")?;
            let handles: Object = prelude.call((h, luxon, jmespath))?;
            let state: Object = handles.get("state")?;
            let set_zone: Function = handles.get("setZone")?;
            let set_now: Function = handles.get("setNow")?;
            let timers: Object = handles.get("timers")?;
            let names: Vec<String> = ctx.eval("Object.getOwnPropertyNames(Object.prototype)")?;
            Ok((
                Persistent::save(&ctx, state),
                Persistent::save(&ctx, set_zone),
                Persistent::save(&ctx, set_now),
                Persistent::save(&ctx, timers),
                names,
            ))
        });
        let (state, set_zone, set_now, timers, proto_names) = match setup {
            Ok(v) => v,
            Err(e) => {
                let msg = ctx.with(|ctx| exception_message(&ctx, e));
                return Err(Failure::Sandbox(format!("sandbox setup failed: {msg}")));
            }
        };
        rt.set_memory_limit(limits.memory_bytes);
        let mut sb = Sandbox {
            funcs: HashMap::new(),
            state,
            set_zone,
            set_now,
            timers,
            ctx,
            _rt: rt,
            host,
            gen: 0,
            epoch,
            deadline,
            interrupted,
            limits,
            proto_names,
        };
        sb.set_timezone(timezone)?;
        Ok(sb)
    }

    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        self._rt.set_memory_limit(limits.memory_bytes);
    }

    pub(crate) fn set_timezone(&mut self, tz: &str) -> Result<(), Failure> {
        let f = self.set_zone.clone();
        self.ctx.with(|ctx| {
            let f = f.restore(&ctx).map_err(sandbox_err)?;
            f.call::<_, ()>((tz,)).map_err(|e| Failure::Runtime(exception_message(&ctx, e)))
        })
    }

    /// Freezes the script clock at `epoch_ms` (`None`: the system clock).
    pub(crate) fn set_clock(&mut self, epoch_ms: Option<i64>) -> Result<(), Failure> {
        let f = self.set_now.clone();
        self.ctx.with(|ctx| {
            let f = f.restore(&ctx).map_err(sandbox_err)?;
            let ms: Option<f64> = epoch_ms.map(|m| m as f64);
            f.call::<_, ()>((ms,)).map_err(|e| Failure::Runtime(exception_message(&ctx, e)))
        })
    }

    /// Runs `f` with `data` reachable from host callbacks and the time limit armed.
    fn with_data<R>(&mut self, data: &dyn DataProxy, f: impl FnOnce(&mut Self) -> R) -> R {
        struct Reset<'a>(&'a Host, &'a AtomicU64);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.1.store(0, Ordering::Relaxed);
                if let Ok(mut g) = self.0.lock() {
                    g.data = None;
                }
            }
        }
        // SAFETY: erasing the lifetime is sound because `Reset` clears the
        // pointer before this function returns (also on unwind).
        let ptr: *const (dyn DataProxy + '_) = data;
        let ptr: *const (dyn DataProxy + 'static) = unsafe { std::mem::transmute(ptr) };
        if let Ok(mut g) = self.host.lock() {
            g.data = Some(DataPtr(ptr));
            g.console.clear();
            g.console_bytes = 0;
        }
        self.gen = self.gen.wrapping_add(1);
        self.interrupted.store(false, Ordering::Relaxed);
        let limit = self.epoch.elapsed() + self.limits.timeout;
        self.deadline.store((limit.as_micros() as u64).max(1), Ordering::Relaxed);
        let host = self.host.clone();
        let deadline = self.deadline.clone();
        let _reset = Reset(&host, &deadline);
        f(self)
    }

    fn classify(&self, ctx: &Ctx, e: rquickjs::Error) -> Failure {
        if self.interrupted.load(Ordering::Relaxed) {
            // clear the pending exception so the context is clean
            let _ = ctx.catch();
            return Failure::Timeout;
        }
        if matches!(e, rquickjs::Error::Allocation) {
            let _ = ctx.catch();
            return Failure::OutOfMemory;
        }
        let msg = exception_message(ctx, e);
        if msg.contains("out of memory") {
            return Failure::OutOfMemory;
        }
        if msg.starts_with("SyntaxError") {
            return Failure::Syntax(msg);
        }
        Failure::Runtime(msg)
    }

    fn function<'js>(&mut self, ctx: &Ctx<'js>, source: &str) -> Result<Function<'js>, Failure> {
        if let Some(f) = self.funcs.get(source) {
            return f.clone().restore(ctx).map_err(sandbox_err);
        }
        let mut opts = EvalOptions::default();
        // n8n evaluates expressions in sloppy mode
        opts.strict = false;
        opts.filename = Some("expression".into());
        let f: Function = match ctx.eval_with_options(source, opts) {
            Ok(f) => f,
            Err(e) => return Err(self.classify(ctx, e)),
        };
        if self.funcs.len() >= MAX_CACHED_FUNCTIONS {
            self.funcs.clear();
        }
        self.funcs.insert(source.to_string(), Persistent::save(ctx, f.clone()));
        Ok(f)
    }

    /// Calls the function compiled from `source` (an expression wrapper) and
    /// converts its result.
    pub(crate) fn eval_expression(
        &mut self,
        source: &str,
        data: &dyn DataProxy,
    ) -> Result<Value, Failure> {
        self.with_data(data, |sb| {
            let ctx = sb.ctx.clone();
            ctx.with(|ctx| {
                sb.bump_gen(&ctx)?;
                let f = sb.function(&ctx, source)?;
                let v: JsValue = match f.call(()) {
                    Ok(v) => v,
                    Err(e) => return Err(sb.classify(&ctx, e)),
                };
                if v.is_function() {
                    let name: String = v
                        .as_object()
                        .and_then(|o| o.get::<_, String>("name").ok())
                        .unwrap_or_default();
                    return Err(Failure::Runtime(if name == "DateTime" {
                        "this is a DateTime, please access its methods".into()
                    } else {
                        "this is a function, please add ()".into()
                    }));
                }
                match to_json(&ctx, &v) {
                    Ok(j) => Ok(j.unwrap_or(Value::Null)),
                    Err(e) => Err(sb.classify(&ctx, e)),
                }
            })
        })
    }

    /// Runs a Code node wrapper (an async function) to completion.
    pub(crate) fn run_script(
        &mut self,
        source: &str,
        data: &dyn DataProxy,
    ) -> Result<(Value, Vec<String>), Failure> {
        self.run_script_as(source, data, |ctx, v| Ok(to_json(ctx, v)?.unwrap_or(Value::Null)))
    }

    /// Runs a `runOnceForAllItems` Code node wrapper and reads its result
    /// straight into items (see [`to_items`]).
    pub(crate) fn run_script_items(
        &mut self,
        source: &str,
        data: &dyn DataProxy,
    ) -> Result<(Vec<Item>, Vec<String>), Failure> {
        let r = self.run_script_as(source, data, to_items);
        if r.as_ref().is_ok_and(|(items, _)| items.len() >= GC_AFTER_ITEMS) {
            // a large result leaves its objects to the cycle collector (async
            // frames, closures): freed now, before the host's next nodes
            // allocate beside them
            self._rt.run_gc();
        }
        r
    }

    fn run_script_as<R>(
        &mut self,
        source: &str,
        data: &dyn DataProxy,
        convert: for<'js> fn(&Ctx<'js>, &JsValue<'js>) -> rquickjs::Result<R>,
    ) -> Result<(R, Vec<String>), Failure> {
        let result = self.with_data(data, |sb| {
            let ctx = sb.ctx.clone();
            ctx.with(|ctx| {
                sb.bump_gen(&ctx)?;
                let f = sb.function(&ctx, source)?;
                let v: JsValue = match f.call(()) {
                    Ok(v) => v,
                    Err(e) => return Err(sb.classify(&ctx, e)),
                };
                let timers = sb.timers.clone().restore(&ctx).map_err(sandbox_err)?;
                let settled = sb.settle(&ctx, &timers, v);
                // timers a script did not wait for are dropped with it
                let reset: rquickjs::Result<Function> = timers.get("reset");
                if let Ok(f) = reset {
                    let _ = f.call::<_, ()>(());
                }
                let v = settled?;
                match convert(&ctx, &v) {
                    Ok(r) => Ok(r),
                    Err(e) => Err(sb.classify(&ctx, e)),
                }
            })
        });
        let console = match self.host.lock() {
            Ok(mut g) => std::mem::take(&mut g.console),
            Err(_) => Vec::new(),
        };
        result.map(|v| (v, console))
    }

    /// Drives a script's result to completion: promise jobs first, then the
    /// earliest timer (sleeping until it is due), until the promise settles,
    /// all under the time limit; then drains the jobs left.
    fn settle<'js>(&self, ctx: &Ctx<'js>, timers: &Object<'js>, v: JsValue<'js>) -> Result<JsValue<'js>, Failure> {
        let v = match v.clone().into_promise() {
            Some(p) => loop {
                if let Some(r) = p.result::<JsValue>() {
                    match r {
                        Ok(v) => break v,
                        Err(e) => return Err(self.classify(ctx, e)),
                    }
                }
                if ctx.execute_pending_job() {
                    continue;
                }
                if self.interrupted.load(Ordering::Relaxed) {
                    return Err(Failure::Timeout);
                }
                let next: f64 = timers
                    .get::<_, Function>("next")
                    .and_then(|f| f.call(()))
                    .map_err(|e| self.classify(ctx, e))?;
                if next < 0.0 {
                    return Err(Failure::Runtime("script awaited something that never settles".into()));
                }
                self.sleep_within_limit(std::time::Duration::from_micros((next * 1000.0) as u64))?;
                timers
                    .get::<_, Function>("run")
                    .and_then(|f| f.call::<_, ()>(()))
                    .map_err(|e| self.classify(ctx, e))?;
            },
            None => v,
        };
        // drain leftover jobs (unawaited promises) under the same deadline
        while ctx.execute_pending_job() {
            if self.interrupted.load(Ordering::Relaxed) {
                return Err(Failure::Timeout);
            }
        }
        Ok(v)
    }

    /// Sleeps `d`, or fails with a timeout when the time limit ends first.
    fn sleep_within_limit(&self, d: std::time::Duration) -> Result<(), Failure> {
        let deadline = self.deadline.load(Ordering::Relaxed);
        let now = self.epoch.elapsed().as_micros() as u64;
        if deadline != 0 && now + d.as_micros() as u64 > deadline {
            std::thread::sleep(std::time::Duration::from_micros(deadline.saturating_sub(now)));
            self.interrupted.store(true, Ordering::Relaxed);
            return Err(Failure::Timeout);
        }
        std::thread::sleep(d);
        Ok(())
    }

    fn bump_gen(&self, ctx: &Ctx) -> Result<(), Failure> {
        let state = self.state.clone().restore(ctx).map_err(sandbox_err)?;
        state.set("gen", self.gen as f64).map_err(sandbox_err)
    }
}

/// Intl polyfill, Luxon and the prelude as one module, compiled to QuickJS
/// bytecode once per process: later sandboxes only load the bytecode, which
/// is several times faster than parsing ~100 kB of JavaScript again.
static BOOT_BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();

fn boot_module<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<rquickjs::Module<'js, rquickjs::module::Evaluated>> {
    let declared = match BOOT_BYTECODE.get() {
        // SAFETY: the bytes were written by `Module::write` of this same
        // QuickJS build in this process, and live for 'static (ROM data).
        Some(bytes) => unsafe { rquickjs::Module::load(ctx.clone(), bytes)? },
        None => {
            // Luxon and jmespath are wrapped so their globals stay out of the global scope
            let source = format!(
                "export const intl = {INTL_JS};\nexport const luxon = (function(){{\n{LUXON_JS}\nreturn luxon;\n}})();\nexport const jmespath = (function(){{\nvar exports = {{}};\n{JMESPATH_JS}\nreturn exports;\n}})();\nexport const prelude = {PRELUDE_JS};\n"
            );
            let m = rquickjs::Module::declare(ctx.clone(), "n8n:boot", source)?;
            let opts = rquickjs::module::WriteOptions { strip_source: true, ..Default::default() };
            if let Ok(bytes) = m.write(opts) {
                let _ = BOOT_BYTECODE.set(bytes);
            }
            m
        }
    };
    let (m, promise) = declared.eval()?;
    promise.finish::<()>()?;
    Ok(m)
}

/// The message of a thrown value, without the `__n8n_` call rewriting.
fn exception_message(ctx: &Ctx, e: rquickjs::Error) -> String {
    exception_text(ctx, e).replace("__n8n_", "")
}

fn exception_text(ctx: &Ctx, e: rquickjs::Error) -> String {
    if !matches!(e, rquickjs::Error::Exception) {
        return e.to_string();
    }
    let v = ctx.catch();
    if let Some(o) = v.as_object() {
        let name: Option<String> = o.get("name").ok();
        let message: Option<String> = o.get("message").ok();
        if let Some(m) = message {
            return match name {
                Some(n) if !n.is_empty() && n != "Error" => format!("{n}: {m}"),
                _ => m,
            };
        }
    }
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return s;
    }
    if v.is_null() || v.is_undefined() {
        return "out of memory".into();
    }
    format!("{v:?}")
}

// ---------------------------------------------------------------- host callbacks

fn host_object<'js>(ctx: &Ctx<'js>, host: &Host) -> rquickjs::Result<Object<'js>> {
    let h = Object::new(ctx.clone())?;

    let hh = host.clone();
    h.set(
        "currentItem",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<JsValue<'js>> {
            let item = with_proxy(&hh, |d| {
                let i = d.item_index();
                if i < 0 {
                    None
                } else {
                    d.input_items().get(i as usize).cloned()
                }
            })?;
            match item {
                Some(it) => item_to_js(&ctx, &it),
                None => Ok(JsValue::new_undefined(ctx)),
            }
        }),
    )?;

    let hh = host.clone();
    h.set(
        "inputAll",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<Array<'js>> {
            let guard = hh.lock().map_err(|_| rquickjs::Error::Unknown)?;
            let Some(p) = &guard.data else { return Err(rquickjs::Error::Unknown) };
            // SAFETY: see `with_proxy`
            let d: &dyn DataProxy = unsafe { &*p.0 };
            items_to_js(&ctx, d.input_items())
        }),
    )?;

    let hh = host.clone();
    h.set(
        "itemIndex",
        Function::new(ctx.clone(), move || -> rquickjs::Result<f64> {
            with_proxy(&hh, |d| d.item_index() as f64)
        }),
    )?;

    let hh = host.clone();
    h.set(
        "runIndex",
        Function::new(ctx.clone(), move || -> rquickjs::Result<f64> {
            with_proxy(&hh, |d| d.run_index() as f64)
        }),
    )?;

    let hh = host.clone();
    h.set(
        "nodeOutput",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, output: f64, run: f64| -> rquickjs::Result<JsValue<'js>> {
                let output = if output.is_finite() && output >= 0.0 { output as usize } else { 0 };
                let run = if run.is_finite() && run >= 0.0 { Some(run as usize) } else { None };
                let items = with_proxy(&hh, |d| d.node_output(&name, output, run))?;
                match items {
                    Some(items) => Ok(items_to_js(&ctx, &items)?.into_value()),
                    None => Ok(JsValue::new_null(ctx)),
                }
            },
        ),
    )?;

    let hh = host.clone();
    h.set(
        "nodeItem",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, output: f64, run: f64, index: f64| -> rquickjs::Result<JsValue<'js>> {
                let output = if output.is_finite() && output >= 0.0 { output as usize } else { 0 };
                let run = if run.is_finite() && run >= 0.0 { Some(run as usize) } else { None };
                let index = if index.is_finite() { index as i64 } else { 0 };
                match with_proxy(&hh, |d| d.node_item(&name, output, run, index))? {
                    Some(Some(it)) => item_to_js(&ctx, &it),
                    Some(None) => Ok(JsValue::new_undefined(ctx)),
                    None => Err(rquickjs::Exception::throw_message(
                        &ctx,
                        &format!("Node '{name}' hasn't been executed"),
                    )),
                }
            },
        ),
    )?;

    let hh = host.clone();
    h.set(
        "pairedItem",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, index: f64| -> rquickjs::Result<JsValue<'js>> {
                let index = if index.is_finite() && index >= 0.0 { index as usize } else { 0 };
                match with_proxy(&hh, |d| d.paired_item(&name, index))? {
                    Ok(it) => item_to_js(&ctx, &it),
                    Err(msg) => Err(rquickjs::Exception::throw_message(&ctx, &msg)),
                }
            },
        ),
    )?;

    for (key, getter) in [
        ("parameters", (|d: &dyn DataProxy| d.parameters()) as fn(&dyn DataProxy) -> Value),
        ("workflow", |d: &dyn DataProxy| d.workflow()),
        ("execution", |d: &dyn DataProxy| d.execution()),
        ("vars", |d: &dyn DataProxy| d.vars()),
    ] {
        let hh = host.clone();
        h.set(
            key,
            Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<JsValue<'js>> {
                let v = with_proxy(&hh, getter)?;
                to_js(&ctx, &v)
            }),
        )?;
    }

    let hh = host.clone();
    h.set(
        "prevNode",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<JsValue<'js>> {
            match with_proxy(&hh, |d| d.prev_node())? {
                Some(v) => to_js(&ctx, &v),
                None => Ok(JsValue::new_undefined(ctx)),
            }
        }),
    )?;

    let hh = host.clone();
    h.set(
        "fromAIInput",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>| -> rquickjs::Result<JsValue<'js>> {
            match with_proxy(&hh, |d| d.from_ai_input())? {
                Some(v) => to_js(&ctx, &v),
                None => Ok(JsValue::new_undefined(ctx)),
            }
        }),
    )?;

    let hh = host.clone();
    h.set(
        "nodeParameters",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, name: String| -> rquickjs::Result<JsValue<'js>> {
            match with_proxy(&hh, |d| d.node_parameters(&name))? {
                Some(v) => to_js(&ctx, &v),
                None => Ok(Object::new(ctx)?.into_value()),
            }
        }),
    )?;

    let hh = host.clone();
    h.set(
        "nodeContext",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, name: String| -> rquickjs::Result<JsValue<'js>> {
            match with_proxy(&hh, |d| d.node_context(&name))? {
                Some(v) => to_js(&ctx, &v),
                None => Ok(Object::new(ctx)?.into_value()),
            }
        }),
    )?;

    h.set(
        "hash",
        Function::new(ctx.clone(), |alg: String, s: String| -> Option<String> { hash(&alg, &s) }),
    )?;
    h.set(
        "base64Encode",
        Function::new(ctx.clone(), |s: String| -> String {
            base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
        }),
    )?;
    h.set(
        "base64Decode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, s: String| -> rquickjs::Result<String> {
            let cleaned: String = s.chars().filter(|c| !c.is_whitespace()).collect();
            let trimmed = cleaned.trim_end_matches('=');
            let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(trimmed)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed))
                .map_err(|e| rquickjs::Exception::throw_message(&ctx, &format!("invalid base64: {e}")))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }),
    )?;

    let hh = host.clone();
    h.set(
        "console",
        Function::new(ctx.clone(), move |_level: String, line: String| {
            if let Ok(mut g) = hh.lock() {
                if g.console_bytes + line.len() <= MAX_CONSOLE_BYTES {
                    g.console_bytes += line.len();
                    g.console.push(line);
                }
            }
        }),
    )?;
    Ok(h)
}

/// Offset of `zone` from UTC in minutes at `epoch_ms`, or NaN for unknown zones.
fn tz_offset(zone: String, epoch_ms: f64) -> f64 {
    crate::tz::offset_minutes(&zone, epoch_ms).unwrap_or(f64::NAN)
}

fn hash(alg: &str, s: &str) -> Option<String> {
    use sha2::Digest;
    let b = s.as_bytes();
    Some(match alg {
        "md5" => hex::encode(md5::Md5::digest(b)),
        "sha1" => hex::encode(sha1::Sha1::digest(b)),
        "sha224" => hex::encode(sha2::Sha224::digest(b)),
        "sha256" => hex::encode(sha2::Sha256::digest(b)),
        "sha384" => hex::encode(sha2::Sha384::digest(b)),
        "sha512" => hex::encode(sha2::Sha512::digest(b)),
        "sha3" => hex::encode(sha3::Sha3_512::digest(b)),
        _ => return None,
    })
}

// ---------------------------------------------------------------- conversions

/// Item data into JS, built natively (about twice as fast as JSON text
/// through `JSON.parse` for large inputs, and without the text's memory).
pub(crate) fn to_js<'js>(ctx: &Ctx<'js>, v: &Value) -> rquickjs::Result<JsValue<'js>> {
    value_to_js(ctx, v, 0)
}

/// [`to_js`] at nesting `depth`: data deeper than [`MAX_DEPTH`] (which only
/// Rust code can build, serde_json's parser stops at 128) is refused rather
/// than allowed to overflow the thread's stack.
fn value_to_js<'js>(ctx: &Ctx<'js>, v: &Value, depth: usize) -> rquickjs::Result<JsValue<'js>> {
    Ok(match v {
        Value::Null => JsValue::new_null(ctx.clone()),
        Value::Bool(b) => JsValue::new_bool(ctx.clone(), *b),
        Value::Number(n) => match n.as_i64() {
            Some(i) if i >= i32::MIN as i64 && i <= i32::MAX as i64 => {
                JsValue::new_int(ctx.clone(), i as i32)
            }
            _ => JsValue::new_number(ctx.clone(), n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        _ if depth >= MAX_DEPTH => return Err(too_deep_input(ctx)),
        Value::Array(a) => {
            let arr = Array::new(ctx.clone())?;
            for (i, x) in a.iter().enumerate() {
                arr.set(i, value_to_js(ctx, x, depth + 1)?)?;
            }
            arr.into_value()
        }
        Value::Object(m) => {
            let o = Object::new(ctx.clone())?;
            for (k, x) in m {
                o.set(k.as_str(), value_to_js(ctx, x, depth + 1)?)?;
            }
            o.into_value()
        }
    })
}

fn item_to_js<'js>(ctx: &Ctx<'js>, it: &Item) -> rquickjs::Result<JsValue<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("json", to_js(ctx, &it.json)?)?;
    if let Some(b) = &it.binary {
        o.set("binary", to_js(ctx, b)?)?;
    }
    if let Some(p) = &it.paired_item {
        o.set("pairedItem", to_js(ctx, &p.to_value())?)?;
    }
    Ok(o.into_value())
}

fn items_to_js<'js>(ctx: &Ctx<'js>, items: &[Item]) -> rquickjs::Result<Array<'js>> {
    let arr = Array::new(ctx.clone())?;
    for (i, it) in items.iter().enumerate() {
        arr.set(i, item_to_js(ctx, it)?)?;
    }
    Ok(arr)
}

/// Results of at least this many items are followed by a garbage collection.
const GC_AFTER_ITEMS: usize = 1024;

/// Nesting depth accepted when reading results (also stops cycles) and when
/// giving data to JS. Sized for the stack: the conversions recurse once per
/// level, and a level of [`Walker::walk`] takes about 3.8 KB of stack in an
/// unoptimised build (measured in gdb), so 256 levels (a cyclic result, the
/// worst case, runs on a 1 MiB thread) leave half of the 2 MiB of a tokio
/// blocking thread to the rest of the run.
const MAX_DEPTH: usize = 256;

/// The error of a result deeper than [`MAX_DEPTH`].
fn too_deep<'js>(ctx: &Ctx<'js>) -> rquickjs::Error {
    rquickjs::Exception::throw_type(ctx, &format!("Converting circular structure to JSON, or a value nested too deeply (more than {MAX_DEPTH} levels)"))
}

/// The error of data deeper than [`MAX_DEPTH`] given to JS.
fn too_deep_input<'js>(ctx: &Ctx<'js>) -> rquickjs::Error {
    rquickjs::Exception::throw_range(ctx, &format!("Data nested too deeply (more than {MAX_DEPTH} levels) to be read"))
}

/// A JS result as JSON with JSON.stringify semantics: `toJSON` is honoured
/// (Date, Luxon DateTime/Duration), `undefined`, functions and symbols are
/// dropped from objects and become null in arrays, NaN/Infinity become null.
/// `None` when the value itself has no JSON form. Walking the value natively
/// is about twice as fast as JSON.stringify plus parsing the text.
pub(crate) fn to_json<'js>(ctx: &Ctx<'js>, v: &JsValue<'js>) -> rquickjs::Result<Option<Value>> {
    let mut w = Walker::new(ctx, None)?;
    w.walk(v, 0)
}

/// Name of the deferred step a Code node result may carry (see [`to_items`]).
const DEFERRED_STANDARDIZE: &str = "__n8nStandardize";

/// Name of the deferred check a Code node result may carry (see [`to_items`]).
const DEFERRED_CHECK: &str = "__n8nCheck";

/// A Code node's result as n8n normalises it, read straight into items
/// without building the `{json: …}` wrapper objects as JSON first: `null`
/// gives none, an array gives one item per element that is not null, any
/// other value one item. An element shaped like an item (`json` plus only
/// `binary`, `pairedItem`, `error`, `index`) gives those parts; any other
/// element becomes the item's `json`. A `json` that is not an object is
/// returned as it is, for the caller to reject.
///
/// A result array may carry a deferred step as its `__n8nStandardize`
/// function (the Code node's conversion of class instances to JSON text,
/// which only changes objects that are neither plain nor arrays nor have
/// `toJSON`): the result is read without it, and only when the reading meets
/// such an object is the step run and the result it returns read instead.
///
/// A result array may also carry a deferred check as its `__n8nCheck`
/// function (the Code node's checks of the elements, n8n's normalisation and
/// the standardize step): the elements but the last (the wrapper's meta item)
/// are checked while they are read, and only when one is not plainly an
/// item or plainly an item's json (see [`ItemCheck`]) is the check run and
/// the result it returns read instead, so its errors are n8n's.
pub(crate) fn to_items<'js>(ctx: &Ctx<'js>, v: &JsValue<'js>) -> rquickjs::Result<Vec<Item>> {
    let Some(arr) = v.as_array() else { return read_items(&mut Walker::new(ctx, None)?, v) };
    if let Some(check) = take_step(arr, DEFERRED_CHECK)? {
        if let Some(items) = read_checked(ctx, arr)? {
            return Ok(items);
        }
        let checked: JsValue = check.call(())?;
        return to_items(ctx, &checked);
    }
    let Some(step) = take_step(arr, DEFERRED_STANDARDIZE)? else { return read_items(&mut Walker::new(ctx, None)?, v) };
    let object_proto: Object = ctx.globals().get::<_, Object>("Object")?.get("prototype")?;
    let mut w = Walker::new(ctx, Some(object_proto))?;
    let items = read_items(&mut w, v)?;
    if !w.met_instance {
        return Ok(items);
    }
    drop(items);
    let done: JsValue = step.call(())?;
    read_items(&mut Walker::new(ctx, None)?, &done)
}

/// The deferred step `name` of a result array, removed from it: the step
/// holds the array, so removed, the array is freed by reference counting as
/// soon as it is read, not at the next GC.
fn take_step<'js>(arr: &Array<'js>, name: &str) -> rquickjs::Result<Option<Function<'js>>> {
    let step = arr.as_object().get::<_, JsValue>(name)?.into_function();
    if step.is_some() {
        arr.as_object().remove(name)?;
    }
    Ok(step)
}

/// The items of a result array whose elements (but the trailing meta item)
/// all pass [`ItemCheck`] and need no standardizing; `None` otherwise.
fn read_checked<'js>(ctx: &Ctx<'js>, arr: &Array<'js>) -> rquickjs::Result<Option<Vec<Item>>> {
    let object_proto: Object = ctx.globals().get::<_, Object>("Object")?.get("prototype")?;
    // n8n's `'json' in x` also sees inherited keys: plain objects have none
    // unless someone gave Object.prototype one
    if object_proto.contains_key("json")? || object_proto.contains_key("binary")? {
        return Ok(None);
    }
    let mut w = Walker::new(ctx, Some(object_proto))?;
    w.check = Some(ItemCheck::new(ctx)?);
    let n = arr.len();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i + 1 == n {
            w.check = None;
        }
        let x: JsValue = arr.get(i)?;
        match w.item(&x) {
            Ok(Some(it)) => out.push(it),
            Ok(None) => {}
            // a cycle or too deep a value: failed here, clearly (n8n's checks
            // would recurse through it and only run out of stack)
            Err(e) if w.too_deep => return Err(e),
            // a value the reading cannot take (a BigInt, a throwing toJSON):
            // n8n's checks of all elements come first, then the same reading
            // fails again
            Err(e) => {
                if matches!(e, rquickjs::Error::Exception) {
                    drop(ctx.catch());
                }
                return Ok(None);
            }
        }
        if w.met_instance || w.check.as_ref().is_some_and(|c| c.failed) {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// What the Code node's checks of "Run Once for All Items" (code.js,
/// `checkedAll`) accept and leave as they are, checked while reading:
/// every element a plain object (prototype Object.prototype or null, no
/// `toJSON`), either all of them items (own `json` a plain object, `binary`
/// absent or a plain object, no other keys than `pairedItem`, `error`,
/// `index`) or all of them item data (no key n8n reserves for items). Anything
/// else is left to those checks.
struct ItemCheck<'js> {
    json: rquickjs::Atom<'js>,
    binary: rquickjs::Atom<'js>,
    /// the other keys an item may have, `metadata` last (n8n reserves it, but
    /// the reader does not take it as an item's part)
    others: [rquickjs::Atom<'js>; 4],
    /// whether the elements so far are items (`Some(true)`) or item data
    items: Option<bool>,
    failed: bool,
}

impl<'js> ItemCheck<'js> {
    fn new(ctx: &Ctx<'js>) -> rquickjs::Result<Self> {
        let atom = |s: &str| rquickjs::Atom::from_str(ctx.clone(), s);
        Ok(ItemCheck {
            json: atom("json")?,
            binary: atom("binary")?,
            others: [atom("pairedItem")?, atom("error")?, atom("index")?, atom("metadata")?],
            items: None,
            failed: false,
        })
    }
}

/// What an element's own enumerable keys showed.
#[derive(Default)]
struct Shape {
    json: bool,
    json_plain: bool,
    binary: bool,
    binary_ok: bool,
    /// `pairedItem`, `error` or `index`
    item_key: bool,
    /// reserved by n8n, not an item's part here
    metadata: bool,
    /// a key no item has
    other_key: bool,
}

fn read_items<'js>(w: &mut Walker<'_, 'js>, v: &JsValue<'js>) -> rquickjs::Result<Vec<Item>> {
    let Some(arr) = v.as_array() else {
        // not an array (maybe one through toJSON): converted as a whole
        return Ok(match w.walk(v, 0)? {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.into_iter().filter_map(item_from_value).collect(),
            Some(other) => item_from_value(other).into_iter().collect(),
        });
    };
    let mut out = Vec::with_capacity(arr.len());
    for i in 0..arr.len() {
        let x: JsValue = arr.get(i)?;
        if let Some(it) = w.item(&x)? {
            out.push(it);
        }
        if w.met_instance {
            break;
        }
    }
    Ok(out)
}

/// The keys a returned object may have to count as an item (n8n's check).
const ITEM_KEYS: [&str; 5] = ["json", "binary", "pairedItem", "error", "index"];

/// An item from a returned value already converted to JSON.
fn item_from_value(v: Value) -> Option<Item> {
    match v {
        Value::Null => None,
        Value::Object(mut m) if m.contains_key("json") && m.keys().all(|k| ITEM_KEYS.contains(&k.as_str())) => Some(Item {
            json: m.shift_remove("json").unwrap_or(Value::Null).into(),
            binary: m.shift_remove("binary").map(Json::new),
            paired_item: m.shift_remove("pairedItem").map(PairedItem::from_value),
        }),
        other => Some(Item::new(other)),
    }
}

/// Hashes an atom id as it is (atoms are small distinct integers).
#[derive(Default)]
struct AtomHasher(u64);

impl std::hash::Hasher for AtomHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n);
    }
}

struct Walker<'a, 'js> {
    ctx: &'a Ctx<'js>,
    to_json_key: rquickjs::Atom<'js>,
    /// Property names already converted: result objects mostly repeat the
    /// same few keys, and an atom's text is the same every time.
    keys: HashMap<rquickjs::Atom<'js>, String, std::hash::BuildHasherDefault<AtomHasher>>,
    /// Set while reading ahead of a deferred standardize step: objects whose
    /// prototype is neither this nor null (class instances) set `met_instance`.
    object_proto: Option<Object<'js>>,
    met_instance: bool,
    /// Set while reading a result array left unchecked (see [`read_checked`]).
    check: Option<ItemCheck<'js>>,
    /// [`ITEM_KEYS`] as atoms, made on the first item read: an element's
    /// keys are told apart without their text.
    item_keys: Option<[rquickjs::Atom<'js>; 5]>,
    /// The properties of the element being read, kept between elements so
    /// each one does not allocate its own list.
    parts: Vec<(rquickjs::Atom<'js>, Value)>,
    /// Set when the reading stopped at [`MAX_DEPTH`] (a cycle, or too deep a value).
    too_deep: bool,
}

/// Most distinct property names remembered during one conversion.
const MAX_CACHED_KEYS: usize = 4096;

impl<'a, 'js> Walker<'a, 'js> {
    fn new(ctx: &'a Ctx<'js>, object_proto: Option<Object<'js>>) -> rquickjs::Result<Self> {
        Ok(Walker {
            ctx,
            to_json_key: rquickjs::Atom::from_str(ctx.clone(), "toJSON")?,
            keys: HashMap::default(),
            object_proto,
            met_instance: false,
            check: None,
            item_keys: None,
            parts: Vec::new(),
            too_deep: false,
        })
    }

    /// Notes an object read without `toJSON` that is not plain.
    fn check_plain(&mut self, o: &Object<'js>) {
        if let Some(plain) = &self.object_proto {
            if let Some(p) = o.get_prototype() {
                if p.as_value() != plain.as_value() {
                    self.met_instance = true;
                }
            }
        }
    }

    /// One element of a Code node's result as an item (`None` when it
    /// converts to null or has no JSON form).
    fn item(&mut self, v: &JsValue<'js>) -> rquickjs::Result<Option<Item>> {
        let plain = match v.as_object() {
            Some(o) if !v.is_array() && !v.is_function() => {
                let f: JsValue = o.get(self.to_json_key.clone())?;
                (!f.is_function()).then_some(o)
            }
            _ => None,
        };
        let checking = self.check.is_some();
        let Some(o) = plain else {
            if let Some(c) = &mut self.check {
                c.failed = true;
                return Ok(None);
            }
            // primitives, arrays, objects with toJSON: the general conversion
            return Ok(self.walk(v, 1)?.and_then(item_from_value));
        };
        if checking && !self.has_plain_proto(o) {
            self.fail_check();
            return Ok(None);
        }
        // A plain object: its properties are converted one by one, so an
        // item-shaped object never becomes a JSON object of its own.
        let props = o.props::<rquickjs::Atom, JsValue>();
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        parts.reserve(props.len());
        let mut shape = Shape::default();
        for prop in props {
            let (k, x) = prop?;
            if checking {
                self.note_key(&mut shape, &k, &x);
            }
            if let Some(j) = self.walk(&x, 2)? {
                // a repeated key cannot occur among own properties
                parts.push((k, j));
            }
        }
        if checking && !self.element_passes(&shape, o)? {
            self.fail_check();
            return Ok(None);
        }
        let it = self.item_of_parts(&mut parts)?;
        self.parts = parts;
        Ok(Some(it))
    }

    /// An element's converted properties as an item: its parts when it is
    /// shaped like one (`json` and only [`ITEM_KEYS`]), else its `json`.
    fn item_of_parts(&mut self, parts: &mut Vec<(rquickjs::Atom<'js>, Value)>) -> rquickjs::Result<Item> {
        if self.item_keys.is_none() {
            let atom = |s: &str| rquickjs::Atom::from_str(self.ctx.clone(), s);
            self.item_keys = Some([atom(ITEM_KEYS[0])?, atom(ITEM_KEYS[1])?, atom(ITEM_KEYS[2])?, atom(ITEM_KEYS[3])?, atom(ITEM_KEYS[4])?]);
        }
        let Some(keys) = &self.item_keys else { return Err(rquickjs::Error::Unknown) };
        let [json, binary, paired_item, ..] = keys;
        let is_item = parts.iter().any(|(k, _)| k == json) && parts.iter().all(|(k, _)| keys.contains(k));
        if is_item {
            let mut it = Item::default();
            for (k, x) in parts.drain(..) {
                if k == *json {
                    it.json = Json::new(x);
                } else if k == *binary {
                    it.binary = Some(Json::new(x));
                } else if k == *paired_item {
                    it.paired_item = Some(PairedItem::from_value(x));
                }
            }
            return Ok(it);
        }
        let mut m = serde_json::Map::with_capacity(parts.len());
        for (k, x) in parts.drain(..) {
            m.insert(self.key(k)?, x);
        }
        Ok(Item::new(Value::Object(m)))
    }

    /// Whether `o`'s prototype is Object.prototype or null.
    fn has_plain_proto(&self, o: &Object<'js>) -> bool {
        match (o.get_prototype(), &self.object_proto) {
            (None, _) => true,
            (Some(p), Some(plain)) => p.as_value() == plain.as_value(),
            (Some(_), None) => false,
        }
    }

    /// A plain object as n8n's `isObject` sees it (not an array, a function or a Date).
    fn is_plain_object(&self, v: &JsValue<'js>) -> bool {
        !v.is_array() && !v.is_function() && v.as_object().is_some_and(|o| self.has_plain_proto(o))
    }

    fn fail_check(&mut self) {
        if let Some(c) = &mut self.check {
            c.failed = true;
        }
    }

    fn note_key(&self, shape: &mut Shape, k: &rquickjs::Atom<'js>, x: &JsValue<'js>) {
        let Some(c) = &self.check else { return };
        if *k == c.json {
            shape.json = true;
            shape.json_plain = self.is_plain_object(x);
        } else if *k == c.binary {
            shape.binary = true;
            shape.binary_ok = x.is_undefined() || self.is_plain_object(x);
        } else if c.others[..3].contains(k) {
            shape.item_key = true;
        } else if *k == c.others[3] {
            shape.metadata = true;
        } else {
            shape.other_key = true;
        }
    }

    /// Whether an element passes [`ItemCheck`] with the elements before it.
    fn element_passes(&mut self, shape: &Shape, o: &Object<'js>) -> rquickjs::Result<bool> {
        let Some(c) = &mut self.check else { return Ok(true) };
        let is_item = shape.json;
        let passes = if is_item {
            // n8n also checks a non-enumerable own `binary`
            let binary_ok = if shape.binary { shape.binary_ok } else { !o.contains_key(c.binary.clone())? };
            shape.json_plain && binary_ok && !shape.metadata && !shape.other_key
        } else {
            // item data: no key of an item, enumerable or not (n8n's `in`)
            !shape.binary && !shape.item_key && !shape.metadata && !o.contains_key(c.json.clone())? && !o.contains_key(c.binary.clone())?
        };
        // n8n takes all elements as items or none
        let same = *c.items.get_or_insert(is_item) == is_item;
        Ok(passes && same)
    }

    fn key(&mut self, atom: rquickjs::Atom<'js>) -> rquickjs::Result<String> {
        if let Some(k) = self.keys.get(&atom) {
            return Ok(k.clone());
        }
        let k = atom.to_string()?;
        if self.keys.len() < MAX_CACHED_KEYS {
            self.keys.insert(atom, k.clone());
        }
        Ok(k)
    }

    /// `v` as JSON (see [`to_json`]). Containers are read by their own
    /// functions, not inline: an unoptimised build gives a function one stack
    /// slot per local of every branch, and this frame is the one repeated per
    /// nesting level (about 5 KB with the branches inline, which made
    /// [`MAX_DEPTH`] levels overflow a 2 MiB thread in debug builds).
    fn walk(&mut self, v: &JsValue<'js>, depth: usize) -> rquickjs::Result<Option<Value>> {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return Err(too_deep(self.ctx));
        }
        Ok(Some(match v.type_of() {
            Type::Uninitialized | Type::Undefined | Type::Symbol | Type::Function | Type::Constructor => {
                return Ok(None)
            }
            Type::Null => Value::Null,
            Type::Bool => Value::Bool(v.as_bool().unwrap_or(false)),
            Type::Int => Value::from(v.as_int().unwrap_or(0)),
            Type::Float => num_to_json(v.as_float().unwrap_or(f64::NAN)),
            Type::String => Value::String(v.as_string().map(|s| s.to_string()).transpose()?.unwrap_or_default()),
            Type::BigInt => return Err(rquickjs::Exception::throw_type(self.ctx, "BigInt value can't be serialized in JSON")),
            Type::Array => match v.as_array() {
                Some(arr) => self.walk_array(arr, depth)?,
                None => return Err(rquickjs::Error::Unknown),
            },
            _ => match v.as_object() {
                Some(o) => return self.walk_object(o, depth),
                None => return Ok(None),
            },
        }))
    }

    #[inline(never)]
    fn walk_array(&mut self, arr: &Array<'js>, depth: usize) -> rquickjs::Result<Value> {
        let mut out = Vec::with_capacity(arr.len());
        for i in 0..arr.len() {
            let x: JsValue = arr.get(i)?;
            out.push(self.walk(&x, depth + 1)?.unwrap_or(Value::Null));
        }
        Ok(Value::Array(out))
    }

    #[inline(never)]
    fn walk_object(&mut self, o: &Object<'js>, depth: usize) -> rquickjs::Result<Option<Value>> {
        if let Some(r) = self.call_to_json(o)? {
            return self.walk(&r, depth + 1);
        }
        self.check_plain(o);
        if self.met_instance {
            return Ok(None);
        }
        let props = o.props::<rquickjs::Atom, JsValue>();
        // sized once: growing a map doubles its storage
        let mut m = serde_json::Map::with_capacity(props.len());
        for prop in props {
            let (k, x) = prop?;
            if let Some(j) = self.walk(&x, depth + 1)? {
                m.insert(self.key(k)?, j);
            }
        }
        Ok(Some(Value::Object(m)))
    }

    /// What `o.toJSON()` returns, when `o` has one (kept out of
    /// [`Walker::walk_object`]'s frame, which recurses).
    #[inline(never)]
    fn call_to_json(&mut self, o: &Object<'js>) -> rquickjs::Result<Option<JsValue<'js>>> {
        let f: JsValue = o.get(self.to_json_key.clone())?;
        let Some(f) = f.as_function() else { return Ok(None) };
        // a plain object's own toJSON hides what standardizing would change
        if self.object_proto.as_ref().is_some_and(|p| o.get_prototype().is_some_and(|q| q.as_value() == p.as_value())) {
            self.met_instance = true;
        }
        f.call((rquickjs::function::This(o.clone()),)).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_names_match_prelude() {
        let sb = Sandbox::new(Limits::default(), "UTC").unwrap_or_else(|_| panic!("sandbox"));
        let mut from_js: Vec<&str> =
            sb.proto_names.iter().filter_map(|n| n.strip_prefix("__n8n_")).collect();
        from_js.sort();
        assert_eq!(from_js, crate::template::EXTENSION_NAMES);
    }
}
