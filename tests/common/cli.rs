//! Running `baton` as a command (no server of its own) and keeping its exit code and output.

use std::process::Command;

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `baton <args>`, waited for.
pub fn baton(args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_baton")).args(args).output().expect("run baton");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}
