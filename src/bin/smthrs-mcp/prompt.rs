//! The CLI's host handler: answers a server's elicitation on a terminal, and serves
//! the entry's `roots`.
//!
//! - `call` declares form and URL elicitation when stdin is a terminal and
//!   `--no-input` is absent: a form is asked field by field on stderr, after the
//!   server's message, marked as the server's words; the person may answer,
//!   decline (`d`) or cancel (`c`). Without a terminal, or with `--no-input`,
//!   elicitation is not declared (a capability the host would always decline
//!   misleads the server), so no server may ask: one that asks anyway is refused
//!   like any undeclared request (`-32601` in the legacy era; the call fails with
//!   `missing_capability` in 2026-07-28), and nothing waits on a person who is not
//!   there. Should a host declare it without a terminal, every elicitation is
//!   declined at once.
//! - `tools` and `lock` call no tool and declare no elicitation.
//! - An entry's `roots` (file URIs) are declared and served as they are.
//! - Sampling is never declared: the CLI has no model to ask.
//!
//! Everything printed from a server passes [`printable`]: control and format
//! characters (an escape sequence, a bidi override) are shown escaped, so a server
//! cannot drive the terminal or disguise its text.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Number, Value};
use smthrs_mcp::handler::{
    ElicitAnswer, ElicitRequest, FieldKind, FormField, FormRequest, HostCapabilities, HostHandler,
    Root,
};

/// Whether `call` may ask a person.
pub(crate) fn interactive(no_input: bool) -> bool {
    !no_input && std::io::stdin().is_terminal()
}

/// The host handler of one entry.
pub(crate) struct CliHost {
    server: String,
    roots: Vec<String>,
    /// `call`: elicitation is declared.
    elicitation: bool,
    /// A person is at the terminal.
    interactive: bool,
}

impl CliHost {
    pub(crate) fn new(
        server: &str,
        roots: &[String],
        elicitation: bool,
        interactive: bool,
    ) -> Arc<CliHost> {
        Arc::new(CliHost {
            server: server.to_owned(),
            roots: roots.to_vec(),
            elicitation,
            interactive,
        })
    }

    /// True when this host declares anything (else none is installed).
    pub(crate) fn declares_anything(&self) -> bool {
        self.elicitation || !self.roots.is_empty()
    }
}

impl HostHandler for CliHost {
    fn capabilities(&self) -> HostCapabilities {
        let mut caps = HostCapabilities::default();
        if self.elicitation {
            caps = caps.with_elicitation_form().with_elicitation_url();
        }
        if !self.roots.is_empty() {
            caps = caps.with_roots();
        }
        caps
    }

    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        if !self.interactive {
            return Box::pin(async { ElicitAnswer::Decline });
        }
        let server = self.server.clone();
        Box::pin(async move {
            // One person, one terminal: prompts never interleave.
            static TERMINAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
            let _turn = TERMINAL.lock().await;
            tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut output = std::io::stderr().lock();
                ask(&server, &request, &mut input, &mut output).unwrap_or(ElicitAnswer::Cancel)
            })
            .await
            .unwrap_or(ElicitAnswer::Cancel)
        })
    }

    fn list_roots(&self) -> BoxFuture<'_, Vec<Root>> {
        let roots = self.roots.iter().map(Root::new).collect();
        Box::pin(async move { roots })
    }
}

/// `text` with every control or format character escaped (`\u{1b}`), one line.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let hidden = c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{00AD}' | '\u{2028}' | '\u{2029}');
        if hidden {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Asks one elicitation; `None` when the terminal closed.
fn ask(
    server: &str,
    request: &ElicitRequest,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Option<ElicitAnswer> {
    match request {
        ElicitRequest::Form(form) => ask_form(server, form, input, output),
        ElicitRequest::Url(url) => {
            writeln!(
                output,
                "smthrs-mcp: server \"{server}\" asks you to visit a page on {}.",
                url.origin
            )
            .ok()?;
            writeln!(output, "  The server's words: {}", printable(&url.message)).ok()?;
            writeln!(output, "  URL: {}", printable(url.url.as_str())).ok()?;
            loop {
                let line = prompt(output, input, "Done? [y]es / [d]ecline / [c]ancel: ")?;
                match line.as_str() {
                    "y" | "yes" => return Some(ElicitAnswer::Accept(Map::new())),
                    "d" | "decline" => return Some(ElicitAnswer::Decline),
                    "c" | "cancel" => return Some(ElicitAnswer::Cancel),
                    _ => {}
                }
            }
        }
        // A kind of request this CLI does not know how to put to a person.
        _ => Some(ElicitAnswer::Decline),
    }
}

fn ask_form(
    server: &str,
    form: &FormRequest,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Option<ElicitAnswer> {
    if !form.fields.iter().all(|field| can_ask(&field.kind)) {
        // A field of a kind this CLI cannot ask for: the form is declined.
        return Some(ElicitAnswer::Decline);
    }
    writeln!(output, "smthrs-mcp: server \"{server}\" asks for input.").ok()?;
    writeln!(output, "  The server's words: {}", printable(&form.message)).ok()?;
    loop {
        let line = prompt(output, input, "Answer? [y]es / [d]ecline / [c]ancel: ")?;
        match line.as_str() {
            "y" | "yes" | "" => break,
            "d" | "decline" => return Some(ElicitAnswer::Decline),
            "c" | "cancel" => return Some(ElicitAnswer::Cancel),
            _ => {}
        }
    }
    let mut content = Map::new();
    for field in &form.fields {
        if let Some(value) = ask_field(field, input, output)? {
            content.insert(field.name.clone(), value);
        }
    }
    Some(ElicitAnswer::Accept(content))
}

/// Whether this CLI knows how to ask for a field of `kind`.
fn can_ask(kind: &FieldKind) -> bool {
    matches!(
        kind,
        FieldKind::String { .. }
            | FieldKind::Choice { .. }
            | FieldKind::MultiChoice { .. }
            | FieldKind::Number { .. }
            | FieldKind::Boolean
    )
}

/// One field; `Some(None)` leaves it out (its default, if any, then applies).
fn ask_field(
    field: &FormField,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Option<Option<Value>> {
    let label = printable(field.title.as_deref().unwrap_or(&field.name));
    if let Some(description) = &field.description {
        writeln!(output, "  {label}: {}", printable(description)).ok()?;
    }
    let hint = match &field.kind {
        FieldKind::String { .. } => "text".to_owned(),
        FieldKind::Choice { values, .. } => format!("one of {}", printable(&values.join(", "))),
        FieldKind::MultiChoice { values } => {
            format!("comma-separated, of {}", printable(&values.join(", ")))
        }
        FieldKind::Number { integer: true, .. } => "integer".to_owned(),
        FieldKind::Number { .. } => "number".to_owned(),
        FieldKind::Boolean => "y/n".to_owned(),
        _ => return Some(None), // not asked: `can_ask` declined the form
    };
    let default = field
        .default
        .as_ref()
        .map(|d| format!(" [default {}]", printable(&d.to_string())))
        .unwrap_or_default();
    let required = if field.required { " (required)" } else { "" };
    loop {
        let line = prompt(
            output,
            input,
            &format!("  {label} ({hint}){required}{default}: "),
        )?;
        if line.is_empty() {
            if field.required && field.default.is_none() {
                continue;
            }
            return Some(None);
        }
        let value = match &field.kind {
            FieldKind::String { .. } => Some(Value::String(line)),
            FieldKind::Choice { values, .. } => {
                values.contains(&line).then_some(Value::String(line))
            }
            FieldKind::MultiChoice { values } => {
                let picked: Vec<String> = line.split(',').map(|s| s.trim().to_owned()).collect();
                picked
                    .iter()
                    .all(|p| values.contains(p))
                    .then(|| Value::Array(picked.into_iter().map(Value::String).collect()))
            }
            FieldKind::Number { integer: true, .. } => line.parse::<i64>().ok().map(Value::from),
            FieldKind::Number { .. } => line
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number),
            FieldKind::Boolean => match line.as_str() {
                "y" | "yes" | "true" => Some(Value::Bool(true)),
                "n" | "no" | "false" => Some(Value::Bool(false)),
                _ => None,
            },
            _ => return Some(None), // not asked: `can_ask` declined the form
        };
        match value {
            Some(value) => return Some(Some(value)),
            None => {
                writeln!(output, "  (not a valid {hint})").ok()?;
            }
        }
    }
}

/// Prints `question`, reads one line (trimmed); `None` at end of input.
fn prompt(output: &mut dyn Write, input: &mut dyn BufRead, question: &str) -> Option<String> {
    write!(output, "{question}").ok()?;
    output.flush().ok()?;
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> ElicitRequest {
        ElicitRequest::Form(FormRequest {
            message: "Deploy?\u{1b}[2J".into(),
            fields: vec![
                FormField {
                    name: "env".into(),
                    title: None,
                    description: None,
                    required: true,
                    kind: FieldKind::Choice {
                        values: vec!["prod".into(), "dev".into()],
                        titles: None,
                    },
                    default: None,
                },
                FormField {
                    name: "count".into(),
                    title: None,
                    description: None,
                    required: false,
                    kind: FieldKind::Number {
                        integer: true,
                        minimum: None,
                        maximum: None,
                    },
                    default: Some(Value::from(1)),
                },
            ],
        })
    }

    #[test]
    fn a_form_is_asked_field_by_field() {
        let mut input: &[u8] = b"y\nstaging\ndev\n\n";
        let mut output = Vec::new();
        let answer = ask("s", &form(), &mut input, &mut output).unwrap();
        let mut content = Map::new();
        content.insert("env".into(), Value::from("dev"));
        assert_eq!(answer, ElicitAnswer::Accept(content));
        let shown = String::from_utf8(output).unwrap();
        assert!(
            shown.contains("The server's words: Deploy?\\u{1b}[2J"),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}'));
        assert!(shown.contains("not a valid one of prod, dev"));
    }

    #[test]
    fn decline_cancel_and_a_closed_terminal() {
        let mut output = Vec::new();
        let mut decline: &[u8] = b"d\n";
        assert_eq!(
            ask("s", &form(), &mut decline, &mut output),
            Some(ElicitAnswer::Decline)
        );
        let mut cancel: &[u8] = b"c\n";
        assert_eq!(
            ask("s", &form(), &mut cancel, &mut output),
            Some(ElicitAnswer::Cancel)
        );
        let mut closed: &[u8] = b"y\n";
        assert_eq!(ask("s", &form(), &mut closed, &mut output), None);
    }
}
