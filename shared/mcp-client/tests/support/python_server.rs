//! Starts `tests/mcp/tool_server.py` (an MCP server from the official
//! Python SDK; `$INSTANCE_AI_PYTHON`, default `python3`, must have `mcp`) on
//! a free port, and stops it when dropped. Shared by the tests of the MCP
//! client, the agent and the engine node.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "mcp-test-token-5f1e";

pub struct PythonServer {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl PythonServer {
    pub fn start() -> PythonServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = std::env::temp_dir().join(format!("mcp-tool-server-{port}.log"));
        let _ = std::fs::remove_file(&log);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/mcp/tool_server.py");
        let script = if std::path::Path::new(script).exists() { script.to_owned() } else { concat!(env!("CARGO_MANIFEST_DIR"), "/mcp/tool_server.py").to_owned() };
        let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
        let child = Command::new(&python)
            .args([&script, "--port", &port.to_string(), "--token", TOKEN, "--log", log.to_str().unwrap()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{python} {script}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the Python MCP server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        PythonServer { child, port, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What the server's tools did so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
