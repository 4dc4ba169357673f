//! Tests of the chunked snapshot transport: offsets, retries, timeouts.
//!
//! Baton layout patch: moved out of `snapshot_transport.rs` unchanged, so that no file is
//! past 800 lines (vendor/openraft/PATCHES.md).

use std::collections::HashMap;
use std::future::Future;
use std::io::Cursor;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use anyerror::AnyError;
use tokio::time::sleep;

use super::SNAPSHOT_CHUNK_MAX_RETRIES;
use crate::engine::testing::UTConfig;
use crate::error::Fatal;
use crate::error::InstallSnapshotError;
use crate::error::NetworkError;
use crate::error::PayloadTooLarge;
use crate::error::RPCError;
use crate::error::RaftError;
use crate::error::RemoteError;
use crate::error::ReplicationClosed;
use crate::error::SnapshotMismatch;
use crate::error::StreamingError;
use crate::error::Timeout;
use crate::error::Unreachable;
use crate::network::snapshot_transport::Chunked;
use crate::network::snapshot_transport::SnapshotTransport;
use crate::network::Backoff;
use crate::network::RPCOption;
use crate::raft::AppendEntriesRequest;
use crate::raft::AppendEntriesResponse;
use crate::raft::InstallSnapshotRequest;
use crate::raft::InstallSnapshotResponse;
use crate::raft::SnapshotResponse;
use crate::raft::VoteRequest;
use crate::raft::VoteResponse;
use crate::OptionalSend;
use crate::RPCTypes;
use crate::RaftNetwork;
use crate::RaftTypeConfig;
use crate::Snapshot;
use crate::SnapshotMeta;
use crate::StoredMembership;
use crate::Vote;

mod errors;

struct Network {
    received_offset: Vec<u64>,
    match_cnt: u64,
}

impl<C> RaftNetwork<C> for Network
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
        // A fake implementation to test the Chunked::send_snapshot.

        self.received_offset.push(rpc.offset);

        // For the second last time, return a mismatch error.
        // Then return Ok for the reset of the time.
        self.match_cnt = self.match_cnt.saturating_sub(1);
        if self.match_cnt == 1 {
            let mismatch = SnapshotMismatch {
                expect: crate::SnapshotSegmentId {
                    id: rpc.meta.snapshot_id.clone(),
                    offset: 0,
                },
                got: crate::SnapshotSegmentId {
                    id: rpc.meta.snapshot_id.clone(),
                    offset: rpc.offset,
                },
            };
            let err = RaftError::APIError(InstallSnapshotError::SnapshotMismatch(mismatch));
            Err(RPCError::RemoteError(RemoteError::new(0, err)))
        } else {
            Ok(InstallSnapshotResponse { vote: rpc.vote })
        }
    }
}

/// Test that `Chunked` should reset the offset to 0 to re-send all data,
/// if a [`SnapshotMismatch`] error is received.
#[tokio::test]
async fn test_chunked_reset_offset_if_snapshot_id_mismatch() {
    let mut net = Network {
        received_offset: vec![],
        // When match_cnt == 1, return a mismatch error.
        // For other times, return Ok.
        match_cnt: 4,
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
                snapshot_id: "1-1-1-1".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap();

    assert_eq!(net.received_offset, vec![0, 1, 2, 0, 1, 2]);
}

struct RetryNetwork {
    received_offset: Vec<u64>,
    fail_offset: u64,
    remaining_network_failures: u64,
}

impl<C> RaftNetwork<C> for RetryNetwork
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

        if rpc.offset == self.fail_offset && self.remaining_network_failures > 0 {
            self.remaining_network_failures -= 1;
            let any_err = AnyError::error("inject snapshot chunk network error");
            return Err(RPCError::Network(NetworkError::new(&any_err)));
        }

        Ok(InstallSnapshotResponse { vote: rpc.vote })
    }
}

#[tokio::test]
async fn test_chunked_retry_resumes_from_current_offset_after_network_error() {
    let mut net = RetryNetwork {
        received_offset: vec![],
        fail_offset: 1,
        remaining_network_failures: 1,
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
                snapshot_id: "1-1-1-2".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap();

    assert_eq!(net.received_offset, vec![0, 1, 1, 2]);
}

#[tokio::test]
async fn test_chunked_retry_budget_bails_out_after_consecutive_network_errors() {
    let mut net = RetryNetwork {
        received_offset: vec![],
        fail_offset: 1,
        remaining_network_failures: u64::MAX,
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
                snapshot_id: "1-1-1-3".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap_err();

    assert!(matches!(err, StreamingError::Network(_)));
    let mut expected = vec![0];
    expected.extend(std::iter::repeat_n(1, SNAPSHOT_CHUNK_MAX_RETRIES as usize));
    assert_eq!(net.received_offset, expected);
}

struct SlowNetwork {
    received_offset: Vec<u64>,
    delay: Duration,
}

impl<C> RaftNetwork<C> for SlowNetwork
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
        sleep(self.delay).await;
        Ok(InstallSnapshotResponse { vote: rpc.vote })
    }
}

#[tokio::test]
async fn test_chunked_outer_timeout_does_not_retry() {
    let mut net = SlowNetwork {
        received_offset: vec![],
        delay: Duration::from_millis(20),
    };

    let mut opt = RPCOption::new(Duration::from_millis(1));
    opt.snapshot_chunk_size = Some(1);
    let cancel = futures::future::pending();

    let err = Chunked::send_snapshot(
        &mut net,
        Vote::new(1, 0),
        Snapshot::<UTConfig>::new(
            SnapshotMeta {
                last_log_id: None,
                last_membership: StoredMembership::default(),
                snapshot_id: "1-1-1-4".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap_err();

    assert!(matches!(err, StreamingError::Network(_)));
    assert_eq!(net.received_offset, vec![0]);
}

struct PayloadTooLargeNetwork {
    received_offset: Vec<u64>,
}

impl<C> RaftNetwork<C> for PayloadTooLargeNetwork
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
        Err(RPCError::PayloadTooLarge(PayloadTooLarge::new_bytes_hint(1)))
    }
}

#[tokio::test]
async fn test_chunked_payload_too_large_fails_fast() {
    let mut net = PayloadTooLargeNetwork {
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
                snapshot_id: "1-1-1-5".to_string(),
            },
            Box::new(Cursor::new(vec![1, 2, 3])),
        ),
        cancel,
        opt,
    )
    .await
    .unwrap_err();

    assert!(matches!(err, StreamingError::Network(_)));
    assert_eq!(net.received_offset, vec![0], "must not retry the same chunk");
}
