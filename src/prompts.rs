//! Prompts as servers list and render them (beyond-tools.md §2), validated and
//! bounded before any of it is kept.
//!
//! - **Names.** A prompt name may become a slash command: non-empty, at most
//!   `maxToolNameBytes` bytes, the display-text rules (no Cc, Cf, U+2028/2029
//!   or lone surrogate), no `/`, and not exactly `.` or `..`; unique in a
//!   listing ([`ListBuilder`](crate::listing::ListBuilder)). An argument name
//!   follows the same length and character rules and is unique within its
//!   prompt; `title`s follow the character rules.
//! - **Entries.** At most `maxPromptArguments` arguments; the entry's compact
//!   JSON at most `maxEntryDocumentBytes`; `icons` and `_meta` as for
//!   resources.
//! - **`prompts/get` arguments** ([`Prompt::check_arguments`]): with a listing
//!   held, a missing required argument, an undeclared one, or a value that is
//!   not a string is the caller's mistake, refused before anything is sent.
//! - **Results** ([`GetPromptResult`]): at most `maxPromptMessages` messages,
//!   each a `role` (`user` or `assistant`) and **one** content block under the
//!   rules of [`content`](crate::content); their decoded bytes within
//!   `maxResourceBytes`.
//!
//! Prompt text is server-authored and arrives as **user** or **assistant**
//! turns: an injection and role-spoofing surface. It is delivered typed and
//! bounded, never merged into anything; whether to use it is the host's call.
//!
//! ```
//! use serde_json::{Map, Value, json};
//! use smthrs_mcp::listing::{ListBounds, ListBuilder};
//! use smthrs_mcp::prompts::Prompt;
//!
//! let mut walk = ListBuilder::<Prompt>::new(&ListBounds::default());
//! walk.add_page(json!({ "prompts": [{
//!     "name": "code_review",
//!     "arguments": [{ "name": "code", "required": true }]
//! }]}))?;
//! let prompts = walk.finish();
//! let mut arguments = Map::new();
//! assert!(prompts[0].check_arguments(&arguments).is_err());
//! arguments.insert("code".into(), Value::from("def hello(): pass"));
//! assert!(prompts[0].check_arguments(&arguments).is_ok());
//! # Ok::<(), smthrs_mcp::Error>(())
//! ```

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::content::{Budget, ContentBlock, ContentBounds};
use crate::error::{Error, Result};
use crate::listing::{ListBounds, ListEntry, sealed};
use crate::resources::members::{
    check_document, take_meta, take_required_string, take_string, take_title,
};
use crate::resources::{Icon, Role, take_icons};
use crate::text::check_bounded_display;

/// One prompt of a `prompts/list` walk. Every text member is server-authored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Prompt {
    /// The name (its identity; it may become a slash command).
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description (free text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments, in server order; every value is a string.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Icons, never fetched by this crate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One argument of a [`Prompt`] (no type, default or enum: values are
/// strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// The name, unique within its prompt.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description (free text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must carry it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

impl Prompt {
    /// Checks `prompts/get` arguments against this prompt before anything is
    /// sent: every name declared, every required one present, every value a
    /// string. A failure is the caller's mistake: `protocol_error` (as
    /// `call_tool` refuses bad arguments), and nothing is sent.
    pub fn check_arguments(&self, arguments: &Map<String, Value>) -> Result<()> {
        let prompt = self.name.escape_default();
        for (name, value) in arguments {
            if !self.arguments.iter().any(|argument| argument.name == *name) {
                return Err(Error::protocol(format!(
                    "prompt \"{prompt}\" declares no argument {name:?}"
                )));
            }
            if !value.is_string() {
                return Err(Error::protocol(format!(
                    "argument {name:?} of prompt \"{prompt}\" is not a string"
                )));
            }
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|argument| argument.required && !arguments.contains_key(&argument.name))
        {
            return Err(Error::protocol(format!(
                "prompt \"{prompt}\" requires argument \"{}\", which is missing",
                missing.name.escape_default()
            )));
        }
        Ok(())
    }
}

/// Checks a prompt or argument name (`what` names which); `slash_command` adds
/// the rules of a name that may become a command.
fn check_name(what: &str, name: &str, max_bytes: usize, slash_command: bool) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{what} is empty"));
    }
    check_bounded_display(what, name, max_bytes, "maxToolNameBytes")?;
    if slash_command {
        if name == "." || name == ".." {
            return Err(format!("{what} is \".\" or \"..\""));
        }
        if name.contains('/') {
            return Err(format!("{what} contains '/'"));
        }
    }
    Ok(())
}

fn argument_from(argument: Value, max_name_bytes: usize) -> Result<PromptArgument, String> {
    let Value::Object(mut argument) = argument else {
        return Err("the argument is not an object".to_owned());
    };
    let name = take_required_string(&mut argument, "name")?;
    check_name("the argument name", &name, max_name_bytes, false)?;
    let title = take_title(&mut argument)?;
    let description = take_string(&mut argument, "description")?;
    let required = match argument.remove("required") {
        None => false,
        Some(Value::Bool(required)) => required,
        Some(_) => return Err("required is not a boolean".to_owned()),
    };
    Ok(PromptArgument {
        name,
        title,
        description,
        required,
    })
}

impl sealed::Entry for Prompt {
    const METHOD: &'static str = "prompts/list";
    const CAPABILITY: &'static str = "prompts";
    const MEMBER: &'static str = "prompts";
    const PLURAL: &'static str = "prompts";
    const OPTION: &'static str = "maxPrompts";
    const DUPLICATE: &'static str = "the prompt name duplicates another prompt's name";

    fn cap(bounds: &ListBounds) -> usize {
        bounds.max_prompts
    }

    fn parse(entry: Value, bounds: &ListBounds) -> Result<Self, String> {
        let Value::Object(entry) = entry else {
            return Err("the entry is not an object".to_owned());
        };
        let mut entry = check_document(entry, bounds.max_entry_document_bytes, "")?;
        let name = take_required_string(&mut entry, "name")?;
        check_name("the prompt name", &name, bounds.max_name_bytes, true)?;
        let title = take_title(&mut entry)?;
        let description = take_string(&mut entry, "description")?;
        let arguments = match entry.remove("arguments") {
            None => Vec::new(),
            Some(Value::Array(arguments)) => {
                if arguments.len() > bounds.max_prompt_arguments {
                    return Err(format!(
                        "arguments lists {} arguments; maxPromptArguments is {}",
                        arguments.len(),
                        bounds.max_prompt_arguments
                    ));
                }
                let mut names: HashSet<String> = HashSet::with_capacity(arguments.len());
                let mut parsed = Vec::with_capacity(arguments.len());
                for (position, argument) in arguments.into_iter().enumerate() {
                    let at = |rule: &str| format!("arguments[{position}]: {rule}");
                    let argument =
                        argument_from(argument, bounds.max_name_bytes).map_err(|rule| at(&rule))?;
                    if !names.insert(argument.name.clone()) {
                        return Err(at("the argument name duplicates another argument's name"));
                    }
                    parsed.push(argument);
                }
                parsed
            }
            Some(_) => return Err("arguments is not an array".to_owned()),
        };
        let icons = take_icons(&mut entry)?;
        let meta = take_meta(&mut entry)?;
        Ok(Prompt {
            name,
            title,
            description,
            arguments,
            icons,
            meta,
        })
    }

    fn key(&self) -> &str {
        &self.name
    }
}

impl ListEntry for Prompt {}

/// A `prompts/get` result: messages to use as turns (server-authored).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// A description of the rendered prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order (possibly none).
    pub messages: Vec<PromptMessage>,
}

/// One message of a [`GetPromptResult`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who speaks it. The server chose: it may claim to be the assistant.
    pub role: Role,
    /// Its one block.
    pub content: ContentBlock,
}

impl GetPromptResult {
    /// Validates a `prompts/get` result object. Members other than
    /// `description` and `messages` (the 2026-07-28 `resultType`, `_meta`) are
    /// the caller's to read.
    ///
    /// Fails with `invalid_response` when: the result is not an object;
    /// `description` is present and not a string; `messages` is not an array or
    /// holds more than `maxPromptMessages`; a message is not an object, its
    /// `role` is neither `user` nor `assistant`, or its `content` is not one
    /// valid block; or the decoded bytes pass `maxResourceBytes`.
    pub fn from_value(result: Value, bounds: &ContentBounds) -> Result<GetPromptResult> {
        let fail = |rule: &str| Error::invalid_response(format!("prompts/get result: {rule}"));
        let Value::Object(mut result) = result else {
            return Err(fail("the result is not an object"));
        };
        let description = take_string(&mut result, "description").map_err(|rule| fail(&rule))?;
        let Some(Value::Array(messages)) = result.remove("messages") else {
            return Err(fail("messages is not an array"));
        };
        if messages.len() > bounds.max_prompt_messages {
            return Err(fail(&format!(
                "messages holds {} messages; maxPromptMessages is {}",
                messages.len(),
                bounds.max_prompt_messages
            )));
        }
        let mut budget = Budget::new(bounds.max_resource_bytes);
        let messages = messages
            .into_iter()
            .enumerate()
            .map(|(position, message)| {
                message_from(message, bounds, &mut budget)
                    .map_err(|rule| fail(&format!("messages[{position}]: {rule}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(GetPromptResult {
            description,
            messages,
        })
    }
}

fn message_from(
    message: Value,
    bounds: &ContentBounds,
    budget: &mut Budget,
) -> Result<PromptMessage, String> {
    let Value::Object(mut message) = message else {
        return Err("the message is not an object".to_owned());
    };
    let role = message
        .get("role")
        .and_then(Role::parse)
        .ok_or("role is neither \"user\" nor \"assistant\"")?;
    let content = message.remove("content").ok_or("content is missing")?;
    let content = ContentBlock::from_value(content, bounds, budget)
        .map_err(|rule| format!("content: {rule}"))?;
    Ok(PromptMessage { role, content })
}

#[cfg(test)]
mod tests;
