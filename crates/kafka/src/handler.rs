//! Dispatch: one decoded request in, one encoded response frame out (or none,
//! for Produce with acks=0). Every API in the table has an arm here; the
//! handlers live with their subject (topics, produce, fetch, groups).

use crate::conn::{Answer, Reply};
use crate::errors::{error_response, UNSUPPORTED_VERSION};
use crate::frame::{encode_response, Parsed, Request};
use crate::{
    admin, cluster, fetch, groups, produce, share, share_ack, share_admin, share_fetch, topics, txn, versions, Ctx,
};
use baton_core::request_memory::MemoryHold;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

pub async fn handle(ctx: Arc<Ctx>, parsed: Parsed, peer: SocketAddr) -> Reply {
    match parsed {
        Parsed::ApiVersionsFallback { correlation_id } => {
            let body = ResponseKind::ApiVersions(versions::api_versions_response(UNSUPPORTED_VERSION));
            encode_response(correlation_id, ApiKey::ApiVersions, 0, &body).map(|f| Some(f.into()))
        }
        Parsed::Unsupported(r) => match error_response(&r.body, r.version, UNSUPPORTED_VERSION) {
            Some(body) => {
                ctx.stats.answered(r.api, &body);
                encode_response(r.header.correlation_id, r.api, r.version, &body).map(|f| Some(f.into()))
            }
            None => Err(format!("{:?} v{} is not supported", r.api, r.version)),
        },
        Parsed::Request(r) => {
            let (cid, api, version) = (r.header.correlation_id, r.api, r.version);
            if let RequestKind::Produce(q) = &r.body {
                let n: usize = q
                    .topic_data
                    .iter()
                    .flat_map(|t| &t.partition_data)
                    .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
                    .sum();
                ctx.stats.produce_bytes.fetch_add(n as u64, Relaxed);
            }
            match respond(&ctx, r, peer).await? {
                Some((body, mem)) => {
                    ctx.stats.answered(api, &body);
                    if let ResponseKind::Fetch(f) = &body {
                        let n: usize = f
                            .responses
                            .iter()
                            .flat_map(|t| &t.partitions)
                            .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
                            .sum();
                        ctx.stats.fetch_bytes.fetch_add(n as u64, Relaxed);
                    }
                    // The records' bytes are copied into the frame and dropped with `body`;
                    // the hold now stands for the frame's copy until it is written.
                    encode_response(cid, api, version, &body).map(|frame| Some(Answer { frame, mem }))
                }
                None => Ok(None),
            }
        }
    }
}

/// `Ok(None)` only for Produce with acks=0. With the answer, the request memory held for
/// the records it carries (D88; nothing for an answer without records).
async fn respond(ctx: &Ctx, r: Request, peer: SocketAddr) -> Result<Option<(ResponseKind, MemoryHold)>, String> {
    use RequestKind as Q;
    use ResponseKind as R;
    let v = r.version;
    let client_id = r.header.client_id.as_deref().unwrap_or("").to_string();
    if let Some(refused) = cluster::refuse_unless_leading(ctx, &r.body, v) {
        // An acks=0 producer reads no answer: as Kafka does, the connection is closed, and
        // the client's next metadata names the leader.
        if matches!(&r.body, Q::Produce(q) if q.acks == 0) {
            return Err("acks=0 produce to a member that does not lead".into());
        }
        return Ok(Some((refused, MemoryHold::none())));
    }
    let mut mem = MemoryHold::none();
    let body = match r.body {
        Q::ApiVersions(_) => R::ApiVersions(versions::api_versions_response(0)),
        Q::Metadata(q) => R::Metadata(topics::metadata(ctx, q, v).await),
        Q::Produce(q) => match produce::produce(ctx, q, v).await {
            Some(p) => R::Produce(p),
            None => return Ok(None),
        },
        Q::Fetch(q) => {
            let (answer, held) = fetch::fetch(ctx, q, v).await;
            mem = held;
            R::Fetch(answer)
        }
        Q::ListOffsets(q) => R::ListOffsets(fetch::list_offsets(ctx, q, v).await),
        Q::CreateTopics(q) => R::CreateTopics(topics::create_topics(ctx, q, v).await),
        Q::DeleteTopics(q) => R::DeleteTopics(topics::delete_topics(ctx, q, v).await),
        Q::CreatePartitions(q) => R::CreatePartitions(topics::create_partitions(ctx, q).await),
        Q::DescribeConfigs(q) => R::DescribeConfigs(topics::describe_configs(ctx, q, v).await),
        Q::InitProducerId(q) if q.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) => {
            R::InitProducerId(txn::init_producer_id(ctx, q, v).await)
        }
        Q::InitProducerId(_) => R::InitProducerId(produce::init_producer_id(ctx).await),
        Q::AddPartitionsToTxn(q) => R::AddPartitionsToTxn(txn::add_partitions(ctx, q, v).await),
        Q::AddOffsetsToTxn(q) => R::AddOffsetsToTxn(txn::add_offsets(ctx, q, v).await),
        Q::TxnOffsetCommit(q) => R::TxnOffsetCommit(txn::txn_offset_commit(ctx, q, v).await),
        Q::EndTxn(q) => R::EndTxn(txn::end_txn(ctx, q, v).await),
        Q::DescribeCluster(_) => R::DescribeCluster(admin::describe_cluster(ctx)),
        Q::DeleteRecords(q) => R::DeleteRecords(admin::delete_records(ctx, q).await),
        Q::AlterConfigs(q) => R::AlterConfigs(admin::alter_configs(ctx, q).await),
        Q::IncrementalAlterConfigs(q) => R::IncrementalAlterConfigs(admin::incremental_alter_configs(ctx, q).await),
        Q::OffsetDelete(q) => R::OffsetDelete(admin::offset_delete(ctx, q).await),
        Q::DescribeTransactions(q) => R::DescribeTransactions(txn::describe(ctx, q).await),
        Q::ListTransactions(q) => R::ListTransactions(txn::list(ctx, q).await),
        Q::FindCoordinator(q) => R::FindCoordinator(groups::find_coordinator(ctx, q, v)),
        Q::JoinGroup(q) => R::JoinGroup(groups::join_group(ctx, q, v, &client_id, &peer.ip().to_string()).await),
        Q::SyncGroup(q) => R::SyncGroup(groups::sync_group(ctx, q, v).await),
        Q::Heartbeat(q) => R::Heartbeat(groups::heartbeat(ctx, q)),
        Q::LeaveGroup(q) => R::LeaveGroup(groups::leave_group(ctx, q, v)),
        Q::OffsetCommit(q) => R::OffsetCommit(groups::offset_commit(ctx, q, v).await),
        Q::OffsetFetch(q) => R::OffsetFetch(groups::offset_fetch(ctx, q, v).await),
        Q::ListGroups(q) => R::ListGroups(groups::list_groups(ctx, q, v).await),
        Q::DescribeGroups(q) => R::DescribeGroups(groups::describe_groups(ctx, q, v).await),
        Q::DeleteGroups(q) => R::DeleteGroups(groups::delete_groups(ctx, q).await),
        Q::ShareGroupHeartbeat(q) => {
            R::ShareGroupHeartbeat(share::heartbeat(ctx, q, &client_id, &peer.ip().to_string()).await)
        }
        Q::ShareGroupDescribe(q) => R::ShareGroupDescribe(share::describe(ctx, q)),
        Q::ShareFetch(q) => {
            let (answer, held) = share_fetch::fetch(ctx, q).await;
            mem = held;
            R::ShareFetch(answer)
        }
        Q::ShareAcknowledge(q) => R::ShareAcknowledge(share_ack::acknowledge_request(ctx, q).await),
        Q::DescribeShareGroupOffsets(q) => R::DescribeShareGroupOffsets(share_admin::describe_offsets(ctx, q).await),
        Q::AlterShareGroupOffsets(q) => R::AlterShareGroupOffsets(share_admin::alter_offsets(ctx, q).await),
        Q::DeleteShareGroupOffsets(q) => R::DeleteShareGroupOffsets(share_admin::delete_offsets(ctx, q).await),
        // SaslHandshake and SaslAuthenticate are answered by the connection
        // (they change its state) and never get here. The table gates every
        // request before it gets here, so an API without an arm is a bug in
        // the table: close rather than guess.
        _ => return Err(format!("{:?} is in the table but has no handler", r.api)),
    };
    Ok(Some((body, mem)))
}
