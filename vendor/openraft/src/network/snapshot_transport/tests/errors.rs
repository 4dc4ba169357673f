//! Tests of the chunked snapshot transport: how each kind of network error is retried.
//!
//! Baton layout patch: moved out of `snapshot_transport.rs` unchanged, so that no file is
//! past 800 lines (vendor/openraft/PATCHES.md).

use super::*;

struct FatalNetwork {
    received_offset: Vec<u64>,
}

impl<C> RaftNetwork<C> for FatalNetwork
where C: RaftTypeConfig<NodeId = u64>
{
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<C::NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn full_snapshot(
        &mut self,
        _vote: Vote<C::NodeId>,
        _snapshot: Snapshot<C>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C::NodeId>, StreamingError<C, Fatal<C::NodeId>>> {
        unimplemented!()
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<C::NodeId>,
        RPCError<C::NodeId, C::Node, RaftError<C::NodeId, InstallSnapshotError>>,
    > {
        self.received_offset.push(rpc.offset);
        Err(RPCError::RemoteError(RemoteError::new(
            2,
            RaftError::Fatal(Fatal::Panicked),
        )))
    }
}

#[tokio::test]
async fn test_chunked_remote_fatal_is_propagated() {
    let mut net = FatalNetwork {
        received_offset: vec![],
    };

    let mut opt = RPCOption::new(Duration::from_millis(100));
    opt.snapshot_chunk_size = Some(1);
    let cancel = futures::future::pending();

    let err = Chunked::send_snapshot(
        &mut net,
        Vote::new(1, 0),
        Snapshot::<UTConfig>::new(
            SnapshotMeta {
                last_log_id: None,
                last_membership: StoredMembership::default(),
                snapshot_id: "1-1-1-6".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap_err();

    assert!(
        matches!(err, StreamingError::RemoteError(_)),
        "remote Fatal must surface, got {err:?}"
    );
    assert_eq!(net.received_offset, vec![0], "remote Fatal must not be retried");
}

struct UnreachableNetwork {
    received_offset: Vec<u64>,
    /// Offsets at which one `Unreachable` error should be injected (consumed on first hit).
    unreachable_at: Vec<u64>,
    backoff_calls: Arc<Mutex<u64>>,
}

impl<C> RaftNetwork<C> for UnreachableNetwork
where C: RaftTypeConfig<NodeId = u64>
{
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<C::NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn full_snapshot(
        &mut self,
        _vote: Vote<C::NodeId>,
        _snapshot: Snapshot<C>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C::NodeId>, StreamingError<C, Fatal<C::NodeId>>> {
        unimplemented!()
    }

    fn backoff(&self) -> Backoff {
        *self.backoff_calls.lock().unwrap() += 1;
        // Use a short, infinite iterator so the test is fast but the iterator never exhausts.
        Backoff::new(std::iter::repeat(Duration::from_millis(1)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<C::NodeId>,
        RPCError<C::NodeId, C::Node, RaftError<C::NodeId, InstallSnapshotError>>,
    > {
        self.received_offset.push(rpc.offset);

        if let Some(idx) = self.unreachable_at.iter().position(|&o| o == rpc.offset) {
            self.unreachable_at.remove(idx);
            let any_err = AnyError::error("target unreachable");
            return Err(RPCError::Unreachable(Unreachable::new(&any_err)));
        }
        Ok(InstallSnapshotResponse { vote: rpc.vote })
    }
}

/// `Unreachable` errors pull the next delay from `net.backoff()`, and the cached iterator
/// is dropped on the next successful chunk so a fresh outage gets a fresh backoff.
#[tokio::test]
async fn test_chunked_retry_on_unreachable_uses_caller_backoff() {
    let backoff_calls = Arc::new(Mutex::new(0u64));
    let mut net = UnreachableNetwork {
        received_offset: vec![],
        // Two separate outages: one at offset 1, one at offset 2.
        unreachable_at: vec![1, 2],
        backoff_calls: backoff_calls.clone(),
    };

    let mut opt = RPCOption::new(Duration::from_millis(100));
    opt.snapshot_chunk_size = Some(1);
    let cancel = futures::future::pending();

    Chunked::send_snapshot(
        &mut net,
        Vote::new(1, 0),
        Snapshot::<UTConfig>::new(
            SnapshotMeta {
                last_log_id: None,
                last_membership: StoredMembership::default(),
                snapshot_id: "1-1-1-7".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap();

    assert_eq!(net.received_offset, vec![0, 1, 1, 2, 2]);
    assert_eq!(
        *backoff_calls.lock().unwrap(),
        2,
        "net.backoff() must be called once per outage — the cached iterator is dropped on success"
    );
}

struct BurstyNetwork {
    received_offset: Vec<u64>,
    /// For each offset, how many `Network` failures remain to inject before it succeeds.
    fails_remaining_per_offset: HashMap<u64, u64>,
}

impl<C> RaftNetwork<C> for BurstyNetwork
where C: RaftTypeConfig<NodeId = u64>
{
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<C::NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn full_snapshot(
        &mut self,
        _vote: Vote<C::NodeId>,
        _snapshot: Snapshot<C>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C::NodeId>, StreamingError<C, Fatal<C::NodeId>>> {
        unimplemented!()
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<C::NodeId>,
        RPCError<C::NodeId, C::Node, RaftError<C::NodeId, InstallSnapshotError>>,
    > {
        self.received_offset.push(rpc.offset);

        let remaining = self.fails_remaining_per_offset.entry(rpc.offset).or_insert(0);
        if *remaining > 0 {
            *remaining -= 1;
            let any_err = AnyError::error("inject network error");
            return Err(RPCError::Network(NetworkError::new(&any_err)));
        }
        Ok(InstallSnapshotResponse { vote: rpc.vote })
    }
}

/// A successful chunk resets `consecutive_failures`, so several bursts of
/// `MAX_RETRIES - 1` failures in a row succeed even though the total number of
/// failures exceeds the budget.
#[tokio::test]
async fn test_chunked_success_resets_retry_budget() {
    let burst = SNAPSHOT_CHUNK_MAX_RETRIES - 1;
    let mut fails = HashMap::new();
    fails.insert(0, burst);
    fails.insert(1, burst);

    let mut net = BurstyNetwork {
        received_offset: vec![],
        fails_remaining_per_offset: fails,
    };

    let mut opt = RPCOption::new(Duration::from_millis(100));
    opt.snapshot_chunk_size = Some(1);
    let cancel = futures::future::pending();

    // 2-byte snapshot = 2 chunks. Total failures injected = 2 * burst > MAX_RETRIES.
    Chunked::send_snapshot(
        &mut net,
        Vote::new(1, 0),
        Snapshot::<UTConfig>::new(
            SnapshotMeta {
                last_log_id: None,
                last_membership: StoredMembership::default(),
                snapshot_id: "1-1-1-8".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap();

    let attempts_per_offset = (burst + 1) as usize;
    let mut expected = Vec::new();
    expected.extend(std::iter::repeat_n(0u64, attempts_per_offset));
    expected.extend(std::iter::repeat_n(1u64, attempts_per_offset));
    assert_eq!(net.received_offset, expected);
}

#[derive(Clone, Copy)]
enum TransientKind {
    Timeout,
    Network,
    Unreachable,
}

struct ScriptedErrorNetwork {
    received_offset: Vec<u64>,
    /// Responses to emit when `install_snapshot` is called at `fail_offset`, in order.
    script: Vec<TransientKind>,
    fail_offset: u64,
}

impl<C> RaftNetwork<C> for ScriptedErrorNetwork
where C: RaftTypeConfig<NodeId = u64>
{
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<C>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<C::NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<C::NodeId>, RPCError<C::NodeId, C::Node, RaftError<C::NodeId>>> {
        unimplemented!()
    }

    async fn full_snapshot(
        &mut self,
        _vote: Vote<C::NodeId>,
        _snapshot: Snapshot<C>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C::NodeId>, StreamingError<C, Fatal<C::NodeId>>> {
        unimplemented!()
    }

    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(Duration::from_millis(1)))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<C>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<C::NodeId>,
        RPCError<C::NodeId, C::Node, RaftError<C::NodeId, InstallSnapshotError>>,
    > {
        self.received_offset.push(rpc.offset);

        if rpc.offset != self.fail_offset || self.script.is_empty() {
            return Ok(InstallSnapshotResponse { vote: rpc.vote });
        }

        Err(match self.script.remove(0) {
            TransientKind::Timeout => RPCError::Timeout(Timeout {
                action: RPCTypes::InstallSnapshot,
                id: 0,
                target: 1,
                timeout: Duration::from_millis(50),
            }),
            TransientKind::Network => {
                let any_err = AnyError::error("inject network");
                RPCError::Network(NetworkError::new(&any_err))
            }
            TransientKind::Unreachable => {
                let any_err = AnyError::error("inject unreachable");
                RPCError::Unreachable(Unreachable::new(&any_err))
            }
        })
    }
}

/// The retry budget counts every transient variant uniformly. Mixing `Timeout`,
/// `Network`, and `Unreachable` errors still bails out at exactly
/// `SNAPSHOT_CHUNK_MAX_RETRIES` consecutive failures.
#[tokio::test]
async fn test_chunked_retry_budget_is_universal_across_transient_variants() {
    let script = vec![
        TransientKind::Timeout,
        TransientKind::Network,
        TransientKind::Unreachable,
        TransientKind::Timeout,
        TransientKind::Network,
    ];
    assert_eq!(script.len() as u64, SNAPSHOT_CHUNK_MAX_RETRIES);

    let mut net = ScriptedErrorNetwork {
        received_offset: vec![],
        script,
        fail_offset: 1,
    };

    let mut opt = RPCOption::new(Duration::from_millis(100));
    opt.snapshot_chunk_size = Some(1);
    let cancel = futures::future::pending();

    let err = Chunked::send_snapshot(
        &mut net,
        Vote::new(1, 0),
        Snapshot::<UTConfig>::new(
            SnapshotMeta {
                last_log_id: None,
                last_membership: StoredMembership::default(),
                snapshot_id: "1-1-1-9".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap_err();

    // The last scripted variant is Network, so the returned StreamingError variant matches.
    assert!(
        matches!(err, StreamingError::Network(_)),
        "last variant was Network, got {err:?}"
    );

    let mut expected = vec![0];
    expected.extend(std::iter::repeat_n(1u64, SNAPSHOT_CHUNK_MAX_RETRIES as usize));
    assert_eq!(net.received_offset, expected);
}
