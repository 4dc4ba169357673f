//! Wire formats that more than one crate needs, with no I/O: the Kafka
//! RecordBatch v2 form in which Baton stores every message, and helpers to
//! build and read it. The HTTP and Kafka front doors both speak through here,
//! so a record written by one is read unchanged by the other.

pub mod compact;
pub mod read;
pub mod records;

pub use read::{decode_batches_where, Checked};

pub use records::{
    control_batch, decode_batches, encode_batch, is_transactional, set_base_offset, BatchHeader, NewRecord,
    StoredRecord, WireError, ATTR_CONTROL, ATTR_TRANSACTIONAL,
};
