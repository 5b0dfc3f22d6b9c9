//! Closing a stdio session ends the whole process tree the server started, not only
//! the direct child: real servers are started through wrappers (`npx`, `uvx`,
//! `sh -c`, `node` spawning workers), and killing only the wrapper orphans the real
//! server and everything it started.
//!
//! Every test starts a real `sh` wrapper that forks a grandchild which ignores both
//! stdin EOF and SIGTERM (`trap "" TERM; exec sleep <tag>`, a sleep of a length no
//! other process uses), then execs a real server. Both record their pids; the tree
//! must be gone after `close()`, after the client is dropped without `close()`
//! (with the runtime still running, and with the runtime dropped too, so that only
//! synchronous `Drop` code runs), after the server exits on its own, and after the
//! CLI exits. A process counts as gone once it no longer exists, is a zombie (dead,
//! waiting for whoever inherited it to reap it), or its pid now belongs to a
//! process without the test's tag in its environment. Whatever happens, a test
//! never leaves its processes behind: [`Tree`]'s `Drop` kills what is left.

#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use smthrs_mcp::{Client, ErrorKind, StdioCommand};
use support::scripted_server;

/// The wrapper: records its pid, starts the grandchild in the background (which
/// inherits stdout and stderr, so it also holds the server's pipes open), then
/// becomes the server. `$1`: the directory for the pid files, `$2`: the tag (the
/// grandchild's sleep length), `$3`: the server program, then its arguments.
const WRAPPER: &str = r#"echo $$ > "$1/leader.pid"
sh -c 'trap "" TERM; echo $$ > "$0/grandchild.pid"; exec sleep "$1"' "$1" "$2" &
server=$3; shift 3
exec "$server" "$@""#;

/// The environment variable carrying the tag, so a pid can be told apart from a
/// later process that reuses it.
const TAG_VAR: &str = "SMTHRS_PROCESS_TREE_TAG";

/// How long teardown may take at most (its two graces of 250 ms, documented on
/// `transport::stdio`), with slack for a loaded machine: a hang guard.
fn teardown_bound() -> Duration {
    Duration::from_millis(500) + Duration::from_secs(2)
}

/// One wrapper's process tree: its pid files and tag.
struct Tree {
    dir: tempfile::TempDir,
    tag: String,
}

impl Tree {
    fn new() -> Tree {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        // `sleep 313.<pid><n>`: a length no other process on the machine sleeps.
        let tag = format!(
            "313.{}{:03}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Tree {
            dir: tempfile::tempdir().expect("a temporary directory"),
            tag,
        }
    }

    /// `sh -c WRAPPER` around `server` and its arguments.
    fn argv(&self, server: &str, server_args: &[&str]) -> Vec<String> {
        let mut argv = vec![
            "-c".to_string(),
            WRAPPER.to_string(),
            "wrapper".to_string(),
            self.dir.path().to_string_lossy().into_owned(),
            self.tag.clone(),
            server.to_string(),
        ];
        argv.extend(server_args.iter().map(|arg| arg.to_string()));
        argv
    }

    fn command(&self, server: &str, server_args: &[&str]) -> StdioCommand {
        StdioCommand::new("sh")
            .args(self.argv(server, server_args))
            .env(TAG_VAR, &self.tag)
    }

    /// The leader's and the grandchild's pids, once both have written them.
    fn pids(&self) -> [i32; 2] {
        let read = |name: &str| -> Option<i32> {
            std::fs::read_to_string(self.dir.path().join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let (Some(leader), Some(grandchild)) = (read("leader.pid"), read("grandchild.pid")) {
                return [leader, grandchild];
            }
            assert!(
                Instant::now() < deadline,
                "the wrapper never wrote its pids"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `pid` is a live (non-zombie) process of this tree.
    fn alive(&self, pid: i32) -> bool {
        support::live_process_with_env(pid, TAG_VAR, &self.tag)
    }

    /// Every process of the tree is seen running within a few seconds: a
    /// process in the middle of `exec` (the grandchild becoming `sleep`, the
    /// leader becoming the server) can briefly show an empty environment.
    fn assert_running(&self) -> [i32; 2] {
        let pids = self.pids();
        let deadline = Instant::now() + Duration::from_secs(5);
        for pid in pids {
            while !self.alive(pid) {
                assert!(
                    Instant::now() < deadline,
                    "process {pid} of the tree is not running"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        pids
    }

    /// Waits (up to `within`) until no process of the tree is alive.
    fn assert_gone_within(&self, within: Duration) {
        let pids = self.pids();
        let deadline = Instant::now() + within;
        while pids.iter().any(|&pid| self.alive(pid)) {
            let left: Vec<i32> = pids.into_iter().filter(|&pid| self.alive(pid)).collect();
            assert!(
                Instant::now() < deadline,
                "processes of the tree still running after {within:?}: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Never leave a process behind, even when an assertion failed.
        for name in ["grandchild.pid", "leader.pid"] {
            let pid = std::fs::read_to_string(self.dir.path().join(name))
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok());
            if let Some(pid) = pid.filter(|&pid| self.alive(pid))
                && let Some(pid) = rustix::process::Pid::from_raw(pid)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

// The tokio tests use a multi-threaded runtime: they poll `/proc` with blocking
// sleeps, and the session's teardown task must keep running on a worker meanwhile.

fn demo_server() -> &'static str {
    env!("CARGO_BIN_EXE_smthrs-mcp")
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/scenarios")
        .join(format!("{name}.json"))
        .to_string_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_whole_tree() {
    let tree = Tree::new();
    let client = Client::builder("tree")
        .connect(tree.command(demo_server(), &["demo-server"]))
        .await
        .expect("connect");
    assert!(client.catalog().get("add").is_some());
    tree.assert_running();

    let started = Instant::now();
    client.close().await;
    let took = started.elapsed();
    assert!(took < teardown_bound(), "close() took {took:?}");
    // SIGKILL has been sent by the time close() returns; allow for its delivery.
    tree.assert_gone_within(Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_without_close_ends_the_whole_tree() {
    let tree = Tree::new();
    let client = Client::builder("tree")
        .connect(tree.command(demo_server(), &["demo-server"]))
        .await
        .expect("connect");
    tree.assert_running();
    drop(client);
    tree.assert_gone_within(teardown_bound());
}

#[test]
fn dropping_the_client_and_its_runtime_ends_the_whole_tree() {
    // No runtime is left to run the teardown task: only `Drop` code runs, and it
    // must still reach the grandchild.
    let tree = Tree::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .block_on(Client::builder("tree").connect(tree.command(demo_server(), &["demo-server"])))
        .expect("connect");
    tree.assert_running();
    drop(client);
    drop(runtime);
    // SIGKILL is sent synchronously; the bound only absorbs a loaded machine.
    tree.assert_gone_within(Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_outliving_an_exited_server_is_ended() {
    // The direct child exits by itself (status 7 on a call); its grandchild, which
    // ignores SIGTERM, keeps the group (whose id is the dead leader's pid) alive.
    let tree = Tree::new();
    let client = Client::builder("tree")
        .connect(tree.command(scripted_server(), &[&scenario("exit-on-call")]))
        .await
        .expect("connect");
    tree.assert_running();
    let error = client
        .call_tool(
            "echo",
            serde_json::Map::from_iter([("text".into(), json!("x"))]),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed, "{error}");
    assert_eq!(error.to_string(), "exited with code 7");
    // The session has ended: teardown runs without close().
    tree.assert_gone_within(teardown_bound());
    client.close().await;
}

#[test]
fn the_cli_leaves_no_process_of_the_tree_behind() {
    let tree = Tree::new();
    let config = tree.dir.path().join("servers.json");
    let entry = json!([{
        "server": "tree",
        "command": "sh",
        "args": tree.argv(demo_server(), &["demo-server"]),
        "env": { TAG_VAR: tree.tag },
    }]);
    std::fs::write(&config, entry.to_string()).unwrap();
    let output = Command::new(demo_server())
        .arg("--mcp-config")
        .arg(&config)
        .arg("tools")
        .output()
        .expect("the CLI runs");
    assert!(
        output.status.success(),
        "tools failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("mcp/tree/add"));
    // The grandchild ran (it wrote its pid) and is gone once the CLI has exited.
    tree.pids();
    tree.assert_gone_within(Duration::from_secs(1));
}
