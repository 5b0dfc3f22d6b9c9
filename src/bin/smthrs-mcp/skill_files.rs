//! The Skills commands (`cli-contract.md`): `skills [--server NAME]` lists each
//! offering server's skills as JSON; `skill SERVER NAME --out DIR` loads one
//! skill, verifying every file against the server's listing, and writes it
//! under `DIR/NAME/` only once every file has verified (into a temporary
//! directory beside it, renamed into place), so a failure leaves nothing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use smthrs_mcp::skills::VerifiedFile;
use smthrs_mcp::{Client, Error, ErrorKind};

use super::{Failure, named, prompt};

/// `skills [--server NAME]`: `{"server", "uri", "name", "description",
/// "frontmatter", "files"}` per skill (`files`: how many the entry lists, or
/// `"dynamic"`), servers in file order, each server's skills in the order sent.
pub(crate) async fn skills(clients: &[Client], named_server: bool) -> Result<Value, Failure> {
    let mut out = Vec::new();
    for client in clients {
        let server = client.server();
        let listed = match client.list_skills().await {
            Err(error) if error.kind() == ErrorKind::MissingCapability && !named_server => continue,
            other => other.map_err(|e| Failure::Session(named(server, e)))?,
        };
        // Declined skills are not listed; stderr says why (crate-authored).
        for reason in &listed.declined {
            eprintln!(
                "smthrs-mcp: note: server \"{server}\": {}",
                reason.message()
            );
        }
        for skill in listed.skills {
            let mut object = Map::new();
            object.insert("server".into(), server.into());
            object.insert("uri".into(), skill.uri().into());
            object.insert("name".into(), skill.name().into());
            object.insert("description".into(), skill.description().into());
            object.insert(
                "frontmatter".into(),
                Value::Object(skill.frontmatter().clone()),
            );
            let files = match skill.files() {
                Some(files) => Value::from(files.len()),
                None => Value::from("dynamic"),
            };
            object.insert("files".into(), files);
            out.push(Value::Object(object));
        }
    }
    Ok(Value::Array(out))
}

/// `skill SERVER NAME --out DIR`: the number of files written.
pub(crate) async fn skill(client: &Client, name: &str, dir: &Path) -> Result<usize, Failure> {
    let server = client.server();
    let session = |e: Error| Failure::Session(named(server, e));
    let target = dir.join(name);
    if target.exists() {
        return Err(Failure::Usage(format!(
            "--out: {} already exists",
            target.display()
        )));
    }
    let mut matching: Vec<_> = client
        .list_skills()
        .await
        .map_err(session)?
        .skills
        .into_iter()
        .filter(|skill| skill.name() == name)
        .collect();
    let skill = match matching.len() {
        0 => {
            return Err(session(Error::new(
                ErrorKind::NotFound,
                format!(
                    "server \"{server}\" lists no skill named \"{}\"",
                    prompt::printable(name)
                ),
            )));
        }
        1 => matching.remove(0),
        n => {
            return Err(Failure::Usage(format!(
                "server \"{server}\" lists {n} skills named \"{}\" (names may repeat); load one by its URI with the library",
                prompt::printable(name)
            )));
        }
    };
    let root = format!("{}/", skill.root());
    let loaded = client.load_skill(skill).await.map_err(session)?;
    let files = loaded.read_all().await.map_err(session)?;
    write_all(dir, name, &root, &files).map_err(Failure::Usage)?;
    Ok(files.len())
}

/// Writes every file under `dir/name/` through a temporary directory renamed
/// into place; on any failure the temporary directory is removed.
fn write_all(dir: &Path, name: &str, root: &str, files: &[VerifiedFile]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--out: {}: {e}", dir.display()))?;
    let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
    // Paths below the skill come from server URIs: messages name the file's
    // position, never its path.
    let written = (|| {
        for (index, file) in files.iter().enumerate() {
            let failed = |e: std::io::Error| {
                format!(
                    "--out: {}: file {} of the skill could not be written: {e}",
                    dir.display(),
                    index + 1
                )
            };
            let path = partial.join(relative_path(root, file.uri())?);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(failed)?;
            }
            std::fs::write(&path, file.bytes()).map_err(failed)?;
        }
        std::fs::rename(&partial, dir.join(name))
            .map_err(|e| format!("--out: {}: {e}", dir.display()))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    written
}

/// The path of a file's URI below the skill's root (`root` ends in `/`), each
/// segment percent-decoded; a segment that is empty, `.` or `..`, or that
/// decodes to a separator or a control character, is refused (the listing's
/// checks already keep every file within the root; this keeps the path so).
fn relative_path(root: &str, uri: &str) -> Result<PathBuf, String> {
    let refused = || "a file of the skill has a path that cannot be written safely".to_owned();
    let rest = uri.strip_prefix(root).ok_or_else(refused)?;
    let mut path = PathBuf::new();
    for segment in rest.split('/') {
        let decoded = percent_decode(segment).ok_or_else(refused)?;
        if decoded.is_empty()
            || decoded == "."
            || decoded == ".."
            || decoded.contains(['/', '\\'])
            || decoded.chars().any(|c| c.is_control() || is_invisible(c))
        {
            return Err(refused());
        }
        path.push(decoded);
    }
    Ok(path)
}

/// Format and bidi controls, and line or paragraph separators: characters
/// that would make a file name read as something it is not.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// `%XX` decoded; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_below_the_root() {
        let root = "skill://pdf/";
        assert_eq!(
            relative_path(root, "skill://pdf/references/FORMS.md"),
            Ok(PathBuf::from("references").join("FORMS.md"))
        );
        assert_eq!(
            relative_path(root, "skill://pdf/Q%26A.md"),
            Ok(PathBuf::from("Q&A.md"))
        );
        for bad in [
            "skill://pdf/../x",
            "skill://pdf/a/%2e%2e/x",
            "skill://pdf/a%2Fb",
            "skill://pdf//x",
            "skill://pdf/a%0Ab",
            "skill://other/x",
            "skill://pdf/%zz",
            "skill://pdf/pay%E2%80%AEfdp.md",
        ] {
            assert!(relative_path(root, bad).is_err(), "{bad}");
        }
    }
}
