//! The commands for what servers offer besides tools (`cli-contract.md`,
//! "Commands for what servers offer besides tools"): `resources`, `read`,
//! `prompts`, `prompt`. Each prints one JSON document on stdout; a server that
//! does not declare the capability is skipped by a listing without
//! `--server`, and fails the run (`missing_capability`) when named.

use serde_json::{Map, Value, json};
use smthrs_mcp::{Client, ErrorKind};

use super::{Failure, named};

/// Inserts `value` under `key` when it is `Some`.
fn put<T: Into<Value>>(object: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(value) = value {
        object.insert(key.to_owned(), value.into());
    }
}

/// A listing call on one client: `Ok(None)` when the server does not declare
/// the capability and was not named (skipped).
fn skipped<T>(result: smthrs_mcp::Result<T>, named_server: bool) -> smthrs_mcp::Result<Option<T>> {
    match result {
        Err(error) if error.kind() == ErrorKind::MissingCapability && !named_server => Ok(None),
        other => other.map(Some),
    }
}

/// `resources [--server NAME]`.
pub(crate) async fn resources(clients: &[Client], named_server: bool) -> Result<Value, Failure> {
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    for client in clients {
        let server = client.server();
        let fail = |e| Failure::Session(named(server, e));
        let Some(listed) = skipped(client.list_resources().await, named_server).map_err(fail)?
        else {
            continue;
        };
        let listed_templates = client.list_resource_templates().await.map_err(fail)?;
        for resource in listed.entries {
            let mut object = Map::new();
            object.insert("server".into(), server.into());
            object.insert("uri".into(), resource.uri.into());
            object.insert("name".into(), resource.name.into());
            put(&mut object, "title", resource.title);
            put(&mut object, "description", resource.description);
            put(&mut object, "mimeType", resource.mime_type);
            put(&mut object, "size", resource.size);
            resources.push(Value::Object(object));
        }
        for template in listed_templates.entries {
            let mut object = Map::new();
            object.insert("server".into(), server.into());
            object.insert("uriTemplate".into(), template.uri_template.into());
            object.insert("name".into(), template.name.into());
            put(&mut object, "title", template.title);
            put(&mut object, "description", template.description);
            put(&mut object, "mimeType", template.mime_type);
            templates.push(Value::Object(object));
        }
    }
    Ok(json!({"resources": resources, "templates": templates}))
}

/// `read SERVER URI`.
pub(crate) async fn read(client: &Client, uri: &str) -> Result<Value, Failure> {
    let result = client
        .read_resource(uri)
        .await
        .map_err(|e| Failure::Session(named(client.server(), e)))?;
    let mut value = serde_json::to_value(&result)
        .map_err(|_| Failure::Usage("could not encode the contents".into()))?;
    // `{"uri", "mimeType"?, "text" | "blob"}`: `_meta` is not printed.
    if let Some(contents) = value.get_mut("contents").and_then(Value::as_array_mut) {
        for item in contents {
            if let Some(item) = item.as_object_mut() {
                item.remove("_meta");
            }
        }
    }
    Ok(value)
}

/// `prompts [--server NAME]`.
pub(crate) async fn prompts(clients: &[Client], named_server: bool) -> Result<Value, Failure> {
    let mut prompts = Vec::new();
    for client in clients {
        let server = client.server();
        let Some(listed) = skipped(client.list_prompts().await, named_server)
            .map_err(|e| Failure::Session(named(server, e)))?
        else {
            continue;
        };
        for prompt in listed.entries {
            let mut object = Map::new();
            object.insert("server".into(), server.into());
            object.insert("name".into(), prompt.name.into());
            put(&mut object, "title", prompt.title);
            put(&mut object, "description", prompt.description);
            let arguments: Vec<Value> = prompt
                .arguments
                .into_iter()
                .map(|argument| {
                    let mut object = Map::new();
                    object.insert("name".into(), argument.name.into());
                    put(&mut object, "description", argument.description);
                    object.insert("required".into(), argument.required.into());
                    Value::Object(object)
                })
                .collect();
            object.insert("arguments".into(), arguments.into());
            prompts.push(Value::Object(object));
        }
    }
    Ok(Value::Array(prompts))
}

/// `prompt SERVER NAME [--args JSON]`.
pub(crate) async fn prompt(
    client: &Client,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Value, Failure> {
    // The listing lets the library check the arguments before anything is
    // sent (a required one missing, one not declared). A server that cannot
    // list is asked anyway, and answers for itself.
    let _ = client.list_prompts().await;
    let result = client
        .get_prompt(name, arguments)
        .await
        .map_err(|e| Failure::Session(named(client.server(), e)))?;
    serde_json::to_value(&result).map_err(|_| Failure::Usage("could not encode the prompt".into()))
}
