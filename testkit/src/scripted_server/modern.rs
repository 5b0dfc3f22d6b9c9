//! The modern (2026-07-28, stateless) era of the scripted server.
//!
//! Selected by the scenario key `era`: `"modern"` serves only the modern wire,
//! `"dual"` serves it until a legacy `initialize` arrives (that request is then
//! served by the legacy code and the process stays legacy, as a dual-era server
//! scopes the legacy revision to the stdio process). `"legacy"` (the default)
//! never reaches this module except for the `discover` probe behaviour.
//!
//! A modern request (`server/discover`, `tools/list`, `tools/call`) is checked
//! the way the revision asks of a server:
//!
//! 1. `params._meta` must hold `io.modelcontextprotocol/protocolVersion` (a
//!    string) and `io.modelcontextprotocol/clientCapabilities` (an object),
//!    else `-32602` with `data.missing` naming the keys;
//! 2. the version must be one of `modern_versions`, else `-32022` with
//!    `data: {supported, requested}` (`server/discover` is exempt when
//!    `discover_version_check` is off);
//! 3. the first `reject_first_requests` well-formed requests get `-32022`
//!    anyway (the conformance `request-metadata` scenario), and so do the first
//!    `reject_first_of.<method>` well-formed requests of that method (a server
//!    that forgot the version after `server/discover` succeeded).
//!
//! Generated results carry `resultType`, `_meta["io.modelcontextprotocol/serverInfo"]`
//! and, for `server/discover` and `tools/list`, `ttlMs` and `cacheScope`.
//! Scripted raw results (`pages`, `discover_result`, `on_call.*.result`) are
//! written verbatim. Any other method, `ping` included, gets `-32601`.
//!
//! MRTR (`on_call.<tool>.input_required`): the first call answers
//! `resultType: "input_required"`; a later call of the same tool carrying
//! `requestState` or `inputResponses` is the retry of that flow (it does not
//! consume an `on_call` entry). Every retry is judged (exact `requestState`
//! echo, new id, every `inputRequests` key answered, same arguments) and the
//! verdicts are reported in the final result's text.

use super::{Behaviour, Flow, Scenario, Server, as_bool, as_u64, text_result};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::process;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The revision this module speaks.
pub(super) const MODERN_VERSION: &str = "2026-07-28";

/// `_meta` key of the request's protocol version.
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// `_meta` key of the request's client capabilities.
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// `_meta` key of the server's self-description on results.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Reports include a received `requestState` only up to this many bytes.
const REPORTED_STATE_BYTES: usize = 256;

/// Scenario keys this module reads (the main parser refuses any other).
pub(super) const FIELDS: &[&str] = &[
    "era",
    "modern_versions",
    "supportedVersions",
    "discover",
    "discover_result",
    "discover_version_check",
    "discover_delay_ms",
    "resultType",
    "ttlMs",
    "cacheScope",
    "reject_first_requests",
    "reject_first_of",
    "initialize_after_modern",
    "check_capabilities",
];

/// Which protocol generations the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Era {
    /// Only `initialize` (the default; byte for byte the server of before).
    Legacy,
    /// Only the 2026-07-28 wire; `initialize` is refused with `-32022`.
    Modern,
    /// Modern until a legacy `initialize` arrives, legacy afterwards.
    Dual,
}

/// The modern part of a scenario.
#[derive(Debug)]
pub(super) struct Config {
    /// The era.
    pub(super) era: Era,
    /// Versions accepted in `_meta` (default `["2026-07-28"]`).
    modern_versions: Vec<String>,
    /// `supportedVersions` of the discover result and `data.supported` of
    /// `-32022` (any JSON; default: `modern_versions`).
    supported_versions: Value,
    /// What `server/discover` gets (every era; `normal`: `-32601` in the legacy
    /// era, the discover result otherwise).
    pub(super) discover: Behaviour,
    /// A whole discover result replacing the generated one.
    discover_result: Option<Value>,
    /// Whether `server/discover` is refused for an unsupported version too.
    discover_version_check: bool,
    /// Sleep this long (on the reader thread) before answering the first
    /// modern `server/discover` with its result.
    discover_delay_ms: u64,
    /// `resultType` of generated complete results (`None`: omitted).
    pub(super) result_type: Option<Value>,
    /// `ttlMs` of cacheable results (`None`: omitted).
    ttl_ms: Option<Value>,
    /// `cacheScope` of cacheable results (`None`: omitted).
    cache_scope: Option<Value>,
    /// How many first well-formed modern requests get `-32022` anyway.
    reject_first_requests: u64,
    /// Per method: how many first well-formed requests of it get `-32022` anyway.
    reject_first_of: HashMap<String, u64>,
    /// Dual era: refuse `initialize` with `-32022` once a modern request was served.
    reject_initialize_after_modern: bool,
    /// Answer `-32021` instead of `inputRequests` the request's capabilities do not cover.
    check_capabilities: bool,
}

impl Config {
    /// Decodes the modern keys of a scenario object.
    pub(super) fn from_json(map: &Map<String, Value>) -> Result<Config, String> {
        let era = match map.get("era") {
            None => Era::Legacy,
            Some(Value::String(era)) if era == "legacy" => Era::Legacy,
            Some(Value::String(era)) if era == "modern" => Era::Modern,
            Some(Value::String(era)) if era == "dual" => Era::Dual,
            Some(_) => return Err("era must be \"legacy\", \"modern\" or \"dual\"".into()),
        };
        let modern_versions = match map.get("modern_versions") {
            None => vec![MODERN_VERSION.to_owned()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or("modern_versions must be an array of strings")
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("modern_versions must be an array of strings".into()),
        };
        let supported_versions = map
            .get("supportedVersions")
            .cloned()
            .unwrap_or_else(|| json!(modern_versions));
        let reject_initialize_after_modern = match map.get("initialize_after_modern") {
            None => false,
            Some(Value::String(s)) if s == "serve" => false,
            Some(Value::String(s)) if s == "reject" => true,
            Some(_) => return Err("initialize_after_modern must be \"serve\" or \"reject\"".into()),
        };
        let present_or = |key: &str, default: Value| match map.get(key) {
            None => Some(default),
            Some(value) => optional_value(value),
        };
        Ok(Config {
            era,
            modern_versions,
            supported_versions,
            discover: Behaviour::from_json("discover", map.get("discover"))?,
            discover_result: map.get("discover_result").cloned(),
            discover_version_check: map
                .get("discover_version_check")
                .map_or(Ok(true), |v| as_bool("discover_version_check", v))?,
            discover_delay_ms: map
                .get("discover_delay_ms")
                .map_or(Ok(0), |v| as_u64("discover_delay_ms", v))?,
            result_type: present_or("resultType", json!("complete")),
            ttl_ms: present_or("ttlMs", json!(0)),
            cache_scope: present_or("cacheScope", json!("private")),
            reject_first_requests: map
                .get("reject_first_requests")
                .map_or(Ok(0), |v| as_u64("reject_first_requests", v))?,
            reject_first_of: match map.get("reject_first_of") {
                None => HashMap::new(),
                Some(Value::Object(counts)) => counts
                    .iter()
                    .map(|(method, n)| Ok((method.clone(), as_u64("reject_first_of", n)?)))
                    .collect::<Result<_, String>>()?,
                Some(_) => return Err("reject_first_of must be an object".into()),
            },
            reject_initialize_after_modern,
            check_capabilities: map
                .get("check_capabilities")
                .map_or(Ok(true), |v| as_bool("check_capabilities", v))?,
        })
    }

    /// The `-32022` error naming the supported versions and the requested one.
    fn version_error(&self, requested: Value) -> Value {
        json!({
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": self.supported_versions, "requested": requested},
        })
    }
}

/// A scenario value where JSON `null` means "leave the member out".
pub(super) fn optional_value(value: &Value) -> Option<Value> {
    (!value.is_null()).then(|| value.clone())
}

/// What a generated modern result carries besides its own members.
#[derive(Clone, Debug)]
pub(super) struct Decorate {
    /// `resultType` (`None`: omitted).
    pub(super) result_type: Option<Value>,
    /// The value of `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub(super) server_info: Value,
}

impl Decorate {
    /// Adds `resultType` and `_meta.serverInfo` to a result object.
    pub(super) fn apply(&self, mut result: Value) -> Value {
        if let Value::Object(map) = &mut result {
            if let Some(result_type) = &self.result_type {
                map.insert("resultType".into(), result_type.clone());
            }
            add_server_info(map, &self.server_info);
        }
        result
    }
}

/// Sets `_meta["io.modelcontextprotocol/serverInfo"]` on a result object.
fn add_server_info(map: &mut Map<String, Value>, server_info: &Value) {
    let meta = map.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_INFO_KEY.into(), server_info.clone());
    }
}

impl Scenario {
    /// A generated complete result: `resultType`, `_meta.serverInfo`, and the
    /// cache hints when `cacheable`.
    pub(super) fn modern_result(&self, result: Value, cacheable: bool) -> Value {
        let decorate = Decorate {
            result_type: self.modern.result_type.clone(),
            server_info: self.server_info.clone(),
        };
        let mut result = decorate.apply(result);
        if cacheable && let Value::Object(map) = &mut result {
            if let Some(ttl) = &self.modern.ttl_ms {
                map.insert("ttlMs".into(), ttl.clone());
            }
            if let Some(scope) = &self.modern.cache_scope {
                map.insert("cacheScope".into(), scope.clone());
            }
        }
        result
    }
}

/// The modern-era state of the reader.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Well-formed modern requests read so far.
    requests: u64,
    /// Well-formed modern requests read so far, per method.
    requests_of: HashMap<String, u64>,
    /// Whether a modern request was answered with a result path (dual era).
    served_modern: bool,
    /// Dual era: a legacy `initialize` was served; everything is legacy now.
    legacy_locked: bool,
    /// The first `server/discover` was delayed (`discover_delay_ms`).
    discover_delayed: bool,
    /// The open MRTR flow of each tool.
    flows: HashMap<String, MrtrFlow>,
}

/// How a scripted `requestState` is made.
#[derive(Clone, Debug)]
enum StateSpec {
    /// A fresh opaque string per round (JSON text with characters a careless
    /// client would re-escape: `é`, `/`, `\`, `"`, U+2028).
    Generated,
    /// No `requestState` at all.
    Omit,
    /// This exact value every round (any JSON: a hostile server may send a non-string).
    Fixed(Value),
}

/// An `on_call.<tool>.input_required` script.
#[derive(Debug)]
pub(super) struct MrtrScript {
    /// How many `input_required` answers before the complete result.
    rounds: u64,
    /// Never complete: every retry gets another `input_required`.
    endless: bool,
    /// `inputRequests` per round (the last repeats); `None` omits the member.
    input_requests: Vec<Option<Value>>,
    /// How `requestState` is made.
    request_state: StateSpec,
    /// Pad a generated `requestState` to at least this many bytes.
    request_state_bytes: Option<u64>,
    /// The final result (raw) instead of the generated report.
    result: Option<Value>,
}

impl MrtrScript {
    /// Decodes `{"rounds"?, "endless"?, "inputRequests"?, "requestState"?,
    /// "requestState_bytes"?, "result"?}` (`true` = all defaults).
    pub(super) fn from_json(field: &str, value: &Value) -> Result<MrtrScript, String> {
        let empty = Map::new();
        let map = match value {
            Value::Bool(true) => &empty,
            Value::Object(map) => map,
            _ => return Err(format!("{field} must be an object or true")),
        };
        let mut script = MrtrScript {
            rounds: 1,
            endless: false,
            input_requests: vec![Some(default_input_requests())],
            request_state: StateSpec::Generated,
            request_state_bytes: None,
            result: None,
        };
        for (key, inner) in map {
            let name = format!("{field}.{key}");
            match key.as_str() {
                "rounds" => {
                    script.rounds = as_u64(&name, inner)?;
                    if script.rounds == 0 {
                        return Err(format!("{name} must be at least 1"));
                    }
                }
                "endless" => script.endless = as_bool(&name, inner)?,
                "inputRequests" => {
                    script.input_requests = match inner {
                        Value::Array(rounds) if !rounds.is_empty() => {
                            rounds.iter().map(optional_value).collect()
                        }
                        Value::Array(_) => return Err(format!("{name} must not be empty")),
                        other => vec![optional_value(other)],
                    }
                }
                "requestState" => {
                    script.request_state = match inner {
                        Value::Null => StateSpec::Omit,
                        other => StateSpec::Fixed(other.clone()),
                    }
                }
                "requestState_bytes" => script.request_state_bytes = Some(as_u64(&name, inner)?),
                "result" => script.result = Some(inner.clone()),
                _ => return Err(format!("unknown field {name}")),
            }
        }
        Ok(script)
    }

    /// The `inputRequests` of round `round` (0-based).
    fn requests_for(&self, round: u64) -> Option<&Value> {
        let index = usize::try_from(round).unwrap_or(usize::MAX);
        self.input_requests[index.min(self.input_requests.len() - 1)].as_ref()
    }

    /// The `requestState` of round `round` of `tool`.
    fn state_for(&self, tool: &str, round: u64) -> Option<Value> {
        static NONCE: AtomicU64 = AtomicU64::new(1);
        match &self.request_state {
            StateSpec::Omit => None,
            StateSpec::Fixed(value) => Some(value.clone()),
            StateSpec::Generated => {
                let nonce = format!(
                    "{}-{}",
                    process::id(),
                    NONCE.fetch_add(1, Ordering::Relaxed)
                );
                let mut state = json!({
                    "tool": tool,
                    "round": round,
                    "nonce": nonce,
                    "probe": "\u{e9}/\\\"\u{2028}",
                })
                .to_string();
                if let Some(bytes) = self.request_state_bytes {
                    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
                    if state.len() < bytes {
                        state.push_str(&"x".repeat(bytes - state.len()));
                    }
                }
                Some(Value::String(state))
            }
        }
    }
}

/// One elicitation (`confirm`), form mode (no `mode`), as the conformance suite sends.
fn default_input_requests() -> Value {
    json!({"confirm": {"method": "elicitation/create", "params": {
        "message": "Please confirm to continue",
        "requestedSchema": {"type": "object", "properties": {
            "confirmed": {"type": "boolean", "description": "Confirm?"}
        }},
    }}})
}

/// An MRTR exchange in progress.
#[derive(Debug)]
struct MrtrFlow {
    script: Arc<MrtrScript>,
    /// `input_required` answers sent so far.
    round: u64,
    /// Every request id of the flow (the first call and each retry).
    ids: Vec<Value>,
    /// The first call's arguments (a retry must repeat them).
    arguments: Value,
    /// The `requestState` of the last `input_required` answer.
    sent_state: Option<Value>,
    /// The keys of the last `inputRequests`.
    sent_keys: Vec<String>,
    /// Whether the first call already carried `requestState` or `inputResponses`.
    first_call_carried: bool,
    /// One verdict per retry.
    verdicts: Vec<Value>,
}

/// Which capability each MRTR input method needs, and the ones the request's
/// `_meta.clientCapabilities` lacks (`None` when nothing is missing).
fn missing_capabilities(requests: Option<&Value>, params: &Value) -> Option<Value> {
    let declared = params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY));
    let mut required = Map::new();
    for request in requests.and_then(Value::as_object).into_iter().flatten() {
        let capability = match request.1.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => "elicitation",
            Some("sampling/createMessage") => "sampling",
            Some("roots/list") => "roots",
            _ => continue,
        };
        let has = declared
            .and_then(|caps| caps.get(capability))
            .is_some_and(Value::is_object);
        if !has {
            required.insert(capability.into(), json!({}));
        }
    }
    (!required.is_empty()).then_some(Value::Object(required))
}

/// The Tasks extension's identifier.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether the request's `_meta.clientCapabilities` declares the Tasks extension.
fn declares_tasks(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// The `-32021` a compliant server answers a request that needed the Tasks
/// extension declared.
fn tasks_capability_error() -> Value {
    capability_error(json!({"extensions": {TASKS_EXTENSION: {}}}))
}

/// The `-32021` error for missing capabilities.
fn capability_error(required: Value) -> Value {
    json!({
        "code": -32021,
        "message": "Missing required client capability",
        "data": {"requiredCapabilities": required},
    })
}

/// The byte length of a `requestState` as sent (a string's UTF-8, else its JSON).
fn state_len(state: &Value) -> usize {
    match state {
        Value::String(s) => s.len(),
        other => other.to_string().len(),
    }
}

impl Server {
    /// With `check_capabilities`: a scripted `tools/call` result that is a task
    /// (`resultType: "task"`) answering a request that did not declare the
    /// Tasks extension gets `-32021` instead (a compliant server never sends a
    /// task to such a client).
    pub(super) fn undeclared_task(
        &self,
        result: &Value,
        params: &Map<String, Value>,
    ) -> Option<Value> {
        let task = result.get("resultType").and_then(Value::as_str) == Some("task");
        let declared = params
            .get("_meta")
            .map(|meta| declares_tasks(&json!({"_meta": meta})))
            .unwrap_or(false);
        (self.scenario.modern.check_capabilities && task && !declared).then(tasks_capability_error)
    }

    /// Whether requests are handled by the modern code right now.
    pub(super) fn serves_modern(&self) -> bool {
        self.scenario.modern.era != Era::Legacy && !self.modern.legacy_locked
    }

    /// Handles one request in the modern era.
    pub(super) fn modern_request(&mut self, method: &str, id: Value, params: Value) -> Flow {
        let scenario = Arc::clone(&self.scenario);
        let config = &scenario.modern;
        match method {
            "initialize" => {
                let refused = config.era == Era::Modern
                    || (config.reject_initialize_after_modern && self.modern.served_modern);
                if !refused {
                    self.modern.legacy_locked = true;
                    self.initialize(id, &params);
                } else if matches!(scenario.initialize, Behaviour::Normal) {
                    let requested = params.get("protocolVersion").cloned();
                    let error = config.version_error(requested.unwrap_or(Value::Null));
                    self.shared.reply_error(id, error);
                } else {
                    self.misbehave(&scenario.initialize, id);
                }
                return Flow::Continue;
            }
            "server/discover" if !matches!(config.discover, Behaviour::Normal) => {
                self.misbehave(&config.discover, id);
                return Flow::Continue;
            }
            "server/discover" | "tools/list" | "tools/call" => {}
            _ if scenario.methods.contains_key(method) => {}
            _ => {
                self.shared
                    .reply_error(id, json!({"code": -32601, "message": "Method not found"}));
                return Flow::Continue;
            }
        }
        let meta = params.get("_meta");
        let version = meta.and_then(|meta| meta.get(PROTOCOL_VERSION_KEY));
        let capabilities = meta.and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY));
        let mut missing = Vec::new();
        if !version.is_some_and(Value::is_string) {
            missing.push(PROTOCOL_VERSION_KEY);
        }
        if !capabilities.is_some_and(Value::is_object) {
            missing.push(CLIENT_CAPABILITIES_KEY);
        }
        if !missing.is_empty() {
            let error = json!({
                "code": -32602,
                "message": "Invalid params: params._meta lacks a required key",
                "data": {"missing": missing},
            });
            self.shared.reply_error(id, error);
            return Flow::Continue;
        }
        let version = version.and_then(Value::as_str).unwrap_or_default();
        self.modern.requests += 1;
        let checks_version = method != "server/discover" || config.discover_version_check;
        let unsupported = checks_version && !config.modern_versions.iter().any(|v| v == version);
        let of_method = self
            .modern
            .requests_of
            .entry(method.to_owned())
            .or_default();
        *of_method += 1;
        let rejected_for_method = config
            .reject_first_of
            .get(method)
            .is_some_and(|n| *of_method <= *n);
        if unsupported
            || self.modern.requests <= config.reject_first_requests
            || rejected_for_method
        {
            self.shared
                .reply_error(id, config.version_error(json!(version)));
            return Flow::Continue;
        }
        self.modern.served_modern = true;
        match method {
            "server/discover" => {
                if config.discover_delay_ms > 0 && !self.modern.discover_delayed {
                    self.modern.discover_delayed = true;
                    // On the reader thread: what the client sends meanwhile is
                    // read after the (late) answer.
                    std::thread::sleep(std::time::Duration::from_millis(config.discover_delay_ms));
                }
                let result = match &config.discover_result {
                    Some(result) => result.clone(),
                    None => {
                        let mut result = json!({
                            "supportedVersions": config.supported_versions,
                            "capabilities": scenario.capabilities,
                        });
                        if let Some(instructions) = &scenario.instructions {
                            result["instructions"] = instructions.clone();
                        }
                        scenario.modern_result(result, true)
                    }
                };
                self.shared.reply_result(id, result);
                Flow::Continue
            }
            "tools/list" => self.tools_list(id, true),
            "tasks/get" | "tasks/update" | "tasks/cancel"
                if config.check_capabilities && !declares_tasks(&params) =>
            {
                self.shared.reply_error(id, tasks_capability_error());
                Flow::Continue
            }
            _ if scenario.methods.contains_key(method) => {
                self.scripted_method(id, method);
                Flow::Continue
            }
            _ => {
                let tool = params
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let retry =
                    params.get("requestState").is_some() || params.get("inputResponses").is_some();
                match tool {
                    Some(tool) if retry && self.modern.flows.contains_key(&tool) => {
                        self.continue_mrtr(id, &tool, &params);
                        Flow::Continue
                    }
                    _ => self.tools_call(id, params, true),
                }
            }
        }
    }

    /// Starts an MRTR flow: answers the first `input_required` (or `-32021`).
    /// `params` holds the request's other params (`_meta`, ...) in the modern
    /// era, `None` in the legacy era (no capability check there).
    pub(super) fn start_mrtr(
        &mut self,
        id: Value,
        tool: String,
        arguments: Value,
        script: Arc<MrtrScript>,
        params: Option<&Value>,
    ) {
        if self.scenario.modern.check_capabilities
            && let Some(params) = params
            && let Some(required) = missing_capabilities(script.requests_for(0), params)
        {
            self.shared.reply_error(id, capability_error(required));
            return;
        }
        let first_call_carried = params
            .is_some_and(|p| p.get("requestState").is_some() || p.get("inputResponses").is_some());
        let mut flow = MrtrFlow {
            script,
            round: 0,
            ids: Vec::new(),
            arguments,
            sent_state: None,
            sent_keys: Vec::new(),
            first_call_carried,
            verdicts: Vec::new(),
        };
        self.send_input_required(id, &tool, &mut flow);
        self.modern.flows.insert(tool, flow);
    }

    /// Writes the next `input_required` answer of `flow`.
    fn send_input_required(&self, id: Value, tool: &str, flow: &mut MrtrFlow) {
        let mut result = Map::new();
        result.insert("resultType".into(), json!("input_required"));
        let requests = flow.script.requests_for(flow.round).cloned();
        flow.sent_keys = requests
            .as_ref()
            .and_then(Value::as_object)
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(requests) = requests {
            result.insert("inputRequests".into(), requests);
        }
        flow.sent_state = flow.script.state_for(tool, flow.round);
        if let Some(state) = &flow.sent_state {
            result.insert("requestState".into(), state.clone());
        }
        add_server_info(&mut result, &self.scenario.server_info);
        flow.round += 1;
        flow.ids.push(id.clone());
        self.shared.reply_result(id, Value::Object(result));
    }

    /// Judges a retry of the open flow of `tool`, then answers the next round
    /// or the complete result.
    fn continue_mrtr(&mut self, id: Value, tool: &str, params: &Value) {
        let Some(mut flow) = self.modern.flows.remove(tool) else {
            return;
        };
        let received = params.get("requestState");
        let responses = params.get("inputResponses");
        let response_keys: Vec<String> = responses
            .and_then(Value::as_object)
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default();
        let missing: Vec<&String> = flow
            .sent_keys
            .iter()
            .filter(|key| !response_keys.contains(key))
            .collect();
        let extra: Vec<&String> = response_keys
            .iter()
            .filter(|key| !flow.sent_keys.contains(key))
            .collect();
        let state_echoed = received == flow.sent_state.as_ref();
        let new_id = !flow.ids.contains(&id);
        let empty = json!({});
        let arguments_same = params.get("arguments").unwrap_or(&empty) == &flow.arguments;
        let responses_object = responses.is_none_or(Value::is_object);
        let ok = state_echoed
            && new_id
            && missing.is_empty()
            && extra.is_empty()
            && arguments_same
            && responses_object;
        let mut verdict = json!({
            "retry": flow.verdicts.len() + 1,
            "id": id,
            "new_id": new_id,
            "state_sent": flow.sent_state.is_some(),
            "state_received": received.is_some(),
            "state_echoed": state_echoed,
            "state_bytes_sent": flow.sent_state.as_ref().map(state_len),
            "state_bytes_received": received.map(state_len),
            "response_keys": response_keys,
            "missing_keys": missing,
            "extra_keys": extra,
            "responses_complete": missing.is_empty() && extra.is_empty() && responses_object,
            "responses": responses,
            "arguments_same": arguments_same,
            "ok": ok,
        });
        if let Some(received) = received.filter(|state| state_len(state) <= REPORTED_STATE_BYTES) {
            verdict["state_received_value"] = received.clone();
        }
        flow.verdicts.push(verdict);
        if flow.script.endless || flow.round < flow.script.rounds {
            if self.scenario.modern.check_capabilities
                && self.scenario.modern.era != Era::Legacy
                && let Some(required) =
                    missing_capabilities(flow.script.requests_for(flow.round), params)
            {
                self.shared.reply_error(id, capability_error(required));
                return;
            }
            self.send_input_required(id, tool, &mut flow);
            self.modern.flows.insert(tool.to_owned(), flow);
            return;
        }
        let result = match &flow.script.result {
            Some(result) => result.clone(),
            None => {
                let all_ok = flow.verdicts.iter().all(|v| v["ok"] == json!(true));
                let report = json!({"mrtr": {
                    "tool": tool,
                    "rounds": flow.round,
                    "first_call_carried_state": flow.first_call_carried,
                    "retries": flow.verdicts,
                    "ok": all_ok && !flow.first_call_carried,
                }});
                let decorate = Decorate {
                    result_type: self.scenario.modern.result_type.clone(),
                    server_info: self.scenario.server_info.clone(),
                };
                decorate.apply(text_result(report.to_string(), false))
            }
        };
        self.shared.reply_result(id, result);
    }
}
