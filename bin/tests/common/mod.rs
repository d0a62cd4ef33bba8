//! Running the real `reth-hybrid` binary, as every CLI test does.

use std::process::Command;

/// What one run printed and how it ended.
pub struct Out {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Out {
    /// Both streams, for assertions that do not care which one a message went to.
    #[allow(dead_code)]
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

pub fn reth_hybrid(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_reth-hybrid"))
        .args(args)
        .output()
        .expect("run reth-hybrid");
    Out {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}
