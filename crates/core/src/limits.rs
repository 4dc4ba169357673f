//! The named bounds of the engine: every "too much of anything" a client can
//! ask for has one here, with its default, and is refused with a precise code
//! when hit (docs/limits.md lists them). Owns only the numbers and their
//! defaults; the checks live where the thing is planned.

use crate::command::{CoreError, ErrorKind};

#[derive(Debug, Clone)]
pub struct Limits {
    /// A planner batch is handed to the log once its entries reach this many bytes
    /// (the one entry that crossed it still joins). Keeps every frame far below the log's
    /// frame cap (`baton_log::MAX_FRAME_PAYLOAD`) however many large requests arrive at once.
    pub max_frame_bytes: usize,
    /// One request's entry (its message bytes and metadata) may be at most this large:
    /// refused `entry_too_large` (413) before anything is planned.
    pub max_entry_bytes: usize,
    /// Consumer groups that may exist at once; a pop, seek or commit that would make one
    /// more is refused `too_many_groups` (429).
    pub max_groups: usize,
    /// A pop leases no more messages than fit in this many bytes of stored batches (at
    /// least one message): the answer is built from them (issue 12 item 12).
    pub max_pop_bytes: u64,
    /// Queues (Kafka topics) that may exist at once; a push, configure or topic creation
    /// that would make one more is refused `too_many_queues` (429) before anything is planned.
    pub max_queues: usize,
    /// Partitions that may exist at once, over all queues: each costs state and up to three
    /// files (D29). One more is refused `too_many_partitions` (429) before anything is planned.
    pub max_partitions: usize,
    /// Bytes of KV entries (namespace, key and value) the state may hold: a write that would
    /// grow them past it is refused `kv_full` (429); writes that shrink them always go in.
    pub max_kv_bytes: u64,
    /// Bytes of pending timers (queue, key, payload, partition, transaction id): a schedule
    /// that would grow them past it is refused `timers_full` (429).
    pub max_timer_bytes: u64,
    /// Kafka transactional ids that may exist at once (an id idle for seven days is
    /// forgotten): an InitProducerId for one more is refused `too_many_transactional_ids`.
    pub max_kafka_txn_ids: usize,
    /// Aborted Kafka transactions a partition remembers until retention drops them (Fetch
    /// reports them; each costs state): a transaction adding a partition at the bound is
    /// refused `too_many_aborted_transactions`.
    pub max_aborted_txns: usize,
    /// Partitions one Kafka transaction may write to: its end writes a marker into each,
    /// all in one entry planned at once, and a partition's first write makes its files on
    /// the planner (about 1 ms each here), so the width bounds how long one EndTxn (or its
    /// timeout's abort) holds every other request back (D79). An AddPartitionsToTxn, or a
    /// transactional produce, past it is refused POLICY_VIOLATION / INVALID_TXN_STATE.
    pub max_txn_partitions: usize,
    /// Partitions one HTTP transaction may push to (its push groups: one per partition). The
    /// transaction is one entry planned at once (I2), and a partition's first write makes its
    /// files on the planner, so one transaction pushing to 20,000 new partitions held every
    /// other request back for 5.8 s (D81). Past it: `too_many_transaction_partitions` (413),
    /// nothing planned.
    pub max_http_txn_partitions: usize,
    /// How far behind a group's cursor a retried dead letter may lie (messages): a retry
    /// marks every offset between as settled in the cursor, so this bounds what one retry
    /// adds to it. Past it: `retry_too_far_behind` (409), nothing changed.
    pub max_retry_distance: u64,
    /// Planner time one step of a push may take (D80): past it, the push's remaining
    /// groups are planned in a later step, after the requests that queued behind it. A
    /// partition's first write makes its files on the planner (0.15-2.4 ms each on the
    /// development VM), so one push creating 5,000 partitions held every other request back
    /// for up to 12 s before this. Kafka produces that make new segment files get a
    /// budget of the same size in each pass of the planner loop (runner/produce_steps.rs).
    pub push_step: std::time::Duration,
}

pub const DEFAULT_MAX_QUEUES: usize = 100_000;
pub const DEFAULT_MAX_PARTITIONS: usize = 1_000_000;
pub const DEFAULT_MAX_TXN_PARTITIONS: usize = 1_000;
pub const DEFAULT_PUSH_STEP: std::time::Duration = std::time::Duration::from_millis(20);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 64 << 20,
            max_entry_bytes: 128 << 20,
            max_groups: 100_000,
            max_pop_bytes: 64 << 20,
            max_queues: DEFAULT_MAX_QUEUES,
            max_partitions: DEFAULT_MAX_PARTITIONS,
            max_kv_bytes: 1 << 30,
            max_timer_bytes: 1 << 30,
            max_kafka_txn_ids: 100_000,
            max_aborted_txns: 100_000,
            max_txn_partitions: DEFAULT_MAX_TXN_PARTITIONS,
            max_http_txn_partitions: DEFAULT_MAX_TXN_PARTITIONS,
            max_retry_distance: 100_000,
            push_step: DEFAULT_PUSH_STEP,
        }
    }
}

impl Limits {
    /// Refuses settings under which a frame could exceed what the log takes: a frame is at
    /// most `max_frame_bytes` plus one entry.
    pub fn validate(&self) -> Result<(), String> {
        let cap = baton_log::MAX_FRAME_PAYLOAD;
        if self.max_frame_bytes.saturating_add(self.max_entry_bytes) > cap {
            return Err(format!(
                "max frame bytes ({}) plus max entry bytes ({}) must stay within the log's frame cap of {cap} bytes",
                self.max_frame_bytes, self.max_entry_bytes
            ));
        }
        if self.max_frame_bytes == 0
            || self.max_entry_bytes == 0
            || self.max_groups == 0
            || self.max_pop_bytes == 0
            || self.max_queues == 0
            || self.max_partitions == 0
            || self.max_kv_bytes == 0
            || self.max_timer_bytes == 0
            || self.max_kafka_txn_ids == 0
            || self.max_aborted_txns == 0
            || self.max_txn_partitions == 0
            || self.max_http_txn_partitions == 0
            || self.max_retry_distance == 0
            || self.push_step.is_zero()
        {
            return Err("engine limits must be positive".into());
        }
        Ok(())
    }

    pub(crate) fn entry_too_large(&self, bytes: usize) -> CoreError {
        CoreError::new(
            ErrorKind::TooLarge,
            "entry_too_large",
            format!("the request's entry would be {bytes} bytes; at most {} (max entry bytes)", self.max_entry_bytes),
        )
    }

    /// Refuses a write that grows what is held from `have` by `grow` bytes past `max`.
    pub(crate) fn admit_held(
        what: &str,
        code: &'static str,
        setting: &str,
        have: u64,
        grow: i64,
        max: u64,
    ) -> Result<(), CoreError> {
        if grow <= 0 || have.saturating_add(grow as u64) <= max {
            return Ok(());
        }
        Err(CoreError::new(
            ErrorKind::Overloaded,
            code,
            format!("{what} hold {have} bytes and this would add {grow}; at most {max} ({setting})"),
        ))
    }

    /// Refuses an HTTP transaction pushing to `groups` partitions past `max_http_txn_partitions`.
    pub(crate) fn admit_txn_width(&self, groups: usize) -> Result<(), CoreError> {
        if groups <= self.max_http_txn_partitions {
            return Ok(());
        }
        Err(CoreError::new(
            ErrorKind::TooLarge,
            "too_many_transaction_partitions",
            format!(
                "the transaction pushes to {groups} partitions; at most {} (max transaction partitions)",
                self.max_http_txn_partitions
            ),
        ))
    }

    /// Refuses `more` new queues when `have` exist.
    pub(crate) fn admit_queues(&self, have: usize, more: usize) -> Result<(), CoreError> {
        admit_count("queues", "too_many_queues", "max queues", have, more, self.max_queues)
    }

    /// Refuses `more` new partitions when `have` exist.
    pub(crate) fn admit_partitions(&self, have: usize, more: usize) -> Result<(), CoreError> {
        admit_count("partitions", "too_many_partitions", "max partitions", have, more, self.max_partitions)
    }
}

/// Refuses making `more` of `what` when `have` exist and at most `max` may.
fn admit_count(
    what: &str,
    code: &'static str,
    setting: &str,
    have: usize,
    more: usize,
    max: usize,
) -> Result<(), CoreError> {
    if have.saturating_add(more) <= max {
        return Ok(());
    }
    Err(CoreError::new(
        ErrorKind::Overloaded,
        code,
        format!("{have} {what} exist and this would make {more} more; at most {max} ({setting})"),
    ))
}

/// Longest delay a timer may be scheduled with, and longest KV time-to-live: ten years.
/// Beyond it a client has sent a mistake (u64::MAX would wrap the clock), not a plan.
pub const MAX_DELAY_MS: u64 = 10 * 366 * 24 * 3600 * 1000;

/// The most partitions one Kafka topic may have (CreateTopics, CreatePartitions, and the
/// HTTP route a cluster member asks the leader to create one by).
pub const MAX_KAFKA_PARTITIONS: u32 = 10_000;
