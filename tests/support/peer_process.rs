//! A real MCP server process serving Streamable HTTP on a free 127.0.0.1 port, for the
//! interop tests: started, polled until it accepts connections (bounded), killed on
//! drop. Its stdout and stderr go to a log file that readiness failures print.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port (bound, then released for the child to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct HttpPeer {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpPeer {
    /// Starts `command(port)` and waits (at most `ready_within`) until
    /// 127.0.0.1:`port` accepts a TCP connection.
    pub async fn start(command: impl FnOnce(u16) -> Command, ready_within: Duration) -> HttpPeer {
        let port = free_port();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = command(port)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start the interop server");
        let mut peer = HttpPeer {
            child,
            port,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + ready_within;
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return peer;
            }
            if let Ok(Some(status)) = peer.child.try_wait() {
                panic!(
                    "interop server exited before listening ({status}):\n{}",
                    peer.log()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "interop server not listening on 127.0.0.1:{port} after {ready_within:?}:\n{}",
                    peer.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A Streamable HTTP transport to this server.
    pub fn transport(&self, name: &str) -> smthrs_mcp::transport::http::HttpTransport {
        smthrs_mcp::transport::http::HttpTransport::builder(name, self.url().as_str())
            .build()
            .unwrap()
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
