//! Starting a `.cmd`/`.bat` shim on Windows: which file a bare command name such as
//! `npx` means there, and the one command line that carries the arguments through
//! `cmd.exe` to the program behind the shim unchanged.
//!
//! Pure text functions, compiled and tested on every platform; only the Windows
//! spawn (`windows.rs` beside this module) calls them.
//!
//! # Which file a command name means
//!
//! `CreateProcess`, and so `std::process::Command`, appends only `.exe` to a name
//! without an extension, so `npx`, which npm installs as `npx.cmd`, is "not found".
//! [`resolve`] looks a bare name up the way `cmd.exe` does: each directory of the
//! child's `PATH` in order and, in each, the name with each extension of the child's
//! `PATHEXT` in order (`.COM;.EXE;.BAT;.CMD` when unset); a name that already ends
//! in one of those extensions is looked for as it is. Where it differs from cmd.exe,
//! it is stricter:
//!
//! - the current directory is not searched first, and relative `PATH` entries (and
//!   `\\?\` ones) are skipped: both would run whatever file sits where the host
//!   happens to be;
//! - only the extensions a process can be started from are tried (`.com`, `.exe`,
//!   `.bat`, `.cmd`): a `.js` or `.vbs` in `PATHEXT` needs a file association.
//!
//! A `.bat`/`.cmd` found is started through cmd.exe with [`cmd_line`]; an
//! `.exe`/`.com` found is started by its full path. A name with a directory part is
//! taken as given (a `.bat`/`.cmd` one still through cmd.exe), and a name found
//! nowhere is left to `CreateProcess`, which reports it not found unless it sits in
//! a system directory. uv's `uvx` is a real `uvx.exe`: it needs no cmd.exe.
//!
//! # The command line
//!
//! A batch file runs only inside `cmd.exe`, and cmd parses its arguments twice
//! before the program behind the shim sees them: on the `cmd /c` line, and again
//! where the shim says `%*` (npm's `npx.cmd` ends with `"%NODE_EXE%" "%NPX_CLI_JS%"
//! %*`, and the shims npm's `cmd-shim` writes for every installed package end with
//! `"%_prog%" ... %*`). Quoting for the C runtime alone (what `Command::arg` does)
//! is wrong there: `a b"&calc` quoted as `"a b\"&calc"` leaves `&calc` outside
//! cmd's quotes. [`cmd_line`] builds, for `cmd.exe`,
//!
//! ```text
//! /d /e:ON /v:OFF /s /c ""C:\...\npx.cmd" "arg 0" "arg 1""
//! ```
//!
//! by these rules:
//!
//! 1. **Every argument is enclosed in `"`, and a `"` in it is written `""`.** For
//!    cmd's quote state a `""` toggles twice, so every character of every argument
//!    (`& | < > ( ) ^ !`, spaces) lies inside quotes, on the `/c` line and again
//!    on the shim's line, where cmd gives none of them a meaning. For the C runtime
//!    of MSVC 2008 and later, which node and python parse their command line with
//!    (and Rust's std), `""` inside quotes is one literal `"`. Carets are never used:
//!    cmd removes them on its first parse, so a `^&` reaches the shim's `%*` as a
//!    bare `&` (the flaw of CVE-2024-24576, "BatBadBut").
//! 2. **Backslashes** mean nothing to cmd; for the C runtime a run of backslashes
//!    right before a `"` is halved, so such a run before an argument's own `"` or
//!    before its closing quote is doubled (the usual MSVCRT rule).
//! 3. **`%` cannot be escaped inside quotes**: cmd expands `%NAME%` on the `/c`
//!    line before it looks at quotes. Each `%` is written `%%cd:~,%`. In command-line
//!    mode a name that is not defined (here, the empty one) leaves its first `%` as
//!    it is and the scan goes on at the second, where `%cd:~,%` is a zero-length
//!    substring of `cd`, which is always defined; it expands to nothing, and no `%`
//!    of an argument is ever paired with another. Expansion output is not scanned
//!    again, nor is the text a shim's `%*` inserts. This is the rule Rust's std uses
//!    for batch files since 1.77 (`make_bat_command_line`, after CVE-2024-24576),
//!    which rust-lang/rust runs through real batch files on Windows (`%PATH%`,
//!    `%PATH%PATH%`, `%%cd:~,%` as arguments).
//! 4. **Switches**: `/e:ON` because the substring syntax is a command extension
//!    (the registry can turn extensions off); `/v:OFF` so `!NAME!` stays literal
//!    even where the registry turns delayed expansion on; `/d` so no `AutoRun`
//!    command from the registry runs first; `/s` so cmd strips exactly the outer
//!    pair of quotes.
//! 5. **Refused** ([`Refusal`], an `invalid_config` error that names the argument's
//!    index, never its value): an argument holding a line feed or carriage return
//!    (cmd ends the line there; the rest would be lost, or run as another command
//!    in the shim) or any other control character but tab (NUL ends the string;
//!    Ctrl-Z reads as a line end in a batch file); on Windows, an argument that is
//!    not valid Unicode; a shim path holding `"`, a control character or a trailing
//!    `\` (no Windows file name does); and a line longer than cmd.exe reads
//!    ([`CMD_LINE_MAX`]).
//!
//! What a shim does with its arguments itself is out of reach: one that passes
//! them through `call` (which doubles carets and expands `%` once more) or turns
//! delayed expansion on (then `!NAME!` expands) can change them. npm's `npx.cmd`
//! and `cmd-shim`'s shims do neither.

#[cfg(test)]
mod tests;

/// The longest line cmd.exe reads, in UTF-16 code units: the text after `/c`
/// (outer quotes included) may not be longer.
pub(crate) const CMD_LINE_MAX: usize = 8191;

/// cmd.exe's switches, before the quoted line.
const SWITCHES: &str = "/d /e:ON /v:OFF /s /c";

/// What every `%` of the line is written as (rule 3 of the module docs).
const PERCENT: &str = "%%cd:~,%";

/// The extensions tried when `PATHEXT` is unset or names none that can be started.
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The extensions a process can be started from: the first two directly, the
/// last two through cmd.exe.
const STARTABLE: [&str; 4] = [".com", ".exe", ".bat", ".cmd"];

/// How a command is started on Windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// Started as given: `CreateProcess` finds it, or reports it not found.
    AsGiven,
    /// An `.exe`/`.com` found on `PATH`: started by this full path.
    Program(String),
    /// A `.bat`/`.cmd` shim: started through cmd.exe with [`cmd_line`].
    Shim(String),
}

/// Which file `program` means, given the child's `PATH` and `PATHEXT` and a test
/// of whether a path names a file (see the module docs).
pub(crate) fn resolve(
    program: &str,
    path: Option<&str>,
    pathext: Option<&str>,
    is_file: impl Fn(&str) -> bool,
) -> Launch {
    if has_directory(program) {
        return if is_batch(program) {
            Launch::Shim(program.to_owned())
        } else {
            Launch::AsGiven
        };
    }
    let extensions = startable_extensions(pathext);
    let names: Vec<String> = match extension(program) {
        Some(ext) if is_startable(ext) => vec![program.to_owned()],
        _ => extensions
            .iter()
            .map(|ext| format!("{program}{ext}"))
            .collect(),
    };
    for dir in split_path_list(path.unwrap_or("")) {
        if !is_plain_absolute(&dir) {
            continue;
        }
        for name in &names {
            let full = join(&dir, name);
            if is_file(&full) {
                return if is_batch(&full) {
                    Launch::Shim(full)
                } else {
                    Launch::Program(full)
                };
            }
        }
    }
    Launch::AsGiven
}

/// Whether `program` has a directory part (a separator, or a drive: `C:npx.cmd`).
fn has_directory(program: &str) -> bool {
    program.contains(['\\', '/', ':'])
}

/// The extension of a file name, with its dot (`.cmd`), when it has a stem.
fn extension(name: &str) -> Option<&str> {
    let file = name.rsplit(['\\', '/']).next().unwrap_or(name);
    let dot = file.rfind('.')?;
    (dot > 0).then(|| &file[dot..])
}

fn is_startable(ext: &str) -> bool {
    STARTABLE
        .iter()
        .any(|known| known.eq_ignore_ascii_case(ext))
}

/// Whether `name` ends in `.bat` or `.cmd` (any case): a batch file.
pub(crate) fn is_batch(name: &str) -> bool {
    extension(name)
        .is_some_and(|ext| ext.eq_ignore_ascii_case(".bat") || ext.eq_ignore_ascii_case(".cmd"))
}

/// The startable extensions of `PATHEXT`, in its order, as it spells them; the
/// default when it names none.
fn startable_extensions(pathext: Option<&str>) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for ext in pathext.unwrap_or("").split(';').map(str::trim) {
        if is_startable(ext) && !out.iter().any(|seen| seen.eq_ignore_ascii_case(ext)) {
            out.push(ext);
        }
    }
    if out.is_empty() {
        out = DEFAULT_PATHEXT.split(';').collect();
    }
    out
}

/// The entries of a Windows `PATH`: split at `;` outside double quotes, the
/// quotes removed (an entry may be quoted because it holds a `;`), empty entries
/// dropped. The same rule as std's `split_paths` on Windows.
fn split_path_list(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in path.chars() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `C:\dir` (or `C:/dir`) or `\\server\share\dir`, but not `\\?\` or `\\.\`.
fn is_plain_absolute(dir: &str) -> bool {
    let bytes = dir.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    let unc = dir.starts_with("\\\\") && !dir.starts_with("\\\\?\\") && !dir.starts_with("\\\\.\\");
    drive || unc
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with(['\\', '/']) {
        format!("{dir}{name}")
    } else {
        format!("{dir}\\{name}")
    }
}

/// Why a shim cannot be started with these arguments: an `invalid_config` error.
/// It names an argument by its index only (arguments often carry credentials).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The shim's path holds a `"`, a control character or a trailing `\`.
    Script,
    /// `args[index]` holds a control character other than tab (or, on Windows, is
    /// not valid Unicode).
    Argument {
        /// The index in the command's arguments, from 0.
        index: usize,
    },
    /// The text after `/c` would be `units` UTF-16 code units, over
    /// [`CMD_LINE_MAX`].
    TooLong {
        /// The length the line would have.
        units: usize,
    },
}

impl Refusal {
    /// The public message for server `server`: counts and indexes, no values.
    pub(crate) fn message(self, server: &str) -> String {
        match self {
            Refusal::Script => format!(
                "server \"{server}\": the .cmd/.bat file its command resolves to has a path \
                 cmd.exe cannot be given (a quote, a control character or a trailing \\)"
            ),
            Refusal::Argument { index } => format!(
                "server \"{server}\": args[{index}] cannot be passed through cmd.exe to a \
                 .cmd/.bat shim (it holds a line break or another control character, or is \
                 not valid Unicode); start the program behind the shim directly"
            ),
            Refusal::TooLong { units } => format!(
                "server \"{server}\": the cmd.exe line for its .cmd/.bat shim would be \
                 {units} UTF-16 units, over the {CMD_LINE_MAX} cmd.exe reads; shorten the \
                 arguments or start the program behind the shim directly"
            ),
        }
    }
}

/// The arguments for `cmd.exe` (to be appended raw, after its own path) that run
/// the batch file `script` with `args`, each reaching the program behind the shim
/// unchanged (see the module docs for the rules).
pub(crate) fn cmd_line<S: AsRef<str>>(script: &str, args: &[S]) -> Result<String, Refusal> {
    if script.is_empty()
        || script.contains('"')
        || script.ends_with('\\')
        || script.chars().any(is_refused)
    {
        return Err(Refusal::Script);
    }
    // The outer pair of quotes, which `/s` strips.
    let mut line = String::from("\"");
    push_quoted(&mut line, script);
    for (index, arg) in args.iter().enumerate() {
        let arg = arg.as_ref();
        if arg.chars().any(is_refused) {
            return Err(Refusal::Argument { index });
        }
        line.push(' ');
        push_quoted(&mut line, arg);
    }
    line.push('"');
    let units = line.encode_utf16().count();
    if units > CMD_LINE_MAX {
        return Err(Refusal::TooLong { units });
    }
    Ok(format!("{SWITCHES} {line}"))
}

/// A control character other than tab: refused in an argument (rule 5).
fn is_refused(c: char) -> bool {
    c < ' ' && c != '\t'
}

/// `text` enclosed in quotes by rules 1 to 3 of the module docs.
fn push_quoted(line: &mut String, text: &str) {
    line.push('"');
    let mut backslashes = 0usize;
    for c in text.chars() {
        match c {
            '\\' => {
                backslashes += 1;
                line.push('\\');
                continue;
            }
            '"' => {
                // The run before it doubled, then the quote doubled.
                line.extend(std::iter::repeat_n('\\', backslashes));
                line.push_str("\"\"");
            }
            '%' => line.push_str(PERCENT),
            c => line.push(c),
        }
        backslashes = 0;
    }
    // The run before the closing quote doubled.
    line.extend(std::iter::repeat_n('\\', backslashes));
    line.push('"');
}
