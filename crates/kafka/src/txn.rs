//! Kafka transactions at the door (D48): InitProducerId with a transactional id,
//! AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions and
//! ListTransactions, and the clock that aborts transactions past their timeout. The leader
//! is the transaction coordinator (FindCoordinator names it, as for groups). Owns only the
//! protocol shapes and the error mapping; what a request does to the state is planned in
//! baton-core (`ktxn_plan`), one entry per request, so a commit is all of it or none.

use crate::errors::*;
use crate::topics::s;
use crate::Ctx;
use baton_core::ktxn_plan::{TxnError, TxnOp, TxnReply};
use baton_core::{CoreError, Query, QueryResult};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;

pub const INVALID_TXN_STATE: i16 = E::InvalidTxnState.code();
pub const PRODUCER_FENCED: i16 = E::ProducerFenced.code();
const INVALID_PRODUCER_ID_MAPPING: i16 = E::InvalidProducerIdMapping.code();
const INVALID_TRANSACTION_TIMEOUT: i16 = E::InvalidTransactionTimeout.code();
const TRANSACTIONAL_ID_NOT_FOUND: i16 = E::TransactionalIdNotFound.code();
const POLICY_VIOLATION: i16 = E::PolicyViolation.code();

/// The Kafka code for a refused transaction request. A fenced producer gets
/// PRODUCER_FENCED from v-current clients' point of view; before the versions that know it
/// (InitProducerId v4, AddPartitionsToTxn v2, AddOffsetsToTxn v2, TxnOffsetCommit v3,
/// EndTxn v2), INVALID_PRODUCER_EPOCH, as Kafka answers.
fn code(e: &TxnError, fenced_known: bool) -> (i16, Option<String>) {
    match e {
        TxnError::InvalidTimeout => (INVALID_TRANSACTION_TIMEOUT, None),
        TxnError::UnknownId => (INVALID_PRODUCER_ID_MAPPING, None),
        TxnError::ProducerIdMismatch => (INVALID_PRODUCER_ID_MAPPING, None),
        TxnError::Fenced if fenced_known => (PRODUCER_FENCED, None),
        TxnError::Fenced => (INVALID_PRODUCER_EPOCH, None),
        TxnError::InvalidState(m) => (INVALID_TXN_STATE, Some(m.clone())),
        TxnError::UnknownPartition => (UNKNOWN_TOPIC_OR_PARTITION, None),
        TxnError::TooMany(m) => (POLICY_VIOLATION, Some(m.clone())),
    }
}

/// One transaction request through the engine: the reply, or the Kafka code and message.
async fn run(ctx: &Ctx, op: TxnOp, fenced_known: bool) -> Result<TxnReply, (i16, Option<String>)> {
    match ctx.engine.kafka_txn(op).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(code(&e, fenced_known)),
        Err(e) => Err(core_code(&e)),
    }
}

fn core_code(e: &CoreError) -> (i16, Option<String>) {
    let c = match code_of(e) {
        // A cluster member that lost the lead mid-request: the client finds the coordinator again.
        NOT_LEADER_OR_FOLLOWER => NOT_COORDINATOR,
        // A bound of the engine (the planner's queue full, or an end that waited too long for
        // its partitions' directories, D81): nothing was written. Every transactional client
        // retries this code on each of these APIs; THROTTLING_QUOTA_EXCEEDED, the code of an
        // overloaded produce, is fatal to a Java producer's EndTxn.
        c if c == E::ThrottlingQuotaExceeded.code() => E::CoordinatorLoadInProgress.code(),
        c => c,
    };
    (c, Some(e.to_string()))
}

fn tid_of(t: &TransactionalId) -> String {
    t.0.to_string()
}

pub async fn init_producer_id(ctx: &Ctx, req: InitProducerIdRequest, version: i16) -> InitProducerIdResponse {
    let tid = req.transactional_id.as_ref().map(tid_of).unwrap_or_default();
    let op = TxnOp::Init {
        tid,
        timeout_ms: req.transaction_timeout_ms,
        producer: req.producer_id.0,
        epoch: req.producer_epoch,
    };
    match run(ctx, op, version >= 4).await {
        Ok(TxnReply::Producer { producer, epoch }) => {
            InitProducerIdResponse::default().with_producer_id(producer.into()).with_producer_epoch(epoch)
        }
        Ok(_) => InitProducerIdResponse::default()
            .with_error_code(UNKNOWN_SERVER_ERROR)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1),
        Err((c, _)) => {
            InitProducerIdResponse::default().with_error_code(c).with_producer_id((-1).into()).with_producer_epoch(-1)
        }
    }
}

pub async fn add_partitions(ctx: &Ctx, req: AddPartitionsToTxnRequest, version: i16) -> AddPartitionsToTxnResponse {
    let parts: Vec<(String, String)> = req
        .v3_and_below_topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), p.to_string())))
        .collect();
    let op = TxnOp::AddPartitions {
        tid: tid_of(&req.v3_and_below_transactional_id),
        producer: req.v3_and_below_producer_id.0,
        epoch: req.v3_and_below_producer_epoch,
        parts: parts.clone(),
    };
    let outcome = if parts.iter().any(|(_, p)| p.starts_with('-')) {
        Err((UNKNOWN_TOPIC_OR_PARTITION, None))
    } else {
        run(ctx, op, version >= 2).await.map(|_| ())
    };
    // The request is added whole or not at all, so every partition carries its outcome.
    let c = outcome.map_or_else(|(c, _)| c, |_| NONE);
    add_partitions_answer(&req, c)
}

/// Every partition of the request, each with `code`.
fn add_partitions_answer(req: &AddPartitionsToTxnRequest, code: i16) -> AddPartitionsToTxnResponse {
    let results = req
        .v3_and_below_topics
        .iter()
        .map(|t| {
            let by_partition = t
                .partitions
                .iter()
                .map(|p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(code)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(by_partition)
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
}

pub async fn add_offsets(ctx: &Ctx, req: AddOffsetsToTxnRequest, version: i16) -> AddOffsetsToTxnResponse {
    let op = TxnOp::AddOffsets {
        tid: tid_of(&req.transactional_id),
        producer: req.producer_id.0,
        epoch: req.producer_epoch,
        group: req.group_id.0.to_string(),
    };
    let c = match run(ctx, op, version >= 2).await {
        Ok(_) => NONE,
        Err((c, _)) => c,
    };
    AddOffsetsToTxnResponse::default().with_error_code(c)
}

pub async fn txn_offset_commit(ctx: &Ctx, req: TxnOffsetCommitRequest, version: i16) -> TxnOffsetCommitResponse {
    let offsets: Vec<(String, String, u64)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| (t.name.0.to_string(), p.partition_index.to_string(), p.committed_offset))
        })
        .filter(|(_, _, o)| *o >= 0)
        .map(|(t, p, o)| (t, p, o as u64))
        .collect();
    let bad = req.topics.iter().flat_map(|t| &t.partitions).any(|p| p.partition_index < 0 || p.committed_offset < 0);
    let op = TxnOp::Offsets {
        tid: tid_of(&req.transactional_id),
        producer: req.producer_id.0,
        epoch: req.producer_epoch,
        group: req.group_id.0.to_string(),
        offsets,
        implicit: version >= 5,
    };
    let c = if bad {
        INVALID_REQUEST
    } else {
        match run(ctx, op, version >= 3).await {
            Ok(_) => NONE,
            Err((c, _)) => c,
        }
    };
    txn_offsets_answer(&req, c)
}

/// Every partition of the request, each with `code`.
fn txn_offsets_answer(req: &TxnOffsetCommitRequest, code: i16) -> TxnOffsetCommitResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| {
            TxnOffsetCommitResponseTopic::default().with_name(t.name.clone()).with_partitions(
                t.partitions
                    .iter()
                    .map(|p| {
                        TxnOffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(code)
                    })
                    .collect(),
            )
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}

pub async fn end_txn(ctx: &Ctx, req: EndTxnRequest, version: i16) -> EndTxnResponse {
    // v5 is transactions v2: every end moves the id to its next epoch, answered here.
    let op = TxnOp::End {
        tid: tid_of(&req.transactional_id),
        producer: req.producer_id.0,
        epoch: req.producer_epoch,
        commit: req.committed,
        bump: version >= 5,
    };
    match run(ctx, op, version >= 2).await {
        Ok(TxnReply::Producer { producer, epoch }) => {
            EndTxnResponse::default().with_producer_id(producer.into()).with_producer_epoch(epoch)
        }
        Ok(_) => EndTxnResponse::default().with_producer_id((-1).into()).with_producer_epoch(-1),
        Err((c, _)) => {
            EndTxnResponse::default().with_error_code(c).with_producer_id((-1).into()).with_producer_epoch(-1)
        }
    }
}

async fn views(ctx: &Ctx, ids: Option<Vec<String>>) -> Result<Vec<baton_core::TxnView>, i16> {
    match ctx.engine.query(Query::KafkaTxns(ids)).await {
        Ok(QueryResult::KafkaTxns(v)) => Ok(v),
        Ok(_) => Err(UNKNOWN_SERVER_ERROR),
        Err(e) => Err(core_code(&e).0),
    }
}

pub async fn describe(ctx: &Ctx, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let ids: Vec<String> = req.transactional_ids.iter().map(tid_of).collect();
    let found = views(ctx, Some(ids.clone())).await;
    let states = ids
        .iter()
        .map(|id| {
            let st =
                describe_transactions_response::TransactionState::default().with_transactional_id(s(id.clone()).into());
            match &found {
                Err(c) => st.with_error_code(*c),
                Ok(v) => match v.iter().find(|t| &t.tid == id) {
                    None => st.with_error_code(TRANSACTIONAL_ID_NOT_FOUND),
                    Some(t) => {
                        let mut topics: Vec<describe_transactions_response::TopicData> = Vec::new();
                        for (topic, p) in &t.parts {
                            let Ok(p) = p.parse::<i32>() else { continue };
                            match topics.iter_mut().find(|d| d.topic.0.as_str() == topic) {
                                Some(d) => d.partitions.push(p),
                                None => topics.push(
                                    describe_transactions_response::TopicData::default()
                                        .with_topic(s(topic.clone()).into())
                                        .with_partitions(vec![p]),
                                ),
                            }
                        }
                        st.with_transaction_state(s(t.state.to_string()))
                            .with_transaction_timeout_ms(t.timeout_ms)
                            .with_transaction_start_time_ms(t.start_ms)
                            .with_producer_id(t.producer.into())
                            .with_producer_epoch(t.epoch)
                            .with_topics(topics)
                    }
                },
            }
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

/// The states ListTransactions may filter by, as Kafka names them.
const STATES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

pub async fn list(ctx: &Ctx, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let unknown: Vec<_> = req.state_filters.iter().filter(|f| !STATES.contains(&f.as_str())).cloned().collect();
    let views = match views(ctx, None).await {
        Ok(v) => v,
        Err(c) => return ListTransactionsResponse::default().with_error_code(c),
    };
    let now_ms = (baton_core::engine::wall_micros() / 1000) as i64;
    let states = views
        .into_iter()
        .filter(|t| req.state_filters.is_empty() || req.state_filters.iter().any(|f| f.as_str() == t.state))
        .filter(|t| req.producer_id_filters.is_empty() || req.producer_id_filters.iter().any(|p| p.0 == t.producer))
        .filter(|t| req.duration_filter < 0 || (t.start_ms >= 0 && now_ms - t.start_ms >= req.duration_filter))
        .map(|t| {
            list_transactions_response::TransactionState::default()
                .with_transactional_id(s(t.tid).into())
                .with_producer_id(t.producer.into())
                .with_transaction_state(s(t.state.to_string()))
        })
        .collect();
    ListTransactionsResponse::default().with_unknown_state_filters(unknown).with_transaction_states(states)
}

/// Aborts transactions past their timeout. Driven by the door's clock on the member
/// that leads; the planner decides which are due by state-machine time.
pub async fn expire(ctx: &Ctx) {
    if !(ctx.topology().leads() && ctx.engine.is_writable()) {
        return;
    }
    match ctx.engine.kafka_txn(TxnOp::Expire).await {
        Ok(Ok(TxnReply::Expired(n))) if n > 0 => tracing::info!(aborted = n, "kafka: transactions aborted on timeout"),
        Ok(_) => {}
        Err(e) => tracing::debug!(error = %e, "kafka: transaction timeouts not checked"),
    }
}

/// The two config-altering APIs answer per resource with the same shape in two generated
/// types: one error for every resource of the request.
macro_rules! config_errors {
    ($resp:ident, $module:ident, $req:expr, $code:expr) => {
        $resp::default().with_responses(
            $req.resources
                .iter()
                .map(|c| {
                    $module::AlterConfigsResourceResponse::default()
                        .with_error_code($code)
                        .with_resource_type(c.resource_type)
                        .with_resource_name(c.resource_name.clone())
                })
                .collect(),
        )
    };
}

/// Error answers for the transaction and admin APIs (see `errors::error_response`).
pub fn error_response(req: &RequestKind, code: i16) -> Option<ResponseKind> {
    use RequestKind as Q;
    use ResponseKind as R;
    Some(match req {
        Q::AddPartitionsToTxn(r) => R::AddPartitionsToTxn(add_partitions_answer(r, code).with_error_code(code)),
        Q::AddOffsetsToTxn(_) => R::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(code)),
        Q::EndTxn(_) => R::EndTxn(
            EndTxnResponse::default().with_error_code(code).with_producer_id((-1).into()).with_producer_epoch(-1),
        ),
        Q::TxnOffsetCommit(r) => R::TxnOffsetCommit(txn_offsets_answer(r, code)),
        Q::DescribeTransactions(r) => R::DescribeTransactions(
            DescribeTransactionsResponse::default().with_transaction_states(
                r.transactional_ids
                    .iter()
                    .map(|t| {
                        describe_transactions_response::TransactionState::default()
                            .with_transactional_id(t.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::ListTransactions(_) => R::ListTransactions(ListTransactionsResponse::default().with_error_code(code)),
        Q::DescribeCluster(_) => R::DescribeCluster(DescribeClusterResponse::default().with_error_code(code)),
        Q::OffsetDelete(_) => R::OffsetDelete(OffsetDeleteResponse::default().with_error_code(code)),
        Q::AlterConfigs(r) => R::AlterConfigs(config_errors!(AlterConfigsResponse, alter_configs_response, r, code)),
        Q::IncrementalAlterConfigs(r) => R::IncrementalAlterConfigs(config_errors!(
            IncrementalAlterConfigsResponse,
            incremental_alter_configs_response,
            r,
            code
        )),
        Q::DeleteRecords(r) => R::DeleteRecords(
            DeleteRecordsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        delete_records_response::DeleteRecordsTopicResult::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        delete_records_response::DeleteRecordsPartitionResult::default()
                                            .with_partition_index(p.partition_index)
                                            .with_low_watermark(-1)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        _ => return crate::share::error_response(req, code),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member that does not lead answers every resource of a config change with the code.
    #[test]
    fn config_changes_get_one_error_per_resource() {
        let res = |n: &str| {
            alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(kafka_protocol::protocol::StrBytes::from_string(n.to_string()))
        };
        let req = RequestKind::AlterConfigs(AlterConfigsRequest::default().with_resources(vec![res("a"), res("b")]));
        let Some(ResponseKind::AlterConfigs(r)) = error_response(&req, 41) else { panic!("no answer") };
        let got: Vec<_> = r.responses.iter().map(|x| (x.resource_name.to_string(), x.error_code)).collect();
        assert_eq!(got, vec![("a".to_string(), 41), ("b".to_string(), 41)]);
        let inc = RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default().with_resource_type(2),
        ]));
        let Some(ResponseKind::IncrementalAlterConfigs(r)) = error_response(&inc, 41) else { panic!("no answer") };
        assert_eq!(r.responses.iter().map(|x| x.error_code).collect::<Vec<_>>(), vec![41]);
    }
}
