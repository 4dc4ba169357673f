//! Helpers shared by the unit tests. Must never be compiled outside `cfg(test)`.

use std::path::Path;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::{recover, RecoveryInfo, WalConfig, WalError, WalItem, WalWriter};

pub(crate) type Done = (u64, Result<u64, WalError>);

/// Long enough never to fire on a healthy run, short enough that a hung writer fails the
/// test instead of hanging CI.
pub(crate) const WAIT: Duration = Duration::from_secs(30);

pub(crate) struct TestItem {
    pub id: u64,
    pub payload: Vec<u8>,
    pub done: Sender<Done>,
}

impl WalItem for TestItem {
    fn encode(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.payload);
    }
    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        let _ = self.done.send((self.id, result));
    }
}

/// An item whose encode blocks until the gate is opened (a message sent or the sender
/// dropped), holding the writer thread so that later submissions pile up in the queue.
pub(crate) struct GateItem {
    pub open: Receiver<()>,
    pub done: Sender<Done>,
}

impl WalItem for GateItem {
    fn encode(&self, buf: &mut Vec<u8>) {
        let _ = self.open.recv_timeout(WAIT);
        buf.extend_from_slice(b"gate");
    }
    fn complete(self: Box<Self>, result: Result<u64, WalError>) {
        let _ = self.done.send((u64::MAX, result));
    }
}

/// A gate item and what opens it.
pub(crate) fn gate(done: &Sender<Done>) -> (Sender<()>, Box<GateItem>) {
    let (open_tx, open_rx) = crossbeam_channel::bounded(1);
    (open_tx, Box::new(GateItem { open: open_rx, done: done.clone() }))
}

pub(crate) fn cfg(dir: &Path, segment_bytes: u64) -> WalConfig {
    WalConfig { dir: dir.to_path_buf(), segment_bytes, preallocate: false, recycle: 0, truncate_damaged_tail: false }
}

pub(crate) fn payload(i: u64) -> Vec<u8> {
    format!("entry-{i}-{}", "x".repeat((i % 7) as usize)).into_bytes()
}

pub(crate) fn item(id: u64, payload: Vec<u8>, done: &Sender<Done>) -> Box<TestItem> {
    Box::new(TestItem { id, payload, done: done.clone() })
}

/// Submits each payload and waits for its answer before the next, so each is its own batch
/// (which makes segment layout deterministic). Returns the assigned indexes.
pub(crate) fn append_one_by_one(w: &WalWriter, payloads: &[Vec<u8>]) -> Vec<u64> {
    let (tx, rx) = crossbeam_channel::unbounded();
    payloads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            w.submit(item(i as u64, p.clone(), &tx));
            let (id, result) = rx.recv_timeout(WAIT).expect("no completion");
            assert_eq!(id, i as u64);
            result.expect("append failed")
        })
        .collect()
}

pub(crate) type Replayed = Vec<(u64, Vec<u8>)>;

pub(crate) fn recover_all(cfg: &WalConfig, from: u64) -> Result<(RecoveryInfo, Replayed), WalError> {
    let mut got = Vec::new();
    let info = recover(cfg, from, |i, p| {
        got.push((i, p.to_vec()));
        Ok(())
    })?;
    Ok((info, got))
}

pub(crate) fn segment_names(dir: &Path) -> Vec<u64> {
    crate::segment::list(dir).unwrap().iter().map(|s| s.first_index).collect()
}
