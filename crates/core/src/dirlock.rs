//! The data directory's lock: one process at a time owns a data directory.
//! Two servers on one directory would each number their own log entries and
//! overwrite each other's files, so answered pushes would vanish at the next
//! restart (issue 12 item 9). The lock is an advisory exclusive `flock` on
//! the data directory itself, held for the process's life (the kernel drops
//! it when the process dies, however it dies, so a SIGKILL leaves nothing to
//! clean up). Not on a file in it: deleting that file would let a second
//! server lock a new one. `<data>/LOCK` holds the holder's pid, only to name
//! it in the refusal.
//! Must be taken before recovery touches anything in the directory.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::Path;

pub struct DirLock {
    _dir: File,
}

impl DirLock {
    pub fn acquire(dir: &Path) -> Result<DirLock, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let handle = File::open(dir).map_err(|e| format!("open {}: {e}", dir.display()))?;
        let path = dir.join("LOCK");
        match handle.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = File::open(&path).and_then(|mut f| f.read_to_string(&mut holder));
                let holder = holder.trim();
                let who = if holder.is_empty() { "another process".to_string() } else { format!("process {holder}") };
                return Err(format!(
                    "{} is in use by {who} (it holds the directory's lock; its pid is in {}); two servers on \
                     one data directory would lose data",
                    dir.display(),
                    path.display()
                ));
            }
            Err(TryLockError::Error(e)) => return Err(format!("lock {}: {e}", dir.display())),
        }
        let pid = std::process::id().to_string();
        let written = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(pid.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not record the pid in the data directory's lock file");
        }
        Ok(DirLock { _dir: handle })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_named_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        // flock locks belong to the open file description: a second open in this process
        // conflicts just as another process would.
        let err = DirLock::acquire(dir.path()).err().expect("a second lock must be refused");
        assert!(err.contains(&format!("process {}", std::process::id())), "{err}");
        // Deleting the pid file does not free the directory (the lock is on the directory).
        std::fs::remove_file(dir.path().join("LOCK")).unwrap();
        assert!(DirLock::acquire(dir.path()).is_err(), "a deleted LOCK file let a second holder in");
        drop(first);
        DirLock::acquire(dir.path()).expect("free again once the holder is gone");
    }
}
