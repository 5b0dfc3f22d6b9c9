//! Answers to what a server asks of the client mid-call, through the installed
//! [`HostHandler`]: 2026-07-28 `inputRequests` ([`Inputs::answer_all`]) and legacy
//! server-to-client requests ([`Inputs::answer_legacy`]). The rules are in the
//! [`handler`] module docs.
//!
//! Without a handler nothing is declared (`clientCapabilities` is `{}`), a modern
//! input request fails its call, and a legacy server request gets `-32601`.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use super::super::engine::{Core, lock};
use crate::error::{Detail, Error, ErrorKind, Result};
use crate::handler::{self, HostCapabilities, HostHandler, MAX_CONCURRENT_INPUTS, Refusal};
use crate::jsonrpc::{self, Id};

/// The most `inputRequests` entries one `input_required` result (or one
/// task's poll, of keys not seen before) may carry.
pub const MAX_INPUT_REQUESTS: usize = 16;

/// The methods a server may ask the client to answer.
pub(crate) const INPUT_METHODS: [&str; 3] =
    ["elicitation/create", "roots/list", "sampling/createMessage"];

/// The host's answers and the time spent waiting for them.
#[derive(Default)]
pub(crate) struct Inputs {
    handler: Option<Arc<dyn HostHandler>>,
    caps: HostCapabilities,
    /// Legacy requests answered at once.
    running: Option<Arc<Semaphore>>,
    /// Legacy requests being answered, by the server's id (its
    /// `notifications/cancelled` ends one).
    legacy: Mutex<Vec<(Id, tokio::task::AbortHandle)>>,
}

impl Inputs {
    pub(crate) fn new(handler: Option<Arc<dyn HostHandler>>) -> Inputs {
        let caps = handler
            .as_ref()
            .map(|h| h.capabilities())
            .unwrap_or_default();
        Inputs {
            handler,
            caps,
            running: Some(Arc::new(Semaphore::new(MAX_CONCURRENT_INPUTS))),
            legacy: Mutex::new(Vec::new()),
        }
    }

    /// The client capabilities the installed handler answers.
    pub(crate) fn capabilities(&self) -> Value {
        self.caps.to_json()
    }

    /// True when `method` is one the host declared.
    pub(crate) fn declares(&self, method: &str) -> bool {
        self.handler.is_some() && self.caps.declares(method)
    }

    /// Answers every entry of an `inputRequests` map (2026-07-28), or fails the call.
    pub(crate) async fn answer_all(
        &self,
        shared: &Core,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>> {
        let server = &shared.server;
        let mut answers = Map::new();
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str);
            // Only the three input methods may be asked for: anything else (no
            // method, not an object) is the server breaking the protocol, not a
            // capability this client lacks.
            let Some(method) = INPUT_METHODS.iter().find(|m| Some(**m) == method).copied() else {
                return Err(Error::invalid_response(format!(
                    "server \"{server}\" sent an input request that is not elicitation/create, roots/list or sampling/createMessage"
                )));
            };
            if !self.declares(method) {
                return Err(undeclared_input(server, method));
            }
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            // The calling request's own deadline moves on by the host's time
            // (`modern::call_tool`): other calls' deadlines do not.
            let answer = match self.answer(shared, method, &params, false).await {
                Answer::Result(value) => value,
                Answer::Refused(why) => {
                    return Err(Error::invalid_response(format!(
                        "server \"{server}\" sent an input request this client refuses: {why}"
                    )));
                }
                Answer::Failed(error) => return Err(error),
            };
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    /// One answer from the handler, bounded by `inputTimeoutMs`. With `pause`
    /// (a legacy request, tied to no call) the pause clock runs meanwhile, so
    /// every pending request's deadline moves on by the host's time.
    async fn answer(
        &self,
        shared: &Core,
        method: &'static str,
        params: &Value,
        pause: bool,
    ) -> Answer {
        let Some(handler) = self.handler.clone() else {
            return Answer::Refused("nothing is declared".into());
        };
        let limits = &shared.limits;
        let _paused = pause.then(|| shared.pauses.pause());
        let timeout = limits.input_timeout();
        let timed_out = || {
            Answer::Failed(
                Error::timeout(format!(
                    "the host did not answer server \"{}\" within inputTimeoutMs ({} ms)",
                    shared.server, limits.input_timeout_ms
                ))
                .with_detail(Detail::HostTimeout),
            )
        };
        match method {
            "elicitation/create" => {
                let request = match handler::elicit_request(params, &self.caps, limits) {
                    Ok(request) => request,
                    Err(why) => return Answer::Refused(why),
                };
                let Ok(answer) =
                    tokio::time::timeout(timeout, handler.elicit(request.clone())).await
                else {
                    return timed_out();
                };
                match handler::elicit_result(&request, answer) {
                    Ok(result) => Answer::Result(result),
                    Err(why) => Answer::Failed(Error::new(
                        ErrorKind::InputRefused,
                        format!(
                            "the host's answer to server \"{}\" does not fit its form: {why}",
                            shared.server
                        ),
                    )),
                }
            }
            "roots/list" => match tokio::time::timeout(timeout, handler.list_roots()).await {
                Ok(roots) => Answer::Result(handler::roots_result(roots)),
                Err(_) => timed_out(),
            },
            "sampling/createMessage" => {
                let request = match handler::sampling_request(params, limits) {
                    Ok(request) => request,
                    Err(why) => return Answer::Refused(why),
                };
                match tokio::time::timeout(timeout, handler.create_message(request)).await {
                    Ok(Some(Value::Object(result))) => Answer::Result(Value::Object(result)),
                    Ok(_) => Answer::Failed(Error::new(
                        ErrorKind::InputRefused,
                        format!(
                            "the host refused the sampling request of server \"{}\"",
                            shared.server
                        ),
                    )),
                    Err(_) => timed_out(),
                }
            }
            _ => Answer::Refused("an unknown input request".into()),
        }
    }

    /// A legacy server request for input (`id`, `method` declared): answered in a
    /// task of its own, so the reader goes on; the response goes through the
    /// outbound queue like any reply. At most [`MAX_CONCURRENT_INPUTS`] at once.
    fn answer_legacy(
        self: &Arc<Self>,
        core: &Arc<Core>,
        id: Id,
        method: &'static str,
        params: Value,
    ) {
        let permit = self
            .running
            .as_ref()
            .and_then(|running| running.clone().try_acquire_owned().ok());
        let shared = core.clone();
        let inputs = self.clone();
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let reply = match permit {
                None => error_reply(&task_id, -32603, "too many input requests at once"),
                Some(_permit) => {
                    let answered = tokio::select! {
                        biased;
                        _ = shared.ended.cancelled() => return,
                        answered = inputs.answer(&shared, method, &params, true) => answered,
                    };
                    match answered {
                        Answer::Result(result) => {
                            json!({"jsonrpc": "2.0", "id": task_id.to_value(), "result": result})
                        }
                        Answer::Refused(_) => error_reply(&task_id, -32602, "invalid params"),
                        Answer::Failed(_) => {
                            error_reply(&task_id, -32603, "the client could not answer")
                        }
                    }
                }
            };
            inputs.forget_legacy(&task_id);
            let _ = shared.send_reply(&reply).await;
        });
        lock(&self.legacy).push((id, task.abort_handle()));
    }

    /// The server cancelled its request `id`: its answer is no longer wanted.
    pub(crate) fn cancel_legacy(&self, id: &Id) {
        let mut running = lock(&self.legacy);
        running.retain(|(request, task)| {
            if request == id {
                task.abort();
                false
            } else {
                !task.is_finished()
            }
        });
    }

    /// True while legacy input requests are being answered.
    pub(crate) fn legacy_running(&self) -> bool {
        !lock(&self.legacy).is_empty()
    }

    fn forget_legacy(&self, id: &Id) {
        lock(&self.legacy).retain(|(request, _)| request != id);
    }
}

/// What [`Inputs::answer`] produced.
enum Answer {
    /// The result to send.
    Result(Value),
    /// The request breaks the rules; the handler never saw it.
    Refused(Refusal),
    /// The host could not answer (timeout, a bad answer).
    Failed(Error),
}

/// A call that failed because the server asked for an input the client did not
/// declare.
fn undeclared_input(server: &str, method: &'static str) -> Error {
    Error::new(
        ErrorKind::MissingCapability,
        format!("server \"{server}\" asked for {method}, which this client did not declare"),
    )
}

fn error_reply(id: &Id, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {"code": code, "message": message}})
}

/// The `requestId` of a `notifications/cancelled` frame.
pub(crate) fn cancelled_request(frame: &[u8]) -> Option<Id> {
    let params = jsonrpc::request_params(frame)?;
    Id::from_json(params.get("requestId")?)
}

impl Inputs {
    /// A legacy request from the server: the input requests the host declared
    /// are answered in a task of their own, `ping` is answered, the rest is
    /// refused with -32601. The reply for the core to queue, if any.
    pub(crate) fn server_request(
        self: &Arc<Self>,
        core: &Arc<Core>,
        id: Id,
        method: &str,
        frame: &[u8],
    ) -> Option<Value> {
        if let Some(input) = INPUT_METHODS.iter().find(|m| **m == method)
            && self.declares(input)
        {
            let params = jsonrpc::request_params(frame).map_or(Value::Null, Value::Object);
            self.answer_legacy(core, id, input, params);
            return None;
        }
        Some(if method == "ping" {
            jsonrpc::ping_reply(&id)
        } else {
            jsonrpc::method_not_found_reply(&id)
        })
    }

    /// A notification from the server: a legacy `notifications/cancelled` ends
    /// the input request it names.
    pub(crate) fn server_notification(&self, method: &str, frame: &[u8]) {
        if method == "notifications/cancelled"
            && self.legacy_running()
            && let Some(id) = cancelled_request(frame)
        {
            self.cancel_legacy(&id);
        }
    }
}
