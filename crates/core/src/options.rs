//! A partial set of queue options, as `configure` sends them, merged onto the
//! current options (mode merge) or onto the defaults (mode replace).

use crate::model::QueueOptions;

#[derive(Debug, Clone, Default, serde::Deserialize)]
/// Unknown keys (Queen's priority, windowBuffer, encryptionEnabled...) are accepted and ignored.
#[serde(rename_all = "camelCase")]
pub struct OptionsPatch {
    pub lease_time: Option<u64>,
    pub retry_limit: Option<u32>,
    pub dead_letter_queue: Option<bool>,
    pub dlq_after_max_retries: Option<bool>,
    pub dedup_window_seconds: Option<u64>,
    pub retention_seconds: Option<u64>,
    pub delayed_processing: Option<u64>,
    pub max_size: Option<u64>,
}

impl OptionsPatch {
    pub fn apply_to(&self, mut o: QueueOptions) -> QueueOptions {
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = self.$f { o.$f = v; } )* };
        }
        set!(
            lease_time,
            retry_limit,
            dead_letter_queue,
            dlq_after_max_retries,
            dedup_window_seconds,
            retention_seconds,
            delayed_processing,
            max_size
        );
        o
    }
}
