//! `Debug` for a child's command line that withholds what may be secret: the
//! arguments are counted and the environment shows its keys only. Shared by the
//! server file's [`StdioEntry`](crate::config::StdioEntry) and the transport's
//! [`StdioCommand`](crate::StdioCommand), which must print alike.

use std::fmt;
use std::path::PathBuf;

use secrecy::SecretString;

/// Writes `name { <program.0>: <program.1>, args: "<n withheld>", env: [keys], cwd }`.
pub(crate) fn debug_command(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    program: (&str, &dyn fmt::Debug),
    args: usize,
    env: &[(String, SecretString)],
    cwd: &Option<PathBuf>,
) -> fmt::Result {
    f.debug_struct(name)
        .field(program.0, program.1)
        .field("args", &format_args!("<{args} withheld>"))
        .field(
            "env",
            &env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        )
        .field("cwd", cwd)
        .finish()
}
