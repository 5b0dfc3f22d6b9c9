//! The quoting checked against a model of what happens to the line on Windows:
//! cmd.exe's `/s /c` quote stripping, its percent expansion in command-line mode,
//! its quote and caret state machine, an npm shim's `%*`, the same state machine
//! again on the shim's line, and the MSVC C runtime's (2008 and later) split of
//! the command line into arguments. The model is written from the documented rules
//! (Microsoft's "Parsing C command-line arguments"; for cmd, the rules worked out by
//! experiment in "How does the Windows Command Interpreter (CMD.EXE) parse
//! scripts?"), and checked against that write-up's own examples below. It cannot
//! replace a run on Windows, which CI does not have.

use proptest::prelude::*;

use super::*;

// ---------------------------------------------------------------------------
// The model.

/// The variables cmd.exe sees: looked up ignoring ASCII case; `cd` is cmd's
/// dynamic variable (the current directory) unless the environment defines it.
struct Env(Vec<(&'static str, &'static str)>);

const CWD: &str = "C:\\work dir";

impl Env {
    fn get(&self, name: &str) -> Option<String> {
        if name.is_empty() {
            return None;
        }
        if let Some((_, value)) = self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Some((*value).to_owned());
        }
        name.eq_ignore_ascii_case("cd").then(|| CWD.to_owned())
    }
}

/// cmd.exe's percent expansion of a `/c` line (command-line mode, extensions on):
/// scanning left to right, a `%` starts a name that ends at the next `%` or `:`.
/// `%NAME%` defined: its value, the scan goes on after it. Not defined (the empty
/// name never is): the first `%` and the name are kept, and the scan goes on *at*
/// the closing `%`. `%NAME:` defined, then a modifier up to the next `%`: the
/// modified value (the model knows the substring modifier `~start,length` only).
/// `%NAME:` not defined: kept, the scan goes on after the colon. A `%` with no `%`
/// or `:` after it is kept. The result is never scanned again.
fn expand_command_line(line: &str, env: &Env) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let Some(end) = (i + 1..chars.len()).find(|&k| chars[k] == '%' || chars[k] == ':') else {
            out.extend(&chars[i..]);
            break;
        };
        let name: String = chars[i + 1..end].iter().collect();
        if chars[end] == '%' {
            match env.get(&name) {
                Some(value) => {
                    out.push_str(&value);
                    i = end + 1;
                }
                None => {
                    out.push('%');
                    out.push_str(&name);
                    i = end;
                }
            }
            continue;
        }
        let close = (end + 1..chars.len()).find(|&k| chars[k] == '%');
        match (env.get(&name), close) {
            (Some(value), Some(close)) => {
                let modifier: String = chars[end + 1..close].iter().collect();
                let spec = modifier
                    .strip_prefix('~')
                    .expect("the model knows the substring modifier only");
                out.push_str(&substring(&value, spec));
                i = close + 1;
            }
            _ => {
                out.push('%');
                out.push_str(&name);
                out.push(':');
                i = end + 1;
            }
        }
    }
    out
}

/// `%NAME:~start,length%`: an empty start is 0, a negative one counts from the
/// end; no length is "to the end", an empty one is 0, a negative one stops that
/// many characters before the end.
fn substring(value: &str, spec: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let n = chars.len() as i64;
    let number = |s: &str| -> i64 {
        if s.is_empty() {
            0
        } else {
            s.parse().expect("the model reads decimal offsets only")
        }
    };
    let (start, length) = match spec.split_once(',') {
        Some((start, length)) => (start, Some(length)),
        None => (spec, None),
    };
    let mut start = number(start);
    if start < 0 {
        start = (n + start).max(0);
    }
    let start = start.min(n);
    let end = match length.map(number) {
        None => n,
        Some(length) if length < 0 => (n + length).max(start),
        Some(length) => (start + length).min(n),
    };
    chars[start as usize..end as usize].iter().collect()
}

/// cmd.exe's second phase over a line that must hold one simple command: a `"`
/// toggles the quote state and is kept; outside quotes a `^` is removed and the
/// character after it taken literally, and `& | < > ( )` would start another
/// command, a pipe, a redirection or a block: the model refuses the line then,
/// naming the character. Returns the line as cmd goes on with it.
fn cmd_phase_two(line: &str) -> Result<String, char> {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                out.push(c);
            }
            '^' if !quoted => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '&' | '|' | '<' | '>' | '(' | ')' if !quoted => return Err(c),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The command token of a line after phase two (a quoted one up to its closing
/// quote) with its quotes removed, and the rest without leading blanks: what a
/// batch file's `%*` is.
fn split_command(line: &str) -> (String, String) {
    let (token, rest) = match line.strip_prefix('"') {
        Some(after) => {
            let close = after.find('"').map_or(after.len(), |at| at + 1);
            (&after[..close], &after[close..])
        }
        None => line.split_at(line.find([' ', '\t']).unwrap_or(line.len())),
    };
    (
        token.replace('"', ""),
        rest.trim_start_matches([' ', '\t']).to_owned(),
    )
}

/// How the MSVC C runtime (2008 and later) splits a command line: the program
/// name up to the first blank outside quotes, quotes toggling and no escapes;
/// then arguments split at blanks outside quotes, where a run of backslashes
/// before a `"` is halved and an odd run makes the `"` literal, backslashes
/// elsewhere are literal, and `""` inside quotes is one literal `"`.
fn parse_ucrt(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let blank = |c: char| c == ' ' || c == '\t';
    let mut argv = Vec::new();
    let mut i = 0;
    let mut current = String::new();
    let mut quoted = false;
    while i < chars.len() && (quoted || !blank(chars[i])) {
        if chars[i] == '"' {
            quoted = !quoted;
        } else {
            current.push(chars[i]);
        }
        i += 1;
    }
    argv.push(std::mem::take(&mut current));
    while i < chars.len() && blank(chars[i]) {
        i += 1;
    }
    let mut quoted = false;
    let mut started = false;
    while i < chars.len() {
        match chars[i] {
            c if blank(c) && !quoted => {
                argv.push(std::mem::take(&mut current));
                started = false;
                while i < chars.len() && blank(chars[i]) {
                    i += 1;
                }
                continue;
            }
            '\\' => {
                let run = chars[i..].iter().take_while(|&&c| c == '\\').count();
                i += run;
                started = true;
                if chars.get(i) == Some(&'"') {
                    current.extend(std::iter::repeat_n('\\', run / 2));
                    if run % 2 == 1 {
                        current.push('"');
                        i += 1;
                    }
                } else {
                    current.extend(std::iter::repeat_n('\\', run));
                }
                continue;
            }
            '"' if quoted => {
                if chars.get(i + 1) == Some(&'"') {
                    current.push('"');
                    i += 1;
                } else {
                    quoted = false;
                }
            }
            '"' => quoted = true,
            c => current.push(c),
        }
        started = true;
        i += 1;
    }
    if started {
        argv.push(current);
    }
    argv
}

const NODE: &str = "C:\\Program Files\\nodejs\\node.exe";
const CLI: &str = "C:\\Program Files\\nodejs\\node_modules\\npm\\bin\\npx-cli.js";

/// What cmd.exe runs for `raw` (the text after cmd.exe's own path), and the
/// arguments the program behind an npm shim (`"%NODE_EXE%" "%NPX_CLI_JS%" %*`)
/// receives, by the model. An error says where the model stopped.
fn through_cmd_and_shim(raw: &str, env: &Env) -> Result<(String, Vec<String>), String> {
    let quoted = raw
        .strip_prefix("/d /e:ON /v:OFF /s /c ")
        .ok_or("not cmd.exe's switches")?;
    // `/s`: the first and the last quote are removed, nothing else.
    let inner = quoted
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .ok_or("no outer quotes")?;
    let expanded = expand_command_line(inner, env);
    let line = cmd_phase_two(&expanded).map_err(|c| format!("{c:?} outside quotes on /c"))?;
    let (script, tail) = split_command(&line);
    // The shim's line: phase one puts `%*` in and does not scan it again.
    let shim_line = format!("\"{NODE}\" \"{CLI}\" {tail}");
    let shim_line =
        cmd_phase_two(&shim_line).map_err(|c| format!("{c:?} outside quotes in the shim"))?;
    let mut argv = parse_ucrt(&shim_line);
    if argv.len() < 2 || argv[0] != NODE || argv[1] != CLI {
        return Err(format!("the shim's own arguments changed: {argv:?}"));
    }
    Ok((script, argv.split_off(2)))
}

fn plain_env() -> Env {
    Env(vec![("PATH", "C:\\Windows"), ("HOME", "C:\\Users\\me")])
}

/// An environment that defines `cd` itself, and names the arguments may spell.
fn crowded_env() -> Env {
    Env(vec![
        ("CD", "C:\\elsewhere"),
        ("PATH", "C:\\Windows"),
        ("a", "1"),
        ("x", "&calc&"),
        ("a b", "\"&calc&\""),
    ])
}

fn round_trip(script: &str, args: &[&str], env: &Env) -> Vec<String> {
    let raw = cmd_line(script, args).expect("accepted");
    let (ran, got) = through_cmd_and_shim(&raw, env).unwrap_or_else(|why| panic!("{why}: {raw}"));
    assert_eq!(ran, script, "cmd.exe runs the shim given");
    got
}

// ---------------------------------------------------------------------------
// The model against the write-up's own examples.

#[test]
fn the_model_expands_percent_as_the_write_up_says() {
    // `set b=a` then `echo %a %b% c%` prints `%a a c%`.
    let env = Env(vec![("b", "a")]);
    assert_eq!(expand_command_line("%a %b% c%", &env), "%a a c%");
    // `set "a =b"` then the same prints `bb% c%`.
    let env = Env(vec![("a ", "b")]);
    assert_eq!(expand_command_line("%a %b% c%", &env), "bb% c%");
    // Undefined names stay (command-line mode); substrings; the trick itself.
    let env = plain_env();
    assert_eq!(expand_command_line("%NOPE%", &env), "%NOPE%");
    assert_eq!(expand_command_line("%path%", &env), "C:\\Windows");
    assert_eq!(expand_command_line("%PATH:~3%", &env), "Windows");
    assert_eq!(expand_command_line("%PATH:~0,2%", &env), "C:");
    assert_eq!(expand_command_line("%PATH:~-3%", &env), "ows");
    assert_eq!(expand_command_line("%cd:~,%", &env), "");
    assert_eq!(expand_command_line("%%cd:~,%", &env), "%");
    assert_eq!(expand_command_line("%%cd:~,%PATH%%cd:~,%", &env), "%PATH%");
}

#[test]
fn the_model_reads_carets_quotes_and_operators_as_cmd_does() {
    assert_eq!(cmd_phase_two("a ^& b"), Ok("a & b".to_owned()));
    assert_eq!(cmd_phase_two("\"a ^& b\""), Ok("\"a ^& b\"".to_owned()));
    assert_eq!(cmd_phase_two("a & b"), Err('&'));
    assert_eq!(cmd_phase_two("\"a\\\"&calc\""), Err('&'));
    assert_eq!(
        cmd_phase_two("\"a\"\"&calc\""),
        Ok("\"a\"\"&calc\"".to_owned())
    );
}

#[test]
fn the_model_splits_arguments_as_the_c_runtime_does() {
    // Microsoft's table ("Parsing C command-line arguments").
    let cases: &[(&str, &[&str])] = &[
        (r#""abc" d e"#, &["abc", "d", "e"]),
        (r#"a\\b d"e f"g h"#, &[r"a\\b", "de fg", "h"]),
        (r#"a\\\"b c d"#, &[r#"a\"b"#, "c", "d"]),
        (r#"a\\\\"b c" d e"#, &[r"a\\b c", "d", "e"]),
        (r#"a"b"" c d"#, &[r#"ab" c d"#]),
    ];
    for (line, want) in cases {
        let argv = parse_ucrt(&format!("prog {line}"));
        assert_eq!(&argv[1..], *want, "{line}");
    }
    assert_eq!(
        parse_ucrt(r#""C:\a b\p.exe" "" x"#),
        ["C:\\a b\\p.exe", "", "x"]
    );
}

// ---------------------------------------------------------------------------
// The quoting.

const NPX: &str = "C:\\Program Files\\nodejs\\npx.cmd";

#[test]
fn the_line_is_what_the_module_docs_say() {
    let raw = cmd_line("C:\\n\\npx.cmd", &["-y", "@scope/server"]).unwrap();
    assert_eq!(
        raw,
        r#"/d /e:ON /v:OFF /s /c ""C:\n\npx.cmd" "-y" "@scope/server"""#
    );
    let quoted = |arg: &str| {
        let raw = cmd_line("C:\\s.cmd", &[arg]).unwrap();
        raw.strip_prefix("/d /e:ON /v:OFF /s /c \"\"C:\\s.cmd\" ")
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap()
            .to_owned()
    };
    assert_eq!(quoted(""), r#""""#);
    assert_eq!(quoted("a b"), r#""a b""#);
    assert_eq!(quoted(r#"a\"&calc"#), r#""a\\""&calc""#);
    assert_eq!(quoted("C:\\dir\\"), r#""C:\dir\\""#);
    assert_eq!(quoted(r"a\b"), r#""a\b""#);
    assert_eq!(quoted("%PATH%"), r#""%%cd:~,%PATH%%cd:~,%""#);
    assert_eq!(quoted("^!x!"), r#""^!x!""#);
}

#[test]
fn hostile_arguments_reach_the_program_unchanged() {
    // The shapes of the BatBadBut reports and of the argument list rust-lang/rust
    // runs through real batch files on Windows.
    let hostile: &[&str] = &[
        "",
        " ",
        "a b",
        "\"",
        " \"",
        "\\",
        "\\\\",
        "a\\",
        "a\\\\\"",
        ">file.txt",
        "&calc.exe",
        "&echo hi ",
        "\"&calc.exe",
        "abc\"&echo hi",
        "123\">file.txt",
        "\"&echo hi&whoami.exe",
        "hello^\"world",
        "hello &echo oh no >file.txt",
        "a\\\"&calc",
        "a\\\\\"&calc",
        "(x)",
        "|more",
        "!TMP!",
        "!PATH!",
        "%hello",
        "%PATH%",
        "%PATH%PATH%",
        "%%cd:~,%",
        "%cd%",
        "%CD:~0,2%",
        "%x%",
        "%a b%",
        "%a%&%a%",
        "key=\"value\"=5",
        "key=[\"value\",\"other\"]",
        "--header=Authorization: Bearer a\"b%c%d",
        "tab\there",
        "ünïcödé 😀",
    ];
    for env in [plain_env(), crowded_env()] {
        for &arg in hostile {
            assert_eq!(round_trip(NPX, &[arg], &env), [arg], "{arg:?}");
        }
        let got = round_trip(NPX, hostile, &env);
        assert_eq!(got, hostile);
    }
}

#[test]
fn a_shim_path_with_cmd_metacharacters_is_run_as_given() {
    for script in [
        "C:\\R&D (x86)\\100%\\npx.cmd",
        "C:\\a^b\\!x!\\npx.cmd",
        "\\\\server\\share\\npm\\npx.cmd",
        "C:\\%PATH%\\x.bat",
    ] {
        for env in [plain_env(), crowded_env()] {
            assert_eq!(round_trip(script, &["x&y"], &env), ["x&y"], "{script}");
        }
    }
}

#[test]
fn control_characters_are_refused_by_index_and_never_echoed() {
    for bad in [
        "\n",
        "a\r\nb",
        "\0",
        "x\u{1a}",
        "\u{1b}[0m",
        "secret\nvalue",
    ] {
        let args = ["ok", "also ok", bad];
        assert_eq!(cmd_line(NPX, &args), Err(Refusal::Argument { index: 2 }));
        let message = Refusal::Argument { index: 2 }.message("tools");
        assert!(message.contains("args[2]"), "{message}");
        assert!(!message.contains("secret") && !message.contains("value\""));
    }
    // The first offending argument is the one named.
    assert_eq!(
        cmd_line(NPX, &["\n", "\r"]),
        Err(Refusal::Argument { index: 0 })
    );
    // Tab is fine.
    assert!(cmd_line(NPX, &["a\tb"]).is_ok());
}

#[test]
fn a_shim_path_cmd_cannot_take_is_refused() {
    for script in ["", "C:\\a\"b\\x.cmd", "C:\\dir\\", "C:\\a\nb\\x.cmd"] {
        assert_eq!(cmd_line(script, &["x"]), Err(Refusal::Script), "{script:?}");
    }
    let message = Refusal::Script.message("tools");
    assert!(message.starts_with("server \"tools\":"), "{message}");
}

#[test]
fn the_line_bound_trips_one_unit_over() {
    let script = "C:\\s.cmd";
    // `"` + `"C:\s.cmd"` + ` "` + arg + `"` + `"`: 15 units around the argument.
    let fits = "x".repeat(CMD_LINE_MAX - 15);
    let raw = cmd_line(script, &[fits.as_str()]).expect("exactly at the bound");
    assert_eq!(
        raw.encode_utf16().count() - "/d /e:ON /v:OFF /s /c ".len(),
        CMD_LINE_MAX
    );
    let over = "x".repeat(CMD_LINE_MAX - 14);
    assert_eq!(
        cmd_line(script, &[over.as_str()]),
        Err(Refusal::TooLong {
            units: CMD_LINE_MAX + 1
        })
    );
    // Counted in UTF-16 units, as cmd.exe counts: a `😀` is two.
    let wide = "😀".repeat((CMD_LINE_MAX - 15) / 2 + 1);
    assert!(matches!(
        cmd_line(script, &[wide.as_str()]),
        Err(Refusal::TooLong { .. })
    ));
    // A `%` costs eight units on the line.
    let percents = "%".repeat(CMD_LINE_MAX / 8);
    assert!(matches!(
        cmd_line(script, &[percents.as_str()]),
        Err(Refusal::TooLong { .. })
    ));
    let message = Refusal::TooLong { units: 9000 }.message("tools");
    assert!(
        message.contains("9000") && message.contains("8191"),
        "{message}"
    );
}

fn arg_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec![
            '"', '\\', '%', '^', '&', '|', '<', '>', '(', ')', '!', ' ', '\t', ':', '~', ',',
            '=', '*', ';', '@', '-',
        ]),
        2 => prop::sample::select(vec!['a', 'b', 'c', 'd', 'x', 'P', 'A', 'T', 'H', '0', '2']),
        1 => any::<char>().prop_filter("a control character other than tab", |c| !is_refused(*c)),
    ]
}

/// A character, or a piece cmd would act on if it reached it unquoted or
/// unescaped: variables the environments define, the percent trick itself, an
/// escaped quote, a caret escape.
fn arg_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => arg_char().prop_map(String::from),
        1 => prop::sample::select(vec![
            "%a%", "%PATH%", "%cd%", "%x%", "%a b%", "%PATH:~0,2%", "%%cd:~,%", "\\\"", "^&",
            "\"&", "!PATH!",
        ])
        .prop_map(str::to_owned),
    ]
}

fn args() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::collection::vec(arg_piece(), 0..12).prop_map(|pieces| pieces.concat()),
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every argument without a control character reaches the program behind the
    /// shim unchanged, and nothing of it is ever outside cmd's quotes (the model
    /// refuses a line with an operator outside quotes), whatever the environment.
    #[test]
    fn arbitrary_arguments_round_trip(args in args(), crowded in any::<bool>()) {
        let env = if crowded { crowded_env() } else { plain_env() };
        let raw = cmd_line(NPX, &args).expect("no control characters");
        let (script, got) = through_cmd_and_shim(&raw, &env)
            .map_err(|why| TestCaseError::fail(format!("{why}: {raw}")))?;
        prop_assert_eq!(script, NPX);
        prop_assert_eq!(got, args);
    }

    /// An argument with a control character other than tab is refused, by the
    /// first such argument's index, and no line is built.
    #[test]
    fn control_characters_are_always_refused(
        mut args in args(),
        at in any::<prop::sample::Index>(),
        bad in (0u32..0x20).prop_filter("tab", |c| *c != 9),
        pos in any::<prop::sample::Index>(),
    ) {
        let bad = char::from_u32(bad).unwrap();
        args.push(String::new());
        let index = at.index(args.len());
        let target = &mut args[index];
        let byte = target
            .char_indices()
            .map(|(i, _)| i)
            .chain([target.len()])
            .nth(pos.index(target.chars().count() + 1))
            .unwrap();
        target.insert(byte, bad);
        let first = args.iter().position(|a| a.chars().any(is_refused)).unwrap();
        prop_assert_eq!(cmd_line(NPX, &args), Err(Refusal::Argument { index: first }));
    }
}

// ---------------------------------------------------------------------------
// Resolution.

fn files(list: &'static [&'static str]) -> impl Fn(&str) -> bool {
    move |path| list.iter().any(|f| f.eq_ignore_ascii_case(path))
}

#[test]
fn a_bare_name_finds_the_npm_shim_on_path() {
    let path = Some("C:\\Windows\\system32;C:\\Program Files\\nodejs\\");
    let found = resolve(
        "npx",
        path,
        None,
        files(&["C:\\Program Files\\nodejs\\npx.cmd"]),
    );
    assert_eq!(
        found,
        Launch::Shim("C:\\Program Files\\nodejs\\npx.CMD".into())
    );
    // uv's uvx is an executable: started by its path, no cmd.exe.
    let found = resolve("uvx", Some("C:\\uv"), None, files(&["C:\\uv\\uvx.exe"]));
    assert_eq!(found, Launch::Program("C:\\uv\\uvx.EXE".into()));
}

#[test]
fn directories_come_first_then_extensions_in_pathext_order() {
    let probed = std::cell::RefCell::new(Vec::new());
    let is_file = |p: &str| {
        probed.borrow_mut().push(p.to_owned());
        files(&["C:\\a\\npx.cmd", "C:\\a\\npx.exe", "C:\\b\\npx.exe"])(p)
    };
    // Default PATHEXT: .COM, .EXE first, so the .exe of the same directory wins.
    assert_eq!(
        resolve("npx", Some("C:\\a;C:\\b"), None, is_file),
        Launch::Program("C:\\a\\npx.EXE".into())
    );
    assert_eq!(*probed.borrow(), ["C:\\a\\npx.COM", "C:\\a\\npx.EXE"]);
    // The first directory with any match wins over a later one.
    let only = files(&["C:\\a\\npx.cmd", "C:\\b\\npx.exe"]);
    assert_eq!(
        resolve("npx", Some("C:\\a;C:\\b"), None, only),
        Launch::Shim("C:\\a\\npx.CMD".into())
    );
    // PATHEXT's own order; extensions that cannot be started are skipped.
    let both = files(&["C:\\a\\npx.cmd", "C:\\a\\npx.exe", "C:\\a\\npx.js"]);
    assert_eq!(
        resolve("npx", Some("C:\\a"), Some(".JS;.cmd;.exe"), both),
        Launch::Shim("C:\\a\\npx.cmd".into())
    );
    // A PATHEXT naming nothing startable falls back to the default.
    let exe = files(&["C:\\a\\npx.exe"]);
    assert_eq!(
        resolve("npx", Some("C:\\a"), Some(".JS;.VBS"), exe),
        Launch::Program("C:\\a\\npx.EXE".into())
    );
}

#[test]
fn a_name_with_an_extension_is_looked_for_as_it_is() {
    let probed = std::cell::RefCell::new(Vec::new());
    let is_file = |p: &str| {
        probed.borrow_mut().push(p.to_owned());
        p == "C:\\b\\npx.cmd"
    };
    assert_eq!(
        resolve("npx.cmd", Some("C:\\a;C:\\b"), None, is_file),
        Launch::Shim("C:\\b\\npx.cmd".into())
    );
    assert_eq!(*probed.borrow(), ["C:\\a\\npx.cmd", "C:\\b\\npx.cmd"]);
    // A dot that is not a startable extension is part of the name.
    assert_eq!(
        resolve(
            "my.server",
            Some("C:\\a"),
            None,
            files(&["C:\\a\\my.server.cmd"])
        ),
        Launch::Shim("C:\\a\\my.server.CMD".into())
    );
}

#[test]
fn only_plain_absolute_path_entries_are_searched() {
    let everywhere = |p: &str| p.ends_with("npx.CMD");
    for path in [
        ".",
        "bin",
        "..\\tools",
        "\\\\?\\C:\\node",
        "\\\\.\\pipe",
        "C:relative",
        "",
    ] {
        assert_eq!(
            resolve("npx", Some(path), None, everywhere),
            Launch::AsGiven,
            "{path}"
        );
    }
    assert_eq!(resolve("npx", None, None, everywhere), Launch::AsGiven);
    assert_eq!(
        resolve("npx", Some(".;\\\\srv\\share\\npm"), None, everywhere),
        Launch::Shim("\\\\srv\\share\\npm\\npx.CMD".into())
    );
    // A quoted entry may hold a `;`.
    assert_eq!(
        resolve("npx", Some("\"C:\\odd;dir\";C:\\x"), None, everywhere),
        Launch::Shim("C:\\odd;dir\\npx.CMD".into())
    );
}

#[test]
fn a_name_with_a_directory_is_taken_as_given() {
    let never = |_: &str| -> bool { panic!("nothing is looked up") };
    assert_eq!(
        resolve("C:\\tools\\npx.cmd", Some("C:\\a"), None, never),
        Launch::Shim("C:\\tools\\npx.cmd".into())
    );
    assert_eq!(
        resolve(".\\run.BAT", None, None, never),
        Launch::Shim(".\\run.BAT".into())
    );
    assert_eq!(
        resolve("C:\\tools\\node.exe", None, None, never),
        Launch::AsGiven
    );
    assert_eq!(resolve("bin/server", None, None, never), Launch::AsGiven);
    assert_eq!(
        resolve("C:npx.cmd", None, None, never),
        Launch::Shim("C:npx.cmd".into())
    );
    assert_eq!(
        resolve("npx", Some("C:\\a"), None, |_| false),
        Launch::AsGiven,
        "found nowhere: CreateProcess decides"
    );
}

#[test]
fn path_lists_split_like_windows() {
    assert_eq!(
        split_path_list("C:\\a;;\"C:\\b;c\";C:\\d\\"),
        ["C:\\a", "C:\\b;c", "C:\\d\\"]
    );
    assert!(split_path_list("").is_empty());
    assert!(is_batch("X.CmD") && is_batch("C:\\a.b\\run.bat"));
    assert!(!is_batch("cmd") && !is_batch(".cmd") && !is_batch("C:\\x.cmd\\node.exe"));
}
