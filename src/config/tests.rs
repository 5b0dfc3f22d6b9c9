use super::*;
use secrecy::ExposeSecret;

fn one(entry: &str) -> Result<ServerEntry, ConfigError> {
    decode_server_file(&format!("[{entry}]")).map(|mut v| v.remove(0))
}

fn fails(entry: &str, field: &str) -> ConfigError {
    let err = one(entry).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::InvalidEntries, "{err}");
    assert_eq!(err.entry_index(), Some(0), "{err}");
    assert_eq!(err.field(), Some(field), "{err}");
    assert!(err.to_string().starts_with("entry 0"), "{err}");
    err
}

fn stdio(extra: &str) -> String {
    format!(r#"{{"server": "s", "command": "node", "args": []{extra}}}"#)
}

fn http(extra: &str) -> String {
    format!(r#"{{"server": "h", "url": "https://mcp.example/mcp"{extra}}}"#)
}

#[test]
fn good_stdio_entry() {
    let entry = one(
        r#"{"server": "github", "command": "/bin/gh-mcp", "args": ["--x", "y"],
            "env": {"TOKEN": "ghp_secret", "A": "1"}, "cwd": "/srv",
            "requestTimeoutMs": 30000, "queueCapacity": 8, "maxStderrBytes": 10,
            "include": ["a", "b"], "exclude": ["b"], "namePrefix": "gh"}"#,
    )
    .unwrap();
    assert_eq!(entry.server, "github");
    assert!(!entry.is_http());
    assert_eq!(entry.limits.request_timeout_ms, 30_000);
    assert_eq!(entry.limits.queue_capacity, 8);
    assert_eq!(entry.limits.max_stderr_bytes, 10);
    assert_eq!(entry.limits.max_tools, crate::limits::DEFAULT_MAX_TOOLS);
    assert_eq!(entry.projection.include, ["a", "b"]);
    assert_eq!(entry.projection.exclude, ["b"]);
    assert_eq!(entry.projection.name_prefix.as_deref(), Some("gh"));
    let EntryTransport::Stdio(s) = &entry.transport else {
        panic!("stdio expected")
    };
    assert_eq!(s.command, "/bin/gh-mcp");
    assert_eq!(s.args, ["--x", "y"]);
    assert_eq!(s.cwd.as_deref(), Some(Path::new("/srv")));
    let env: Vec<_> = s
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.expose_secret()))
        .collect();
    assert_eq!(env, [("A", "1"), ("TOKEN", "ghp_secret")]);
    assert!(!format!("{entry:?}").contains("ghp_secret"));
}

#[test]
fn good_http_entry() {
    let entry = one(
        r#"{"server": "tracker", "url": "https://mcp.tracker.example:8443/mcp?key=sekrit",
            "bearerTokenEnv": "TRACKER_MCP_TOKEN", "maxTools": 9, "handshakeTimeoutMs": 5,
            "namePrefix": ""}"#,
    )
    .unwrap();
    assert!(entry.is_http());
    assert_eq!(entry.limits.max_tools, 9);
    assert_eq!(entry.limits.handshake_timeout_ms, 5);
    // Empty prefix is decoded; the checked projection constructor refuses it.
    assert_eq!(entry.projection.name_prefix.as_deref(), Some(""));
    assert!(entry.projection.validate().is_err());
    let EntryTransport::Http(h) = &entry.transport else {
        panic!("http expected")
    };
    assert_eq!(h.url.host_str(), Some("mcp.tracker.example"));
    assert_eq!(h.bearer_token_env.as_deref(), Some("TRACKER_MCP_TOKEN"));
    let debug = format!("{entry:?}");
    assert!(!debug.contains("sekrit"), "{debug}");
    assert!(
        debug.contains("https://mcp.tracker.example:8443/mcp?[redacted]"),
        "{debug}"
    );
    // Minimal HTTP entry.
    let entry = one(r#"{"server": "h", "url": "http://127.0.0.1:9/"}"#).unwrap();
    assert!(entry.is_http());
}

#[test]
fn empty_array_is_zero_servers() {
    assert!(decode_server_file("[]").unwrap().is_empty());
}

#[test]
fn max_tools_must_be_a_positive_safe_integer() {
    for bad in [
        "0",
        "-1",
        "1.5",
        "9007199254740992",
        "\"5\"",
        "null",
        "1e300",
    ] {
        let err = fails(&stdio(&format!(r#", "maxTools": {bad}"#)), "maxTools");
        assert_eq!(
            err.to_string(),
            r#"entry 0 ("s"): maxTools must be a positive safe integer"#
        );
        fails(&http(&format!(r#", "maxTools": {bad}"#)), "maxTools");
    }
    assert_eq!(
        one(&stdio(r#", "maxTools": 9007199254740991"#))
            .unwrap()
            .limits
            .max_tools,
        9_007_199_254_740_991
    );
}

#[test]
fn every_limit_is_checked_by_name() {
    for name in OPTION_NAMES {
        let err = fails(&stdio(&format!(r#", "{name}": 0"#)), name);
        assert!(err.to_string().contains(name));
    }
    for name in HTTP_OPTION_NAMES {
        fails(&http(&format!(r#", "{name}": -3"#)), name);
    }
}

#[test]
fn http_refuses_stdio_only_fields() {
    for extra in [
        r#", "queueCapacity": 4"#,
        r#", "maxStderrBytes": 4"#,
        r#", "args": []"#,
        r#", "env": {}"#,
        r#", "cwd": "/x""#,
    ] {
        let err = one(&http(extra)).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
    // And stdio refuses HTTP-only ones.
    let err = fails(&stdio(r#", "bearerTokenEnv": "T""#), "bearerTokenEnv");
    assert!(err.to_string().contains("unknown field"));
}

#[test]
fn unknown_key_is_an_error() {
    let err = fails(&stdio(r#", "maxtools": 5"#), "maxtools");
    assert_eq!(
        err.to_string(),
        r#"entry 0 ("s"): unknown field "maxtools" in a stdio entry"#
    );
}

#[test]
fn command_and_url_together_or_neither() {
    fails(
        r#"{"server": "s", "command": "x", "args": [], "url": "https://a.example/"}"#,
        "command",
    );
    fails(r#"{"server": "s", "args": []}"#, "command");
}

#[test]
fn server_is_required_and_non_empty() {
    for entry in [
        r#"{"command": "x", "args": []}"#,
        r#"{"server": "", "command": "x", "args": []}"#,
        r#"{"server": 5, "command": "x", "args": []}"#,
    ] {
        let err = fails(entry, "server");
        assert!(err.server().is_none());
        assert_eq!(
            err.to_string(),
            "entry 0: server must be a non-empty string"
        );
    }
}

#[test]
fn command_must_be_a_non_empty_string() {
    fails(r#"{"server": "s", "command": "", "args": []}"#, "command");
    fails(
        r#"{"server": "s", "command": ["x"], "args": []}"#,
        "command",
    );
}

#[test]
fn args_is_required_and_must_be_strings() {
    let err = fails(r#"{"server": "s", "command": "x"}"#, "args");
    assert!(err.to_string().contains("args is required"));
    fails(r#"{"server": "s", "command": "x", "args": [1]}"#, "args");
    fails(r#"{"server": "s", "command": "x", "args": "a b"}"#, "args");
}

#[test]
fn cwd_must_be_non_empty() {
    fails(&stdio(r#", "cwd": """#), "cwd");
    fails(&stdio(r#", "cwd": 1"#), "cwd");
}

#[test]
fn env_must_be_string_values_and_valid_keys_and_never_echoes_values() {
    let err = fails(&stdio(r#", "env": {"TOKEN": 12345}"#), "env.TOKEN");
    assert!(!err.to_string().contains("12345"));
    fails(&stdio(r#", "env": ["A=1"]"#), "env");
    for key in ["", "A=ghp_sekrit", "A\\u0000B"] {
        let err = fails(&stdio(&format!(r#", "env": {{"{key}": "v"}}"#)), "env");
        assert!(!err.to_string().contains("sekrit"), "{err}");
        assert!(!format!("{err:?}").contains("sekrit"), "{err:?}");
    }
    // A later field's failure does not reveal earlier env values either.
    let err = one(&stdio(r#", "env": {"TOKEN": "ghp_sekrit"}, "cwd": """#)).unwrap_err();
    assert!(!err.to_string().contains("sekrit"));
    assert!(!format!("{err:?}").contains("sekrit"));
    let err = crate::Error::from(err);
    assert!(!format!("{err:?}").contains("sekrit"));
}

#[test]
fn url_rules() {
    for (url, needle) in [
        ("https://user:pw@a.example/mcp", "user or password"),
        ("https://user@a.example/mcp", "user or password"),
        ("ftp://a.example/mcp", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("/mcp", "not an absolute URL"),
        ("a.example/mcp", "not an absolute URL"),
        ("", "not an absolute URL"),
    ] {
        let err = fails(&format!(r#"{{"server": "h", "url": "{url}"}}"#), "url");
        let text = err.to_string();
        assert!(text.contains(needle), "{url}: {text}");
        assert!(!text.contains("pw@") && !text.contains("user@"), "{text}");
    }
    fails(r#"{"server": "h", "url": 5}"#, "url");
}

#[test]
fn bearer_token_env_must_be_a_name() {
    for bad in [r#""""#, r#""A=B""#, r#""A\u0000""#, "5"] {
        fails(
            &http(&format!(r#", "bearerTokenEnv": {bad}"#)),
            "bearerTokenEnv",
        );
    }
}

#[test]
fn projection_fields_are_typed() {
    fails(&stdio(r#", "include": "a""#), "include");
    fails(&stdio(r#", "exclude": [1]"#), "exclude");
    fails(&http(r#", "namePrefix": 3"#), "namePrefix");
}

#[test]
fn duplicate_servers_and_non_objects_fail() {
    let text = format!(
        r#"[{}, {{"server": "s", "url": "http://127.0.0.1:1/mcp"}}]"#,
        stdio("")
    );
    let err = decode_server_file(&text).unwrap_err();
    assert_eq!(err.entry_index(), Some(1));
    assert_eq!(err.field(), Some("server"));
    assert_eq!(err.server(), Some("s"));
    assert!(err.to_string().contains("unique"), "{err}");

    let err = decode_server_file(&format!("[{}, 5]", stdio(""))).unwrap_err();
    assert_eq!(err.entry_index(), Some(1));
    assert_eq!(err.to_string(), "entry 1: must be an object, not a number");
    let err = decode_server_file("[null]").unwrap_err();
    assert_eq!(err.to_string(), "entry 0: must be an object, not null");
}

#[test]
fn not_an_array_and_not_json() {
    let err = decode_server_file(&stdio("")).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::InvalidEntries);
    assert!(err.to_string().contains("must be a JSON array"));
    let err = decode_server_file(r#"[{"server": "s", "env": {"T": "ghp_x"#).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::NotJson);
    assert!(!err.to_string().contains("ghp_x"));
}

#[test]
fn long_server_names_are_truncated_in_messages() {
    let name = "n".repeat(500);
    let err = one(&format!(
        r#"{{"server": "{name}", "command": "x", "args": [], "maxTools": 0}}"#
    ))
    .unwrap_err();
    assert!(err.to_string().len() < 200, "{err}");
    // Over 128 bytes the name itself is refused (it is embedded in flow names).
    assert_eq!(err.field(), Some("server"));
    assert!(
        err.to_string().contains("server is not a valid name"),
        "{err}"
    );
}

#[test]
fn load_names_the_path_for_each_failure() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("missing.json");
    let err = load_server_file(&missing).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::NotFound);
    assert_eq!(err.path(), Some(missing.as_path()));
    assert_eq!(
        err.to_string(),
        format!("server file {}: not found", missing.display())
    );

    // A directory cannot be read as a file.
    let err = load_server_file(dir.path()).unwrap_err();
    assert_eq!(err.kind(), ConfigErrorKind::Unreadable, "{err}");

    let not_utf8 = dir.path().join("latin1.json");
    std::fs::write(&not_utf8, b"[\xff]").unwrap();
    assert_eq!(
        load_server_file(&not_utf8).unwrap_err().kind(),
        ConfigErrorKind::Unreadable
    );

    let entries = dir.path().join("entries.json");
    std::fs::write(&entries, format!("[{}, {}]", stdio(""), http(""))).unwrap();
    assert_eq!(load_server_file(&entries).unwrap().len(), 2);
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/config")
        .join(name)
}

#[test]
fn fixtures() {
    let good = load_server_file(&fixture("good.json")).unwrap();
    let names: Vec<&str> = good.iter().map(|e| e.server.as_str()).collect();
    assert_eq!(names, ["github", "reports", "tracker"]);
    assert_eq!(good[0].projection.exclude, ["delete_repository"]);
    assert_eq!(good[1].limits.request_timeout_ms, 30_000);
    assert!(good[2].is_http());
    assert!(!format!("{good:?}").contains("ghp_example"));

    let prefix = load_server_file(&fixture("empty-name-prefix.json")).unwrap();
    assert!(prefix[0].projection.validate().is_err());

    let path = fixture("bad-max-tools-zero.json");
    let err = load_server_file(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            r#"server file {}: entry 1 ("github"): maxTools must be a positive safe integer"#,
            path.display()
        )
    );
    assert_eq!(
        crate::Error::from(err).kind(),
        crate::ErrorKind::InvalidConfig
    );

    for (name, kind, entry, field) in [
        (
            "bad-command-and-url.json",
            ConfigErrorKind::InvalidEntries,
            Some(0),
            Some("command"),
        ),
        (
            "bad-url-userinfo.json",
            ConfigErrorKind::InvalidEntries,
            Some(0),
            Some("url"),
        ),
        (
            "bad-unknown-key.json",
            ConfigErrorKind::InvalidEntries,
            Some(0),
            Some("maxtools"),
        ),
        (
            "bad-missing-args.json",
            ConfigErrorKind::InvalidEntries,
            Some(0),
            Some("args"),
        ),
        (
            "bad-env-value.json",
            ConfigErrorKind::InvalidEntries,
            Some(0),
            Some("cwd"),
        ),
        (
            "bad-duplicate-server.json",
            ConfigErrorKind::InvalidEntries,
            Some(1),
            Some("server"),
        ),
        ("bad-not-json.json", ConfigErrorKind::NotJson, None, None),
        (
            "bad-not-an-array.json",
            ConfigErrorKind::InvalidEntries,
            None,
            None,
        ),
    ] {
        let path = fixture(name);
        let err = load_server_file(&path).unwrap_err();
        assert_eq!(err.kind(), kind, "{name}: {err}");
        assert_eq!(err.entry_index(), entry, "{name}: {err}");
        assert_eq!(err.field(), field, "{name}: {err}");
        let text = format!("{err} {err:?}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        for secret in ["hunter2", "ghp_secret_value", "user:"] {
            assert!(!text.contains(secret), "{name}: {text}");
        }
    }
}
