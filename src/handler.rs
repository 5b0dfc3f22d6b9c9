//! Servers that ask the client for input: elicitation (a form, or a URL to visit),
//! the workspace roots, and LLM sampling, answered by one [`HostHandler`] the host
//! installs with [`ClientBuilder::host_handler`](crate::ClientBuilder::host_handler).
//!
//! **One path, both eras.** A legacy server sends `elicitation/create`,
//! `roots/list` or `sampling/createMessage` as a JSON-RPC request and gets the
//! handler's answer as the response; a 2026-07-28 server returns them as
//! `inputRequests` of an `input_required` result and gets the answers in the
//! retry's `inputResponses`. The same handler method answers both.
//!
//! **Declared = installed.** The client capabilities sent (in `initialize`, and in
//! every modern request's `_meta`) are exactly [`HostHandler::capabilities`];
//! without a handler nothing is declared. A request for something not declared is
//! answered `-32601` in the legacy era, and fails the call (`missing_capability`)
//! in the modern era: no answer is ever invented.
//!
//! **Untrusted content.** Everything in these requests is server-authored. Before
//! the handler sees it:
//!
//! - an elicitation's `message` is at most `maxElicitationMessageBytes`, its
//!   `requestedSchema` is the restricted form schema (an object of at most
//!   `maxElicitationFields` primitive fields: `string` (optionally `enum`, `format`
//!   `email`/`uri`/`date`/`date-time`, `minLength`/`maxLength`), `number`,
//!   `integer`, `boolean`, or an array of enum strings for a multi-select; nothing
//!   nested, so the depth is fixed at one level), and each field's `default` has
//!   the field's type;
//! - a URL elicitation's `url` is `https` (or `http` on a loopback host), without
//!   userinfo; the handler gets it parsed, with its origin to show;
//! - a sampling request has at most `maxSamplingMessages` messages.
//!
//! A request that breaks these rules is refused without reaching the handler
//! (legacy: `-32602`; modern: the call fails with `invalid_response`).
//!
//! **Answers.** An accepted form's content is checked against the form (types,
//! enum membership); fields the host left out get the schema's `default` (SEP-1034).
//! A URL elicitation is answered `accept` (the person went there), `decline` or
//! `cancel`; the server learns the outcome from the retry or the response.
//!
//! **Time.** While the handler works, the call's `requestTimeoutMs` does not run
//! (a person may be filling a form); `inputTimeoutMs` bounds each answer instead,
//! and a handler past it has its future dropped (legacy: the server gets an
//! error; modern: the call fails with `timeout`). Cancelling the call (dropping its
//! future, or closing the session) drops the handler's future too. Legacy requests
//! are not tied to a call: they end with the session, the server's
//! `notifications/cancelled`, or `inputTimeoutMs`, and at most
//! [`MAX_CONCURRENT_INPUTS`] run at once (more are answered `-32603`).
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use futures_util::future::BoxFuture;
//! use smthrs_mcp::handler::{ElicitAnswer, ElicitRequest, HostCapabilities, HostHandler, Root};
//! use smthrs_mcp::{Client, StdioCommand};
//!
//! struct Confirm;
//!
//! impl HostHandler for Confirm {
//!     fn capabilities(&self) -> HostCapabilities {
//!         HostCapabilities::default().with_elicitation_form().with_roots()
//!     }
//!
//!     fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
//!         Box::pin(async move {
//!             match request {
//!                 // Show request.message as the server's words, ask each field...
//!                 ElicitRequest::Form(form) if form.fields.is_empty() => {
//!                     ElicitAnswer::Accept(serde_json::Map::new())
//!                 }
//!                 _ => ElicitAnswer::Decline,
//!             }
//!         })
//!     }
//!
//!     fn list_roots(&self) -> BoxFuture<'_, Vec<Root>> {
//!         Box::pin(async { vec![Root::new("file:///home/me/project")] })
//!     }
//! }
//!
//! # async fn run() -> smthrs_mcp::Result<()> {
//! let client = Client::builder("demo")
//!     .host_handler(Arc::new(Confirm))
//!     .connect(StdioCommand::new("smthrs-mcp").arg("demo-server"))
//!     .await?;
//! # let _ = client;
//! # Ok(()) }
//! ```

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::limits::Limits;

/// How many legacy server requests are answered at once; more are refused.
pub const MAX_CONCURRENT_INPUTS: usize = 4;

/// What a host answers, declared as client capabilities. Built from the
/// default (nothing declared) with the `with_*` methods, so that a capability
/// added later does not break a host:
///
/// ```
/// use smthrs_mcp::handler::HostCapabilities;
/// let caps = HostCapabilities::default().with_elicitation_form().with_roots();
/// assert!(caps.elicitation_form && caps.roots && !caps.sampling);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostCapabilities {
    /// Form-mode elicitation.
    pub elicitation_form: bool,
    /// URL-mode elicitation.
    pub elicitation_url: bool,
    /// `roots/list`.
    pub roots: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
}

impl HostCapabilities {
    /// Declares form-mode elicitation too.
    #[must_use]
    pub const fn with_elicitation_form(mut self) -> Self {
        self.elicitation_form = true;
        self
    }

    /// Declares URL-mode elicitation too.
    #[must_use]
    pub const fn with_elicitation_url(mut self) -> Self {
        self.elicitation_url = true;
        self
    }

    /// Declares `roots/list` too.
    #[must_use]
    pub const fn with_roots(mut self) -> Self {
        self.roots = true;
        self
    }

    /// Declares `sampling/createMessage` too.
    #[must_use]
    pub const fn with_sampling(mut self) -> Self {
        self.sampling = true;
        self
    }

    /// The `ClientCapabilities` object.
    pub fn to_json(&self) -> Value {
        let mut caps = Map::new();
        if self.elicitation_form || self.elicitation_url {
            let mut modes = Map::new();
            if self.elicitation_form {
                modes.insert("form".into(), json!({}));
            }
            if self.elicitation_url {
                modes.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(modes));
        }
        if self.roots {
            caps.insert("roots".into(), json!({}));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        Value::Object(caps)
    }

    /// True when the host answers `method`.
    pub(crate) fn declares(&self, method: &str) -> bool {
        match method {
            "elicitation/create" => self.elicitation_form || self.elicitation_url,
            "roots/list" => self.roots,
            "sampling/createMessage" => self.sampling,
            _ => false,
        }
    }
}

/// Answers a server's input requests. Every method has a default that declines
/// (or lists nothing), so a host implements what it declares.
pub trait HostHandler: Send + Sync + 'static {
    /// What this host answers.
    fn capabilities(&self) -> HostCapabilities;

    /// Answers an elicitation (checked first: see the module docs).
    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        let _ = request;
        Box::pin(async { ElicitAnswer::Decline })
    }

    /// Lists the workspace roots.
    fn list_roots(&self) -> BoxFuture<'_, Vec<Root>> {
        Box::pin(async { Vec::new() })
    }

    /// Answers a sampling request with a `CreateMessageResult` object (`role`,
    /// `content`, `model`, ...), or `None` to refuse it (sampling has no decline:
    /// the server gets an error).
    fn create_message(&self, request: SamplingRequest) -> BoxFuture<'_, Option<Value>> {
        let _ = request;
        Box::pin(async { None })
    }
}

/// An elicitation, checked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequest {
    /// Ask a person to fill a form.
    Form(FormRequest),
    /// Ask a person to visit a URL (an out-of-band flow: a login, a payment).
    Url(UrlRequest),
}

/// A form elicitation.
#[derive(Debug, Clone, PartialEq)]
pub struct FormRequest {
    /// The server's message (server-authored: show it as the server's words).
    pub message: String,
    /// The fields, in the order of their names (a JSON object's member order is
    /// not kept).
    pub fields: Vec<FormField>,
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (the key in the answer).
    pub name: String,
    /// `title`, if given.
    pub title: Option<String>,
    /// `description`, if given.
    pub description: Option<String>,
    /// Whether the schema lists it as required.
    pub required: bool,
    /// Its type and constraints.
    pub kind: FieldKind,
    /// Its `default`, already checked against the type.
    pub default: Option<Value>,
}

/// The type of a form field.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// Free text, optionally constrained.
    String {
        /// `minLength`.
        min_length: Option<u64>,
        /// `maxLength`.
        max_length: Option<u64>,
        /// `format` (`email`, `uri`, `date`, `date-time`).
        format: Option<String>,
    },
    /// One of several strings (`enum`, or `oneOf` of `const`s), with display titles
    /// when the schema gives them.
    Choice {
        /// The allowed values.
        values: Vec<String>,
        /// A title per value (same length), when given.
        titles: Option<Vec<String>>,
    },
    /// Several of several strings (an array whose items are an enum).
    MultiChoice {
        /// The allowed values.
        values: Vec<String>,
    },
    /// A number (`integer: true` for `integer`).
    Number {
        /// Whole numbers only.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
}

/// A URL elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlRequest {
    /// The server's message (server-authored).
    pub message: String,
    /// The URL, checked (`https`, or `http` on loopback; no userinfo).
    pub url: url::Url,
    /// `scheme://host[:port]`, to show the person where they are going.
    pub origin: String,
}

/// The host's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Accepted: the form's content (ignored for a URL elicitation).
    Accept(Map<String, Value>),
    /// Declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

/// A workspace root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

impl Root {
    /// A root without a name.
    pub fn new(uri: impl Into<String>) -> Root {
        Root {
            uri: uri.into(),
            name: None,
        }
    }
}

/// A sampling request, checked (at most `maxSamplingMessages` messages).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The request's `params` as the server sent them (server-authored).
    pub params: Map<String, Value>,
}

/// Why an input request was refused before the handler saw it (crate-authored).
pub(crate) type Refusal = std::borrow::Cow<'static, str>;

/// Checks an `elicitation/create` request's params.
pub(crate) fn elicit_request(
    params: &Value,
    caps: &HostCapabilities,
    limits: &Limits,
) -> Result<ElicitRequest, Refusal> {
    let params = params
        .as_object()
        .ok_or("elicitation params are not an object")?;
    let message = match params.get("message") {
        Some(Value::String(m)) => m,
        _ => return Err("elicitation message is not a string".into()),
    };
    if message.len() as u64 > limits.max_elicitation_message_bytes {
        return Err(format!(
            "elicitation message is {} bytes; maxElicitationMessageBytes is {}",
            message.len(),
            limits.max_elicitation_message_bytes
        )
        .into());
    }
    let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
    match mode {
        "form" => {
            if !caps.elicitation_form {
                return Err("form elicitation is not declared".into());
            }
            let fields = form_fields(params.get("requestedSchema"), limits)?;
            Ok(ElicitRequest::Form(FormRequest {
                message: message.clone(),
                fields,
            }))
        }
        "url" => {
            if !caps.elicitation_url {
                return Err("URL elicitation is not declared".into());
            }
            let raw = params
                .get("url")
                .and_then(Value::as_str)
                .ok_or("elicitation url is not a string")?;
            let url = url::Url::parse(raw).map_err(|_| "elicitation url is not a URL")?;
            let loopback = match url.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            let allowed = url.scheme() == "https" || (url.scheme() == "http" && loopback);
            if !allowed || url.host().is_none() {
                return Err("elicitation url is not https (or http on loopback)".into());
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err("elicitation url carries userinfo".into());
            }
            let origin = url.origin().ascii_serialization();
            Ok(ElicitRequest::Url(UrlRequest {
                message: message.clone(),
                url,
                origin,
            }))
        }
        _ => Err("unknown elicitation mode".into()),
    }
}

fn form_fields(schema: Option<&Value>, limits: &Limits) -> Result<Vec<FormField>, Refusal> {
    let schema = schema
        .and_then(Value::as_object)
        .ok_or("requestedSchema is not an object")?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("requestedSchema.type is not \"object\"".into());
    }
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err("requestedSchema.properties is not an object".into()),
    };
    if properties.len() as u64 > limits.max_elicitation_fields {
        return Err(format!(
            "requestedSchema has {} fields; maxElicitationFields is {}",
            properties.len(),
            limits.max_elicitation_fields
        )
        .into());
    }
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) => r
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or("requestedSchema.required is not a list of names")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("requestedSchema.required is not a list of names".into()),
    };
    if let Some(missing) = required.iter().find(|r| !properties.contains_key(**r)) {
        let _ = missing;
        return Err("requestedSchema.required names an unknown field".into());
    }
    properties
        .iter()
        .map(|(name, field)| {
            let field = field.as_object().ok_or("a field schema is not an object")?;
            let text = |key: &str| -> Result<Option<String>, Refusal> {
                match field.get(key) {
                    None => Ok(None),
                    Some(Value::String(s))
                        if s.len() as u64 <= limits.max_elicitation_message_bytes =>
                    {
                        Ok(Some(s.clone()))
                    }
                    Some(_) => Err("a field's title or description is not a bounded string".into()),
                }
            };
            let kind = field_kind(field)?;
            let default = match field.get("default") {
                None => None,
                Some(value) => {
                    check_value(&kind, value)
                        .map_err(|_| "a field's default does not have its type")?;
                    Some(value.clone())
                }
            };
            Ok(FormField {
                name: name.clone(),
                title: text("title")?,
                description: text("description")?,
                required: required.contains(&name.as_str()),
                kind,
                default,
            })
        })
        .collect()
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn field_kind(field: &Map<String, Value>) -> Result<FieldKind, Refusal> {
    let number = |key: &str| -> Result<Option<f64>, Refusal> {
        match field.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or("a numeric constraint is not a number".into()),
        }
    };
    let count = |key: &str| -> Result<Option<u64>, Refusal> {
        match field.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or("a length constraint is not a count".into()),
        }
    };
    match field.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(values) = field.get("enum") {
                let values = strings(Some(values)).ok_or("an enum is not a list of strings")?;
                let titles = match field.get("enumNames") {
                    None => None,
                    Some(names) => Some(
                        strings(Some(names))
                            .filter(|t| t.len() == values.len())
                            .ok_or("enumNames do not match the enum")?,
                    ),
                };
                return Ok(FieldKind::Choice { values, titles });
            }
            if let Some(Value::Array(options)) = field.get("oneOf") {
                let mut values = Vec::new();
                let mut titles = Vec::new();
                for option in options {
                    let value = option
                        .get("const")
                        .and_then(Value::as_str)
                        .ok_or("a oneOf option has no string const")?;
                    values.push(value.to_owned());
                    titles.push(
                        option
                            .get("title")
                            .and_then(Value::as_str)
                            .unwrap_or(value)
                            .to_owned(),
                    );
                }
                return Ok(FieldKind::Choice {
                    values,
                    titles: Some(titles),
                });
            }
            let format = match field.get("format") {
                None => None,
                Some(Value::String(f))
                    if ["email", "uri", "date", "date-time"].contains(&f.as_str()) =>
                {
                    Some(f.clone())
                }
                Some(_) => {
                    return Err("a string format is not one of email, uri, date, date-time".into());
                }
            };
            Ok(FieldKind::String {
                min_length: count("minLength")?,
                max_length: count("maxLength")?,
                format,
            })
        }
        Some(kind @ ("number" | "integer")) => Ok(FieldKind::Number {
            integer: kind == "integer",
            minimum: number("minimum")?,
            maximum: number("maximum")?,
        }),
        Some("boolean") => Ok(FieldKind::Boolean),
        Some("array") => {
            let items = field
                .get("items")
                .and_then(Value::as_object)
                .ok_or("a multi-select has no items")?;
            let values = match (items.get("enum"), items.get("anyOf")) {
                (Some(values), _) => strings(Some(values)),
                (None, Some(Value::Array(options))) => options
                    .iter()
                    .map(|o| o.get("const").and_then(Value::as_str).map(str::to_owned))
                    .collect(),
                _ => None,
            };
            Ok(FieldKind::MultiChoice {
                values: values.ok_or("a multi-select's items are not an enum of strings")?,
            })
        }
        _ => Err("a field is not a primitive (string, number, integer, boolean, enum)".into()),
    }
}

/// Checks one value against a field's type.
pub(crate) fn check_value(kind: &FieldKind, value: &Value) -> Result<(), ()> {
    let ok = match (kind, value) {
        (FieldKind::String { .. }, Value::String(_)) => true,
        (FieldKind::Choice { values, .. }, Value::String(s)) => values.contains(s),
        (FieldKind::MultiChoice { values }, Value::Array(items)) => items
            .iter()
            .all(|i| i.as_str().is_some_and(|s| values.iter().any(|v| v == s))),
        (FieldKind::Number { integer: true, .. }, Value::Number(n)) => n.is_i64() || n.is_u64(),
        (FieldKind::Number { integer: false, .. }, Value::Number(_)) => true,
        (FieldKind::Boolean, Value::Bool(_)) => true,
        _ => false,
    };
    if ok { Ok(()) } else { Err(()) }
}

/// The `ElicitResult` for an answer: an accepted form's content is checked, and
/// the defaults of the fields left out are filled in (SEP-1034).
pub(crate) fn elicit_result(
    request: &ElicitRequest,
    answer: ElicitAnswer,
) -> Result<Value, Refusal> {
    match answer {
        ElicitAnswer::Decline => Ok(json!({"action": "decline"})),
        ElicitAnswer::Cancel => Ok(json!({"action": "cancel"})),
        ElicitAnswer::Accept(mut content) => match request {
            ElicitRequest::Url(_) => Ok(json!({"action": "accept"})),
            ElicitRequest::Form(form) => {
                for key in content.keys() {
                    if !form.fields.iter().any(|f| &f.name == key) {
                        return Err("the host answered a field the form does not have".into());
                    }
                }
                for field in &form.fields {
                    match content.get(&field.name) {
                        Some(value) => check_value(&field.kind, value)
                            .map_err(|()| "the host answered a field with the wrong type")?,
                        None => {
                            if let Some(default) = &field.default {
                                content.insert(field.name.clone(), default.clone());
                            } else if field.required {
                                return Err("the host left a required field out".into());
                            }
                        }
                    }
                }
                Ok(json!({"action": "accept", "content": content}))
            }
        },
    }
}

/// Checks a `sampling/createMessage` request's params.
pub(crate) fn sampling_request(
    params: &Value,
    limits: &Limits,
) -> Result<SamplingRequest, Refusal> {
    let params = params
        .as_object()
        .ok_or("sampling params are not an object")?;
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("sampling messages are not a list")?;
    if messages.len() as u64 > limits.max_sampling_messages {
        return Err(format!(
            "sampling request has {} messages; maxSamplingMessages is {}",
            messages.len(),
            limits.max_sampling_messages
        )
        .into());
    }
    Ok(SamplingRequest {
        params: params.clone(),
    })
}

/// The `ListRootsResult` for a list of roots.
pub(crate) fn roots_result(roots: Vec<Root>) -> Value {
    let roots: Vec<Value> = roots
        .into_iter()
        .map(|root| match root.name {
            Some(name) => json!({"uri": root.uri, "name": name}),
            None => json!({"uri": root.uri}),
        })
        .collect();
    json!({ "roots": roots })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> HostCapabilities {
        HostCapabilities {
            elicitation_form: true,
            elicitation_url: true,
            roots: true,
            sampling: false,
        }
    }

    fn form(schema: Value) -> Result<ElicitRequest, Refusal> {
        elicit_request(
            &json!({"message": "hi", "requestedSchema": schema}),
            &caps(),
            &Limits::default(),
        )
    }

    #[test]
    fn capabilities_follow_what_is_answered() {
        assert_eq!(HostCapabilities::default().to_json(), json!({}));
        assert_eq!(
            caps().to_json(),
            json!({"elicitation": {"form": {}, "url": {}}, "roots": {}})
        );
    }

    #[test]
    fn the_sep1034_form_gets_its_defaults() {
        let request = form(json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }, "required": []}))
        .unwrap();
        let result = elicit_result(&request, ElicitAnswer::Accept(Map::new())).unwrap();
        assert_eq!(
            result,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true}})
        );
    }

    #[test]
    fn non_primitive_or_oversized_forms_are_refused() {
        assert!(form(json!({"type": "object", "properties": {"a": {"type": "object"}}})).is_err());
        assert!(
            form(json!({"type": "object", "properties": {"a": {"type": "string", "default": 3}}}))
                .is_err()
        );
        assert!(form(json!({"type": "array"})).is_err());
        let many: Map<String, Value> = (0..40)
            .map(|i| (format!("f{i}"), json!({"type": "boolean"})))
            .collect();
        assert!(form(json!({"type": "object", "properties": many})).is_err());
        let long = "x".repeat(5000);
        assert!(
            elicit_request(
                &json!({"message": long, "requestedSchema": {"type": "object"}}),
                &caps(),
                &Limits::default()
            )
            .is_err()
        );
    }

    #[test]
    fn url_mode_requires_https_or_loopback() {
        let url = |u: &str| {
            elicit_request(
                &json!({"mode": "url", "message": "m", "url": u}),
                &caps(),
                &Limits::default(),
            )
        };
        let Ok(ElicitRequest::Url(ok)) = url("https://pay.example.com/x?y=1") else {
            panic!()
        };
        assert_eq!(ok.origin, "https://pay.example.com");
        assert!(url("http://127.0.0.1:8080/cb").is_ok());
        assert!(url("http://localhost/cb").is_ok());
        for bad in [
            "http://evil.example/x",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://u:p@h/x",
        ] {
            assert!(url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_are_checked_against_the_form() {
        let request = form(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .unwrap();
        let answer = |c: Value| {
            elicit_result(
                &request,
                ElicitAnswer::Accept(c.as_object().unwrap().clone()),
            )
        };
        assert!(answer(json!({"n": 1})).is_ok());
        assert!(answer(json!({"n": "1"})).is_err());
        assert!(answer(json!({})).is_err());
        assert!(answer(json!({"n": 1, "extra": 2})).is_err());
        assert_eq!(
            elicit_result(&request, ElicitAnswer::Decline).unwrap(),
            json!({"action": "decline"})
        );
    }
}
