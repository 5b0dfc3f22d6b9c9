//! (being written)
/// A command to spawn.
#[derive(Debug, Clone)]
pub struct StdioCommand;
