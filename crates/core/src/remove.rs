//! Deleting one message through the API (Queen's `admin.delete_message`, issue 16).
//!
//! Baton's log and segments are append-only: a deleted message is hidden, not erased. It
//! joins the partition's hidden spans (D48), which no consumer over HTTP is given and which
//! pops settle as they pass, so every group, also one that starts later, skips it, and the
//! message lookup answers 404. Kafka readers still read it (a Kafka log has no per-record
//! delete either). Must never hide what is not a message of the partition (a control
//! record, an offset not yet assigned), and deleting twice changes nothing.

use crate::command::CoreError;
use crate::entry::Effect;
use crate::model::PartId;
use crate::plan::{Planned, Planner};
use crate::query::MESSAGE_SCAN;

impl Planner {
    /// Hide the message `txid` of partition `part`; its offset.
    pub fn delete_message(&mut self, part: PartId, txid: &str) -> Planned<u64> {
        let not_found = || CoreError::not_found("message_not_found", format!("no message {txid:?} in that partition"));
        let h = self.state.txid_hash(txid);
        let p =
            self.state.parts.get(&part).ok_or_else(|| {
                CoreError::not_found("partition_not_found", format!("partition {part} does not exist"))
            })?;
        // Searched as the lookup searches (the newest MESSAGE_SCAN records).
        let offset = p.scan_txid(h, MESSAGE_SCAN).filter(|o| *o < p.end).ok_or_else(not_found)?;
        if p.is_marker(offset) {
            return Err(not_found());
        }
        if p.txns.hidden_end(offset).is_none() {
            self.emit_pub(Effect::HideRecord { part, offset })?;
        }
        Ok(offset)
    }
}
