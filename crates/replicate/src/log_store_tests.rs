use super::*;
use crate::machine::Machine;
use crate::Frame;
use openraft::storage::RaftLogStorageExt;
use openraft::testing::{StoreBuilder, Suite};
use openraft::{CommittedLeaderId, EntryPayload};

use crate::machine::Recorder;

fn small(dir: &Path) -> LogStoreConfig {
    let mut cfg = LogStoreConfig::new(dir.join("wal"));
    // Small segments and a tiny tail: the suite's entries go through rotation and disk reads.
    cfg.wal.segment_bytes = 256;
    cfg.wal.preallocate = false;
    cfg.tail_bytes = 0;
    cfg.read_bytes = 64;
    cfg
}

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, Machine<Recorder>, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, Machine<Recorder>), StorageError> {
        let dir = tempfile::tempdir().unwrap();
        let log = LogStore::open(small(dir.path()), &dir.path().join("raft"))?;
        let sm = Machine::open(&dir.path().join("snapshots"), Recorder::default())?;
        Ok((dir, log, sm))
    }
}

/// openraft's own storage suite, on the WAL-backed log and the snapshotting state machine.
#[test]
fn openraft_storage_suite_passes() {
    let _ = tracing_subscriber::fmt().with_env_filter("info").with_test_writer().try_init();
    Suite::test_all(Builder).unwrap();
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn normal(term: u64, index: u64, body: &str) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        payload: EntryPayload::Normal(Frame(bytes::Bytes::from(body.to_string()))),
    }
}

/// Appends and waits for openraft's flush callback, as RaftCore would.
async fn append(log: &mut LogStore, entries: Vec<Entry>) -> Result<(), StorageError> {
    log.blocking_append(entries).await
}

/// Entries, vote, committed index and purge point all survive a restart; a torn tail is cut
/// and the log after it is whole.
#[test]
fn what_was_flushed_survives_a_restart() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("raft");
        {
            let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
            append(&mut log, (0..30).map(|i| normal(1 + i / 10, i, &format!("e{i}"))).collect()).await.unwrap();
            log.save_vote(&Vote::new_committed(3, 1)).await.unwrap();
            log.save_committed(Some(LogId::new(CommittedLeaderId::new(3, 1), 25))).await.unwrap();
            log.purge(LogId::new(CommittedLeaderId::new(1, 1), 4)).await.unwrap();
            log.shutdown();
        }
        let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id.map(|l| l.index), Some(4));
        assert_eq!(st.last_log_id, Some(LogId::new(CommittedLeaderId::new(3, 1), 29)));
        assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new_committed(3, 1)));
        assert_eq!(log.read_committed().await.unwrap().map(|l| l.index), Some(25));
        let got = log.try_get_log_entries(0..100).await.unwrap();
        assert_eq!(got.first().map(|e| e.log_id.index), Some(5));
        assert_eq!(got, (5..30).map(|i| normal(1 + i / 10, i, &format!("e{i}"))).collect::<Vec<_>>());
    });
}

/// The flush callback never fires for an entry that is not durable: with the WAL latched
/// by a failed write, openraft hears the error, not Ok.
#[test]
fn a_failed_wal_reports_the_flush_as_failed() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogStore::open(small(dir.path()), &dir.path().join("raft")).unwrap();
        append(&mut log, vec![normal(1, 0, "ok")]).await.unwrap();
        log.shutdown();
        let err = append(&mut log, vec![normal(1, 1, "after shutdown")]).await.unwrap_err();
        assert!(err.to_string().contains("shut down"), "{err}");
    });
}

/// An entry that does not follow the log is refused before anything is written, and the log
/// is unchanged.
#[test]
fn an_entry_out_of_order_is_refused_and_nothing_is_written() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogStore::open(small(dir.path()), &dir.path().join("raft")).unwrap();
        append(&mut log, vec![normal(1, 0, "a"), normal(1, 1, "b")]).await.unwrap();
        let err = append(&mut log, vec![normal(1, 5, "gap")]).await.unwrap_err();
        assert!(err.to_string().contains("does not follow"), "{err}");
        assert!(append(&mut log, vec![normal(1, 1, "again")]).await.is_err());
        assert_eq!(log.get_log_state().await.unwrap().last_log_id.map(|l| l.index), Some(1));
        append(&mut log, vec![normal(2, 2, "c")]).await.unwrap();
        log.shutdown();
        let mut log = LogStore::open(small(dir.path()), &dir.path().join("raft")).unwrap();
        let got = log.try_get_log_entries(0..10).await.unwrap();
        assert_eq!(got, vec![normal(1, 0, "a"), normal(1, 1, "b"), normal(2, 2, "c")]);
    });
}

/// A follower that truncates a conflicting tail and a snapshot that jumps past the whole log
/// both leave a log that restarts to exactly what it held.
#[test]
fn truncation_and_a_purge_past_the_end_restart_cleanly() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("raft");
        let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
        append(&mut log, (0..20).map(|i| normal(1, i, &format!("old{i}"))).collect()).await.unwrap();
        log.truncate(LogId::new(CommittedLeaderId::new(1, 1), 12)).await.unwrap();
        assert_eq!(log.get_log_state().await.unwrap().last_log_id.map(|l| l.index), Some(11));
        append(&mut log, (12..15).map(|i| normal(2, i, &format!("new{i}"))).collect()).await.unwrap();
        // A snapshot from the leader covers up to 100: the log jumps there.
        log.purge(LogId::new(CommittedLeaderId::new(4, 2), 100)).await.unwrap();
        append(&mut log, vec![normal(4, 101, "after")]).await.unwrap();
        log.shutdown();
        let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id.map(|l| l.index), Some(100));
        assert_eq!(st.last_log_id.map(|l| l.index), Some(101));
        assert_eq!(log.try_get_log_entries(0..200).await.unwrap(), vec![normal(4, 101, "after")]);
    });
}

/// An empty log may start at any index (openraft's contract; its suite starts logs at 1),
/// and restarts holding exactly what it was given.
#[test]
fn an_empty_log_starts_where_its_first_entry_is() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("raft");
        let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
        append(&mut log, vec![normal(1, 1, "a"), normal(1, 2, "b"), normal(1, 3, "c")]).await.unwrap();
        append(&mut log, vec![normal(1, 4, "d")]).await.unwrap();
        log.shutdown();
        let mut log = LogStore::open(small(dir.path()), &meta).unwrap();
        let want: Vec<Entry> = ["a", "b", "c", "d"].iter().zip(1..).map(|(b, i)| normal(1, i, b)).collect();
        assert_eq!(log.try_get_log_entries(0..10).await.unwrap(), want);
        assert_eq!(log.get_log_state().await.unwrap().last_purged_log_id, None);
    });
}

type Fired = Arc<Mutex<Vec<(&'static str, bool)>>>;

/// Callbacks that record, by name, that they fired and whether with success.
fn recording() -> (Fired, impl Fn(&'static str) -> Callback) {
    let fired: Fired = Arc::default();
    let record = Arc::clone(&fired);
    let probe = move |name: &'static str| -> Callback {
        let fired = Arc::clone(&record);
        Box::new(move |r: Result<(), std::io::Error>| fired.lock().push((name, r.is_ok())))
    };
    (fired, probe)
}

/// A flush callback fires only once everything through its index is durable, in order,
/// and after a failure every waiting and later callback hears the failure.
#[test]
fn flush_callbacks_wait_for_their_index_and_hear_failures() {
    let (fired, probe) = recording();
    let mut f = Flush { durable: Some(2), failed: None, waiting: VecDeque::new() };
    f.wait(Some(2), probe("at once"));
    f.wait(None, probe("nothing to wait for"));
    f.wait(Some(5), probe("five"));
    f.wait(Some(7), probe("seven"));
    f.done(4, Ok(5));
    assert_eq!(*fired.lock(), vec![("at once", true), ("nothing to wait for", true)]);
    f.done(5, Ok(6));
    assert_eq!(fired.lock().last(), Some(&("five", true)));
    f.done(6, Err(WalError::Failed("disk gone".into())));
    assert_eq!(fired.lock().last(), Some(&("seven", false)));
    f.wait(Some(3), probe("after the failure"));
    assert_eq!(fired.lock().last(), Some(&("after the failure", false)));
    assert_eq!(fired.lock().len(), 5);
}

/// A member applies an entry only once its own log holds it durably (D76): a leader's entry
/// may commit on the followers' copies before the leader's own sync ends, and the engine must
/// not take into its state (and its checkpoint) what this log could still lose.
#[test]
fn an_entry_is_applied_only_once_this_log_holds_it_durably() {
    use openraft::storage::RaftStateMachine;
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogStore::open(small(dir.path()), &dir.path().join("raft")).unwrap();
        let mut sm = Machine::open(&dir.path().join("snapshots"), Recorder::default()).unwrap();
        sm.apply_only_durable(log.clone());
        append(&mut log, vec![normal(1, 0, "a"), normal(1, 1, "b")]).await.unwrap();
        sm.apply(vec![normal(1, 0, "a")]).await.unwrap();
        // Entries 1 and 2 are committed, but this log does not hold entry 2 yet.
        let mut later = sm.clone();
        let pending = tokio::spawn(async move { later.apply(vec![normal(1, 1, "b"), normal(1, 2, "c")]).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!pending.is_finished(), "applied before this log held the entry");
        assert_eq!(sm.with_applier(|r| r.0.len()), 1);
        append(&mut log, vec![normal(1, 2, "c")]).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), pending).await.expect("applied once durable").unwrap().unwrap();
        let applied: Vec<u64> = sm.with_applier(|r| r.0.iter().map(|(i, _)| *i).collect());
        assert_eq!(applied, [0, 1, 2]);
    });
}

/// A wait registered after a later one is still fired at its own index (`durable_through`
/// asks for indexes below what openraft's callbacks wait for).
#[test]
fn a_wait_for_an_earlier_index_fires_at_that_index() {
    let (fired, probe) = recording();
    let mut f = Flush { durable: Some(2), failed: None, waiting: VecDeque::new() };
    f.wait(Some(9), probe("nine"));
    f.wait(Some(4), probe("four"));
    f.done(4, Ok(5));
    assert_eq!(*fired.lock(), vec![("four", true)]);
    f.done(9, Ok(10));
    assert_eq!(*fired.lock(), vec![("four", true), ("nine", true)]);
}
