//! The limits that bound an untrusted server: the contract's ten, five more that
//! the 2026-07-28 revision needs (the `server/discover` probe's wait,
//! multi-round-trip results, `Mcp-Param-*` headers), and four for what a server
//! asks the host ([`handler`](crate::handler): the answer's deadline, the size of a
//! form or a sampling request).
//!
//! Every bound is an option with an exported default constant. Each must be a
//! positive safe integer (1 ..= 2^53-1); [`Limits::validate`] enforces that before
//! anything is spawned or connected, failing with `protocol_error` naming the option.

use std::time::Duration;

use crate::error::{Error, Result};

/// Default for [`Limits::handshake_timeout_ms`]: each `initialize` and `tools/list` exchange.
pub const DEFAULT_HANDSHAKE_TIMEOUT_MS: u64 = 10_000;
/// Default for [`Limits::request_timeout_ms`]: each later `tools/call` exchange.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 120_000;
/// Default for [`Limits::queue_capacity`]: outbound frames waiting to be written.
pub const DEFAULT_QUEUE_CAPACITY: u64 = 64;
/// Default for [`Limits::max_frame_bytes`]: one inbound JSON-RPC frame, in UTF-8 bytes.
pub const DEFAULT_MAX_FRAME_BYTES: u64 = 1_048_576;
/// Default for [`Limits::max_outbound_frame_bytes`]: one outbound frame, in UTF-8 bytes.
pub const DEFAULT_MAX_OUTBOUND_FRAME_BYTES: u64 = 1_048_576;
/// Default for [`Limits::max_tools`]: tools accepted across every catalog page.
pub const DEFAULT_MAX_TOOLS: u64 = 256;
/// Default for [`Limits::max_tool_name_bytes`]: UTF-8 bytes in one tool name.
pub const DEFAULT_MAX_TOOL_NAME_BYTES: u64 = 128;
/// Default for [`Limits::max_tool_document_bytes`]: one tool's description plus its JSON `inputSchema`.
pub const DEFAULT_MAX_TOOL_DOCUMENT_BYTES: u64 = 65_536;
/// Default for [`Limits::max_catalog_pages`]: `tools/list` pages walked.
pub const DEFAULT_MAX_CATALOG_PAGES: u64 = 32;
/// Default for [`Limits::max_stderr_bytes`]: child stderr retained as a diagnostic tail.
pub const DEFAULT_MAX_STDERR_BYTES: u64 = 2048;
/// Default for [`Limits::probe_timeout_ms`]: the wait for the answer to the
/// `server/discover` probe.
pub const DEFAULT_PROBE_TIMEOUT_MS: u64 = 5_000;
/// Default for [`Limits::max_input_rounds`]: `input_required` rounds in one call
/// (every SDK uses 10).
pub const DEFAULT_MAX_INPUT_ROUNDS: u64 = 10;
/// Default for [`Limits::max_request_state_bytes`]: one `requestState`, in UTF-8 bytes.
pub const DEFAULT_MAX_REQUEST_STATE_BYTES: u64 = 65_536;
/// Default for [`Limits::max_param_headers`]: `x-mcp-header` annotations in one tool.
pub const DEFAULT_MAX_PARAM_HEADERS: u64 = 32;
/// Default for [`Limits::max_param_header_bytes`]: the `Mcp-Param-*` headers of one call.
pub const DEFAULT_MAX_PARAM_HEADER_BYTES: u64 = 8_192;
/// Default for [`Limits::input_timeout_ms`]: one answer of the host handler (five
/// minutes: a person may be filling a form).
pub const DEFAULT_INPUT_TIMEOUT_MS: u64 = 300_000;
/// Default for [`Limits::max_elicitation_message_bytes`].
pub const DEFAULT_MAX_ELICITATION_MESSAGE_BYTES: u64 = 4_096;
/// Default for [`Limits::max_elicitation_fields`].
pub const DEFAULT_MAX_ELICITATION_FIELDS: u64 = 32;
/// Default for [`Limits::max_sampling_messages`].
pub const DEFAULT_MAX_SAMPLING_MESSAGES: u64 = 64;

/// Default for [`Limits::max_resources`].
pub const DEFAULT_MAX_RESOURCES: u64 = 1_024;
/// Default for [`Limits::max_resource_templates`].
pub const DEFAULT_MAX_RESOURCE_TEMPLATES: u64 = 256;
/// Default for [`Limits::max_prompts`].
pub const DEFAULT_MAX_PROMPTS: u64 = 256;
/// Default for [`Limits::max_prompt_arguments`].
pub const DEFAULT_MAX_PROMPT_ARGUMENTS: u64 = 32;
/// Default for [`Limits::max_prompt_messages`].
pub const DEFAULT_MAX_PROMPT_MESSAGES: u64 = 128;
/// Default for [`Limits::max_entry_document_bytes`].
pub const DEFAULT_MAX_ENTRY_DOCUMENT_BYTES: u64 = 65_536;
/// Default for [`Limits::max_uri_bytes`].
pub const DEFAULT_MAX_URI_BYTES: u64 = 4_096;
/// Default for [`Limits::max_resource_bytes`].
pub const DEFAULT_MAX_RESOURCE_BYTES: u64 = 16_777_216;
/// Default for [`Limits::max_resource_contents`].
pub const DEFAULT_MAX_RESOURCE_CONTENTS: u64 = 64;
/// Default for [`Limits::max_skills`].
pub const DEFAULT_MAX_SKILLS: u64 = 1_024;
/// Default for [`Limits::max_skill_files`].
pub const DEFAULT_MAX_SKILL_FILES: u64 = 512;
/// Default for [`Limits::max_skill_bytes`].
pub const DEFAULT_MAX_SKILL_BYTES: u64 = 16_777_216;
/// Default for [`Limits::max_skill_frontmatter_bytes`].
pub const DEFAULT_MAX_SKILL_FRONTMATTER_BYTES: u64 = 65_536;
/// Default for [`Limits::max_subscriptions`].
pub const DEFAULT_MAX_SUBSCRIPTIONS: u64 = 8;
/// Default for [`Limits::max_resource_subscriptions`].
pub const DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS: u64 = 128;
/// Default for [`Limits::max_notifications_per_second`].
pub const DEFAULT_MAX_NOTIFICATIONS_PER_SECOND: u64 = 64;
/// Default for [`Limits::max_pending_events`].
pub const DEFAULT_MAX_PENDING_EVENTS: u64 = 64;
/// Default for [`Limits::max_request_ms`].
pub const DEFAULT_MAX_REQUEST_MS: u64 = 1_800_000;
/// Default for [`Limits::task_min_poll_interval_ms`].
pub const DEFAULT_TASK_MIN_POLL_INTERVAL_MS: u64 = 500;
/// Default for [`Limits::task_max_poll_interval_ms`].
pub const DEFAULT_TASK_MAX_POLL_INTERVAL_MS: u64 = 30_000;
/// Default for [`Limits::max_task_wait_ms`].
pub const DEFAULT_MAX_TASK_WAIT_MS: u64 = 3_600_000;
/// Default for [`Limits::max_task_polls`].
pub const DEFAULT_MAX_TASK_POLLS: u64 = 10_000;
/// Default for [`Limits::max_task_input_requests`].
pub const DEFAULT_MAX_TASK_INPUT_REQUESTS: u64 = 32;

/// Room past the base64 of a read's bytes for its envelope, `uri`, `mimeType`
/// and `_meta`, in the frame a `resources/read` reply may take (see
/// [`Limits::max_resource_bytes`]). Fixed.
pub const READ_ENVELOPE_BYTES: u64 = 65_536;

/// The largest value any limit may take: JavaScript's `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Maximum nesting of JSON containers in any message, envelope included. Fixed.
pub const MAX_JSON_DEPTH: usize = 128;

/// The limits, all positive integers. Construct with [`Limits::default`] and
/// adjust fields; [`Limits::validate`] runs again at connect time.
///
/// ```
/// let mut limits = smthrs_mcp::Limits::default();
/// limits.max_tools = 512;
/// limits.max_frame_bytes = 4 * 1024 * 1024;
/// assert!(limits.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Bounds each `initialize` and `tools/list` exchange (ms). Default 10 000.
    pub handshake_timeout_ms: u64,
    /// Bounds each later `tools/call` exchange and reply-queue admission (ms). Default 120 000.
    ///
    /// The deadline is kept however fast a server floods the session: it fires
    /// late by at most the time to route the frames at hand when it passes (one
    /// tokio cooperative budget, 128 frames) and one scheduling round of the
    /// runtime, on either transport, era and runtime flavour. `DOS.md` ("A deadline
    /// under a flood") has the measured overshoot; the tests allow two seconds, for
    /// debug builds on a busy machine.
    pub request_timeout_ms: u64,
    /// Outbound frames waiting to be written (HTTP: in-flight POSTs). Default 64.
    pub queue_capacity: u64,
    /// One inbound JSON-RPC frame, in UTF-8 bytes. Default 1 MiB.
    pub max_frame_bytes: u64,
    /// One outbound JSON-RPC frame, in UTF-8 bytes. Default 1 MiB.
    pub max_outbound_frame_bytes: u64,
    /// Tools accepted across every catalog page; more fails the connection. Default 256.
    pub max_tools: u64,
    /// UTF-8 bytes in one tool name. Default 128.
    pub max_tool_name_bytes: u64,
    /// UTF-8 bytes of one tool's description plus its JSON-encoded `inputSchema`. Default 64 KiB.
    pub max_tool_document_bytes: u64,
    /// `tools/list` pages walked while following a cursor. Default 32.
    pub max_catalog_pages: u64,
    /// Redacted child stderr retained as the diagnostic tail. Default 2048.
    pub max_stderr_bytes: u64,
    /// Bounds the wait for the answer to the `server/discover` probe (ms). On
    /// stdio a probe unanswered this long means a legacy server (it falls back);
    /// on HTTP it is a timeout. Default 5 000.
    pub probe_timeout_ms: u64,
    /// `input_required` results (2026-07-28) answered in one call before the call
    /// fails. Default 10.
    pub max_input_rounds: u64,
    /// UTF-8 bytes of one `requestState` (2026-07-28); a larger one fails the
    /// call. Default 64 KiB.
    pub max_request_state_bytes: u64,
    /// `x-mcp-header` annotations in one tool (2026-07-28, HTTP); a tool with more
    /// is dropped from the catalog. Default 32.
    pub max_param_headers: u64,
    /// Bytes of the `Mcp-Param-*` headers (names and values) of one call
    /// (2026-07-28, HTTP); a call past it is refused before anything is sent.
    /// Default 8 KiB.
    pub max_param_header_bytes: u64,
    /// Bounds each answer of the host handler (ms); `requestTimeoutMs` does not
    /// run meanwhile. Default 300 000.
    pub input_timeout_ms: u64,
    /// UTF-8 bytes of an elicitation's message (and of each field's title and
    /// description). Default 4096.
    pub max_elicitation_message_bytes: u64,
    /// Fields in one elicitation form. Default 32.
    pub max_elicitation_fields: u64,
    /// Messages in one sampling request. Default 64.
    pub max_sampling_messages: u64,
    /// Resources across one `resources/list` walk. Default 1024.
    pub max_resources: u64,
    /// Resource templates across one `resources/templates/list` walk. Default 256.
    pub max_resource_templates: u64,
    /// Prompts across one `prompts/list` walk. Default 256.
    pub max_prompts: u64,
    /// Arguments of one prompt. Default 32.
    pub max_prompt_arguments: u64,
    /// Messages in one `prompts/get` result. Default 128.
    pub max_prompt_messages: u64,
    /// The JSON bytes of one resource, template, prompt or skill entry, its `uri` aside. Default 65 536.
    pub max_entry_document_bytes: u64,
    /// UTF-8 bytes of any URI or URI template a server sends. Default 4096.
    pub max_uri_bytes: u64,
    /// Decoded bytes of one `resources/read` (text plus decoded blobs), and of
    /// the binary and embedded content of one prompt result or one `tools/call`
    /// result. A `resources/read` reply (and only one) may be a frame past
    /// `maxFrameBytes`: this many bytes as base64, plus 64 KiB of envelope.
    /// Default 16 MiB.
    pub max_resource_bytes: u64,
    /// `contents` items in one `resources/read` result. Default 64.
    pub max_resource_contents: u64,
    /// Skills across one `skills/list` walk. Default 1024.
    pub max_skills: u64,
    /// Files listed by one skill; at least 512, the Skills extension's floor. Default 512.
    pub max_skill_files: u64,
    /// The summed sizes of one skill's files (or the bytes read of a dynamic one); at least 16 MiB, the Skills extension's floor. Default 16 MiB.
    pub max_skill_bytes: u64,
    /// Bytes of one `SKILL.md`'s YAML frontmatter. Default 65 536.
    pub max_skill_frontmatter_bytes: u64,
    /// Subscriptions open at once in one session
    /// ([`Client::subscribe`](crate::Client::subscribe); 2026-07-28: listen
    /// streams); one more is refused locally (`invalid_config`). Default 8.
    pub max_subscriptions: u64,
    /// Resource URIs one subscription asks for, and (legacy) the distinct URIs
    /// subscribed in one session; more is refused locally (`invalid_config`).
    /// Default 128.
    pub max_resource_subscriptions: u64,
    /// Change notifications accepted in one second, per session (legacy) or
    /// per listen stream (2026-07-28), and progress notifications per call (both
    /// eras); the rest are dropped and counted. Default 64.
    pub max_notifications_per_second: u64,
    /// Distinct events one subscription holds for the host (equal ones are
    /// coalesced); one more ends the subscription as lagged. Default 64.
    pub max_pending_events: u64,
    /// The hard cap of one call from its send, however progress restarts its timeout, and the most a call's own timeout may be. Default 1 800 000 (30 minutes).
    pub max_request_ms: u64,
    /// The least time between two `tasks/get` polls of one task, combined with the server's `pollIntervalMs` (the larger wins). Default 500.
    pub task_min_poll_interval_ms: u64,
    /// The ceiling of the client's own poll backoff when the server gives no interval (a server interval above it is honoured, within `maxTaskWaitMs`). Default 30 000.
    pub task_max_poll_interval_ms: u64,
    /// How long one call waits for its task to end; then it fails with `timeout`. Default 3 600 000 (one hour).
    pub max_task_wait_ms: u64,
    /// `tasks/get` polls of one task; one more fails the call with `timeout`. Default 10 000.
    pub max_task_polls: u64,
    /// Distinct `inputRequests` keys over one task's life; one more fails the call with `invalid_response`. Default 32.
    pub max_task_input_requests: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            handshake_timeout_ms: DEFAULT_HANDSHAKE_TIMEOUT_MS,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_outbound_frame_bytes: DEFAULT_MAX_OUTBOUND_FRAME_BYTES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_tool_name_bytes: DEFAULT_MAX_TOOL_NAME_BYTES,
            max_tool_document_bytes: DEFAULT_MAX_TOOL_DOCUMENT_BYTES,
            max_catalog_pages: DEFAULT_MAX_CATALOG_PAGES,
            max_stderr_bytes: DEFAULT_MAX_STDERR_BYTES,
            probe_timeout_ms: DEFAULT_PROBE_TIMEOUT_MS,
            max_input_rounds: DEFAULT_MAX_INPUT_ROUNDS,
            max_request_state_bytes: DEFAULT_MAX_REQUEST_STATE_BYTES,
            max_param_headers: DEFAULT_MAX_PARAM_HEADERS,
            max_param_header_bytes: DEFAULT_MAX_PARAM_HEADER_BYTES,
            input_timeout_ms: DEFAULT_INPUT_TIMEOUT_MS,
            max_elicitation_message_bytes: DEFAULT_MAX_ELICITATION_MESSAGE_BYTES,
            max_elicitation_fields: DEFAULT_MAX_ELICITATION_FIELDS,
            max_sampling_messages: DEFAULT_MAX_SAMPLING_MESSAGES,
            max_resources: DEFAULT_MAX_RESOURCES,
            max_resource_templates: DEFAULT_MAX_RESOURCE_TEMPLATES,
            max_prompts: DEFAULT_MAX_PROMPTS,
            max_prompt_arguments: DEFAULT_MAX_PROMPT_ARGUMENTS,
            max_prompt_messages: DEFAULT_MAX_PROMPT_MESSAGES,
            max_entry_document_bytes: DEFAULT_MAX_ENTRY_DOCUMENT_BYTES,
            max_uri_bytes: DEFAULT_MAX_URI_BYTES,
            max_resource_bytes: DEFAULT_MAX_RESOURCE_BYTES,
            max_resource_contents: DEFAULT_MAX_RESOURCE_CONTENTS,
            max_skills: DEFAULT_MAX_SKILLS,
            max_skill_files: DEFAULT_MAX_SKILL_FILES,
            max_skill_bytes: DEFAULT_MAX_SKILL_BYTES,
            max_skill_frontmatter_bytes: DEFAULT_MAX_SKILL_FRONTMATTER_BYTES,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            max_resource_subscriptions: DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS,
            max_notifications_per_second: DEFAULT_MAX_NOTIFICATIONS_PER_SECOND,
            max_pending_events: DEFAULT_MAX_PENDING_EVENTS,
            max_request_ms: DEFAULT_MAX_REQUEST_MS,
            task_min_poll_interval_ms: DEFAULT_TASK_MIN_POLL_INTERVAL_MS,
            task_max_poll_interval_ms: DEFAULT_TASK_MAX_POLL_INTERVAL_MS,
            max_task_wait_ms: DEFAULT_MAX_TASK_WAIT_MS,
            max_task_polls: DEFAULT_MAX_TASK_POLLS,
            max_task_input_requests: DEFAULT_MAX_TASK_INPUT_REQUESTS,
        }
    }
}

/// The (camelCase) option names, the contract's ten in table order first.
pub const OPTION_NAMES: [&str; 42] = [
    "handshakeTimeoutMs",
    "requestTimeoutMs",
    "queueCapacity",
    "maxFrameBytes",
    "maxOutboundFrameBytes",
    "maxTools",
    "maxToolNameBytes",
    "maxToolDocumentBytes",
    "maxCatalogPages",
    "maxStderrBytes",
    "probeTimeoutMs",
    "maxInputRounds",
    "maxRequestStateBytes",
    "maxParamHeaders",
    "maxParamHeaderBytes",
    "inputTimeoutMs",
    "maxElicitationMessageBytes",
    "maxElicitationFields",
    "maxSamplingMessages",
    "maxResources",
    "maxResourceTemplates",
    "maxPrompts",
    "maxPromptArguments",
    "maxPromptMessages",
    "maxEntryDocumentBytes",
    "maxUriBytes",
    "maxResourceBytes",
    "maxResourceContents",
    "maxSkills",
    "maxSkillFiles",
    "maxSkillBytes",
    "maxSkillFrontmatterBytes",
    "maxSubscriptions",
    "maxResourceSubscriptions",
    "maxNotificationsPerSecond",
    "maxPendingEvents",
    "maxRequestMs",
    "taskMinPollIntervalMs",
    "taskMaxPollIntervalMs",
    "maxTaskWaitMs",
    "maxTaskPolls",
    "maxTaskInputRequests",
];

impl Limits {
    fn fields(&self) -> [u64; 42] {
        [
            self.handshake_timeout_ms,
            self.request_timeout_ms,
            self.queue_capacity,
            self.max_frame_bytes,
            self.max_outbound_frame_bytes,
            self.max_tools,
            self.max_tool_name_bytes,
            self.max_tool_document_bytes,
            self.max_catalog_pages,
            self.max_stderr_bytes,
            self.probe_timeout_ms,
            self.max_input_rounds,
            self.max_request_state_bytes,
            self.max_param_headers,
            self.max_param_header_bytes,
            self.input_timeout_ms,
            self.max_elicitation_message_bytes,
            self.max_elicitation_fields,
            self.max_sampling_messages,
            self.max_resources,
            self.max_resource_templates,
            self.max_prompts,
            self.max_prompt_arguments,
            self.max_prompt_messages,
            self.max_entry_document_bytes,
            self.max_uri_bytes,
            self.max_resource_bytes,
            self.max_resource_contents,
            self.max_skills,
            self.max_skill_files,
            self.max_skill_bytes,
            self.max_skill_frontmatter_bytes,
            self.max_subscriptions,
            self.max_resource_subscriptions,
            self.max_notifications_per_second,
            self.max_pending_events,
            self.max_request_ms,
            self.task_min_poll_interval_ms,
            self.task_max_poll_interval_ms,
            self.max_task_wait_ms,
            self.max_task_polls,
            self.max_task_input_requests,
        ]
    }

    fn field_mut(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "handshakeTimeoutMs" => &mut self.handshake_timeout_ms,
            "requestTimeoutMs" => &mut self.request_timeout_ms,
            "queueCapacity" => &mut self.queue_capacity,
            "maxFrameBytes" => &mut self.max_frame_bytes,
            "maxOutboundFrameBytes" => &mut self.max_outbound_frame_bytes,
            "maxTools" => &mut self.max_tools,
            "maxToolNameBytes" => &mut self.max_tool_name_bytes,
            "maxToolDocumentBytes" => &mut self.max_tool_document_bytes,
            "maxCatalogPages" => &mut self.max_catalog_pages,
            "maxStderrBytes" => &mut self.max_stderr_bytes,
            "probeTimeoutMs" => &mut self.probe_timeout_ms,
            "maxInputRounds" => &mut self.max_input_rounds,
            "maxRequestStateBytes" => &mut self.max_request_state_bytes,
            "maxParamHeaders" => &mut self.max_param_headers,
            "maxParamHeaderBytes" => &mut self.max_param_header_bytes,
            "inputTimeoutMs" => &mut self.input_timeout_ms,
            "maxElicitationMessageBytes" => &mut self.max_elicitation_message_bytes,
            "maxElicitationFields" => &mut self.max_elicitation_fields,
            "maxSamplingMessages" => &mut self.max_sampling_messages,
            "maxResources" => &mut self.max_resources,
            "maxResourceTemplates" => &mut self.max_resource_templates,
            "maxPrompts" => &mut self.max_prompts,
            "maxPromptArguments" => &mut self.max_prompt_arguments,
            "maxPromptMessages" => &mut self.max_prompt_messages,
            "maxEntryDocumentBytes" => &mut self.max_entry_document_bytes,
            "maxUriBytes" => &mut self.max_uri_bytes,
            "maxResourceBytes" => &mut self.max_resource_bytes,
            "maxResourceContents" => &mut self.max_resource_contents,
            "maxSkills" => &mut self.max_skills,
            "maxSkillFiles" => &mut self.max_skill_files,
            "maxSkillBytes" => &mut self.max_skill_bytes,
            "maxSkillFrontmatterBytes" => &mut self.max_skill_frontmatter_bytes,
            "maxSubscriptions" => &mut self.max_subscriptions,
            "maxResourceSubscriptions" => &mut self.max_resource_subscriptions,
            "maxNotificationsPerSecond" => &mut self.max_notifications_per_second,
            "maxPendingEvents" => &mut self.max_pending_events,
            "maxRequestMs" => &mut self.max_request_ms,
            "taskMinPollIntervalMs" => &mut self.task_min_poll_interval_ms,
            "taskMaxPollIntervalMs" => &mut self.task_max_poll_interval_ms,
            "maxTaskWaitMs" => &mut self.max_task_wait_ms,
            "maxTaskPolls" => &mut self.max_task_polls,
            "maxTaskInputRequests" => &mut self.max_task_input_requests,
            _ => return None,
        })
    }

    /// Checks that every limit is a positive safe integer.
    ///
    /// Fails with `protocol_error` naming the first offending option.
    pub fn validate(&self) -> Result<()> {
        for (name, value) in OPTION_NAMES.iter().zip(self.fields()) {
            if value == 0 || value > MAX_SAFE_INTEGER {
                return Err(Error::protocol(format!(
                    "option {name} must be a positive safe integer"
                )));
            }
        }
        // The Skills extension asks hosts to accept skills this large at least.
        for (name, value, floor) in [
            (
                "maxSkillFiles",
                self.max_skill_files,
                DEFAULT_MAX_SKILL_FILES,
            ),
            (
                "maxSkillBytes",
                self.max_skill_bytes,
                DEFAULT_MAX_SKILL_BYTES,
            ),
        ] {
            if value < floor {
                return Err(Error::protocol(format!(
                    "option {name} must be at least {floor}, the Skills extension's floor"
                )));
            }
        }
        // The task poll floor under its own backoff's ceiling; one poll's wait
        // within the whole wait.
        if self.task_min_poll_interval_ms > self.task_max_poll_interval_ms {
            return Err(Error::protocol(format!(
                "option taskMinPollIntervalMs ({}) must be at most taskMaxPollIntervalMs ({})",
                self.task_min_poll_interval_ms, self.task_max_poll_interval_ms
            )));
        }
        if self.task_min_poll_interval_ms > self.max_task_wait_ms {
            return Err(Error::protocol(format!(
                "option taskMinPollIntervalMs ({}) must be at most maxTaskWaitMs ({})",
                self.task_min_poll_interval_ms, self.max_task_wait_ms
            )));
        }
        Ok(())
    }

    /// Sets the option with the contract's camelCase `name` from a JSON value,
    /// as a stored server entry or database row would carry it.
    ///
    /// The value must be a JSON number that is a positive integer no larger than
    /// 2^53-1 (an integral float such as `5.0` is accepted, as JavaScript would).
    /// Zero, negative, fractional, oversized and non-numeric values fail with
    /// `protocol_error` naming the option. Unknown names fail the same way.
    pub fn set_from_json(&mut self, name: &str, value: &serde_json::Value) -> Result<()> {
        let parsed = positive_safe_integer(value).ok_or_else(|| {
            Error::protocol(format!("option {name} must be a positive safe integer"))
        })?;
        let slot = self
            .field_mut(name)
            .ok_or_else(|| Error::protocol(format!("unknown limit option {name}")))?;
        *slot = parsed;
        Ok(())
    }

    /// Builds limits from a JSON object, reading any of the camelCase option
    /// names it contains and ignoring other keys. Absent options keep their defaults.
    pub fn from_json_object(object: &serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        let mut limits = Limits::default();
        for name in OPTION_NAMES {
            if let Some(value) = object.get(name) {
                limits.set_from_json(name, value)?;
            }
        }
        Ok(limits)
    }

    /// [`Limits::handshake_timeout_ms`] as a `Duration`.
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.handshake_timeout_ms)
    }

    /// [`Limits::probe_timeout_ms`] as a `Duration`.
    pub fn probe_timeout(&self) -> Duration {
        Duration::from_millis(self.probe_timeout_ms)
    }

    /// [`Limits::input_timeout_ms`] as a `Duration`.
    pub fn input_timeout(&self) -> Duration {
        Duration::from_millis(self.input_timeout_ms)
    }

    /// [`Limits::request_timeout_ms`] as a `Duration`.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// The longest frame a `resources/read` reply (a skill file's too) may be
    /// (beyond-tools.md Q3, §5.6): `maxFrameBytes` when `maxResourceBytes` is
    /// no larger; otherwise room for `maxResourceBytes` of content sent as
    /// base64 (a 16 MiB skill file is about 22.4 MiB on the wire) plus
    /// [`READ_ENVELOPE_BYTES`] for the envelope and the item's other members.
    pub(crate) fn read_frame_bytes(&self) -> u64 {
        if self.max_resource_bytes <= self.max_frame_bytes {
            return self.max_frame_bytes;
        }
        let base64 = self.max_resource_bytes.div_ceil(3).saturating_mul(4);
        self.max_frame_bytes
            .max(base64.saturating_add(READ_ENVELOPE_BYTES))
    }

    /// A limit as `usize`, saturating on 32-bit targets.
    pub(crate) fn usize_of(value: u64) -> usize {
        usize::try_from(value).unwrap_or(usize::MAX)
    }
}

/// A JSON number that is a positive integer within the safe range.
pub(crate) fn positive_safe_integer(value: &serde_json::Value) -> Option<u64> {
    let number = value.as_number()?;
    if let Some(n) = number.as_u64() {
        return (1..=MAX_SAFE_INTEGER).contains(&n).then_some(n);
    }
    let f = number.as_f64()?;
    // Negative integers and fractions are refused; integral floats are JS integers.
    if f.is_finite() && f.fract() == 0.0 && f >= 1.0 && f <= MAX_SAFE_INTEGER as f64 {
        Some(f as u64)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_match_the_contract_table() {
        let d = Limits::default();
        assert_eq!(d.handshake_timeout_ms, 10_000);
        assert_eq!(d.request_timeout_ms, 120_000);
        assert_eq!(d.queue_capacity, 64);
        assert_eq!(d.max_frame_bytes, 1_048_576);
        assert_eq!(d.max_outbound_frame_bytes, 1_048_576);
        assert_eq!(d.max_tools, 256);
        assert_eq!(d.max_tool_name_bytes, 128);
        assert_eq!(d.max_tool_document_bytes, 65_536);
        assert_eq!(d.max_catalog_pages, 32);
        assert_eq!(d.max_stderr_bytes, 2048);
        assert_eq!(d.probe_timeout_ms, DEFAULT_PROBE_TIMEOUT_MS);
        assert_eq!(d.max_input_rounds, 10);
        assert_eq!(d.max_request_state_bytes, 65_536);
        assert_eq!(d.max_param_headers, 32);
        assert_eq!(d.max_param_header_bytes, 8_192);
        assert!(d.validate().is_ok());
    }

    #[test]
    fn every_option_refuses_bad_json_values_by_name() {
        let bad = [
            json!(0),
            json!(-1),
            json!(1.5),
            json!(9007199254740992u64),
            json!(1e300),
            json!("5"),
            json!(null),
        ];
        for name in OPTION_NAMES {
            for value in &bad {
                let mut limits = Limits::default();
                let err = limits.set_from_json(name, value).unwrap_err();
                assert_eq!(err.kind(), crate::ErrorKind::ProtocolError);
                assert!(err.message().contains(name), "{name}: {err}");
            }
            let mut limits = Limits::default();
            limits.set_from_json(name, &json!(7)).unwrap();
            limits
                .set_from_json(name, &json!(9007199254740991u64))
                .unwrap();
            limits.set_from_json(name, &json!(3.0)).unwrap();
        }
    }

    #[test]
    fn a_read_frame_holds_its_bytes_as_base64_and_an_envelope() {
        let limits = Limits::default();
        // 16 MiB as base64 (22 369 624 bytes) plus 64 KiB: a whole skill file fits.
        assert_eq!(limits.read_frame_bytes(), 22_369_624 + READ_ENVELOPE_BYTES);
        let same = Limits {
            max_resource_bytes: DEFAULT_MAX_FRAME_BYTES,
            ..Limits::default()
        };
        assert_eq!(
            same.read_frame_bytes(),
            same.max_frame_bytes,
            "no allowance"
        );
        let big_frames = Limits {
            max_frame_bytes: 64 << 20,
            ..Limits::default()
        };
        assert_eq!(big_frames.read_frame_bytes(), 64 << 20);
    }

    #[test]
    fn the_skill_bounds_may_not_go_below_the_extensions_floors() {
        let mut limits = Limits::default();
        assert_eq!(limits.max_skill_files, 512);
        assert_eq!(limits.max_skill_bytes, 16 * 1024 * 1024);
        limits.max_skill_files = 511;
        assert_eq!(
            limits.validate().unwrap_err().message(),
            "option maxSkillFiles must be at least 512, the Skills extension's floor"
        );
        limits.max_skill_files = 4096;
        limits.max_skill_bytes = 16 * 1024 * 1024 - 1;
        assert_eq!(
            limits.validate().unwrap_err().message(),
            "option maxSkillBytes must be at least 16777216, the Skills extension's floor"
        );
        limits.max_skill_bytes = 64 * 1024 * 1024;
        assert!(limits.validate().is_ok(), "more than the floor is fine");
    }

    #[test]
    fn the_task_poll_bounds_must_be_ordered() {
        let mut limits = Limits {
            task_min_poll_interval_ms: 30_001,
            ..Limits::default()
        };
        let error = limits.validate().unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::ProtocolError);
        assert!(
            error.message().contains("taskMinPollIntervalMs (30001)"),
            "{error}"
        );
        assert!(
            error.message().contains("taskMaxPollIntervalMs (30000)"),
            "{error}"
        );
        limits.task_min_poll_interval_ms = 30_000;
        limits.validate().expect("equal bounds are fine");
        limits.task_min_poll_interval_ms = 100;
        limits.task_max_poll_interval_ms = 200;
        limits.max_task_wait_ms = 99;
        let error = limits.validate().unwrap_err();
        assert!(error.message().contains("maxTaskWaitMs (99)"), "{error}");
    }

    #[test]
    fn validate_names_zero_and_oversized_fields() {
        let refused = |limits: Limits| limits.validate().unwrap_err().message().to_owned();
        let zero = Limits {
            max_catalog_pages: 0,
            ..Limits::default()
        };
        assert!(refused(zero).contains("maxCatalogPages"));
        let oversized = Limits {
            queue_capacity: MAX_SAFE_INTEGER + 1,
            ..Limits::default()
        };
        assert!(refused(oversized).contains("queueCapacity"));
    }
}
