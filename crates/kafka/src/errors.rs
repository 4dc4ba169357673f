//! Kafka error codes: the ones we answer with, the mapping from the engine's
//! errors, and whole error responses for a request we decoded but will not
//! serve (a version outside the table), each shaped the way that API reports
//! errors (top level, per topic, per partition, per group).

use baton_core::{CoreError, ErrorKind};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::*;

pub const NONE: i16 = 0;
pub const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
pub const OFFSET_OUT_OF_RANGE: i16 = E::OffsetOutOfRange.code();
pub const CORRUPT_MESSAGE: i16 = E::CorruptMessage.code();
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
pub const MESSAGE_TOO_LARGE: i16 = E::MessageTooLarge.code();
pub const INVALID_TOPIC: i16 = E::InvalidTopicException.code();
pub const INVALID_REQUIRED_ACKS: i16 = E::InvalidRequiredAcks.code();
pub const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = E::InconsistentGroupProtocol.code();
pub const INVALID_GROUP_ID: i16 = E::InvalidGroupId.code();
pub const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
pub const INVALID_SESSION_TIMEOUT: i16 = E::InvalidSessionTimeout.code();
pub const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
pub const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
pub const TOPIC_ALREADY_EXISTS: i16 = E::TopicAlreadyExists.code();
pub const INVALID_PARTITIONS: i16 = E::InvalidPartitions.code();
pub const INVALID_REPLICATION_FACTOR: i16 = E::InvalidReplicationFactor.code();
pub const INVALID_REQUEST: i16 = E::InvalidRequest.code();
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = E::OutOfOrderSequenceNumber.code();
pub const INVALID_PRODUCER_EPOCH: i16 = E::InvalidProducerEpoch.code();
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = E::TransactionalIdAuthorizationFailed.code();
pub const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
pub const NON_EMPTY_GROUP: i16 = E::NonEmptyGroup.code();
pub const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();
pub const FETCH_SESSION_ID_NOT_FOUND: i16 = E::FetchSessionIdNotFound.code();
pub const INVALID_FETCH_SESSION_EPOCH: i16 = E::InvalidFetchSessionEpoch.code();
pub const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();
pub const FENCED_INSTANCE_ID: i16 = E::FencedInstanceId.code();
pub const INVALID_RECORD: i16 = E::InvalidRecord.code();
pub const UNKNOWN_PRODUCER_ID: i16 = E::UnknownProducerId.code();
pub const GROUP_MAX_SIZE_REACHED: i16 = E::GroupMaxSizeReached.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
pub const NOT_COORDINATOR: i16 = E::NotCoordinator.code();
pub const NOT_CONTROLLER: i16 = E::NotController.code();
pub const LEADER_NOT_AVAILABLE: i16 = E::LeaderNotAvailable.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
pub const UNKNOWN_TOPIC_ID: i16 = E::UnknownTopicId.code();
pub const FENCED_MEMBER_EPOCH: i16 = E::FencedMemberEpoch.code();
pub const INVALID_RECORD_STATE: i16 = E::InvalidRecordState.code();
pub const SHARE_SESSION_NOT_FOUND: i16 = E::ShareSessionNotFound.code();
pub const INVALID_SHARE_SESSION_EPOCH: i16 = E::InvalidShareSessionEpoch.code();
pub const SHARE_SESSION_LIMIT_REACHED: i16 = E::ShareSessionLimitReached.code();

/// The Kafka code for an engine error.
pub fn code_of(e: &CoreError) -> i16 {
    match (e.kind, e.code) {
        // A cluster member that does not lead (or stopped leading mid-request): the client
        // refreshes its metadata and goes to the leader.
        (ErrorKind::Unavailable, "not_leader") => NOT_LEADER_OR_FOLLOWER,
        // The WAL failed or the engine is stopping: retriable in every client.
        (ErrorKind::Unavailable, _) => KAFKA_STORAGE_ERROR,
        // The planner's own refusal of the queue-mode group (I6).
        (_, "reserved_group") => INVALID_GROUP_ID,
        (ErrorKind::NotFound, _) => UNKNOWN_TOPIC_OR_PARTITION,
        (_, "invalid_topic" | "invalid_name" | "invalid_queue") => INVALID_TOPIC,
        (ErrorKind::TooLarge, _) => MESSAGE_TOO_LARGE,
        (ErrorKind::BadRequest, "offset_out_of_range") => OFFSET_OUT_OF_RANGE,
        (ErrorKind::BadRequest, _) => INVALID_REQUEST,
        (ErrorKind::Conflict, _) => UNKNOWN_SERVER_ERROR,
        // A bound of the engine (too many groups, the planner's queue full): retriable.
        (ErrorKind::Overloaded, _) => E::ThrottlingQuotaExceeded.code(),
    }
}

/// An answer to `req` that carries `code` everywhere the API has room for an
/// error. `None` for APIs outside the table (the caller closes instead).
pub fn error_response(req: &RequestKind, version: i16, code: i16) -> Option<ResponseKind> {
    use RequestKind as Q;
    use ResponseKind as R;
    Some(match req {
        Q::Produce(r) => R::Produce(
            ProduceResponse::default().with_responses(
                r.topic_data
                    .iter()
                    .map(|t| {
                        produce_response::TopicProduceResponse::default()
                            .with_name(t.name.clone())
                            .with_topic_id(t.topic_id)
                            .with_partition_responses(
                                t.partition_data
                                    .iter()
                                    .map(|p| {
                                        produce_response::PartitionProduceResponse::default()
                                            .with_index(p.index)
                                            .with_error_code(code)
                                            .with_base_offset(-1)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        Q::Fetch(r) if version < 7 => R::Fetch(
            FetchResponse::default().with_responses(
                r.topics
                    .iter()
                    .map(|t| {
                        fetch_response::FetchableTopicResponse::default().with_topic(t.topic.clone()).with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    fetch_response::PartitionData::default()
                                        .with_partition_index(p.partition)
                                        .with_error_code(code)
                                        .with_high_watermark(-1)
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            ),
        ),
        Q::Fetch(_) => R::Fetch(FetchResponse::default().with_error_code(code)),
        Q::ListOffsets(r) => R::ListOffsets(
            ListOffsetsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        list_offsets_response::ListOffsetsTopicResponse::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        list_offsets_response::ListOffsetsPartitionResponse::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        Q::Metadata(r) => R::Metadata(
            MetadataResponse::default().with_error_code(if version >= 13 { code } else { NONE }).with_topics(
                r.topics
                    .iter()
                    .flatten()
                    .map(|t| {
                        metadata_response::MetadataResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::OffsetCommit(r) => R::OffsetCommit(
            OffsetCommitResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        offset_commit_response::OffsetCommitResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        offset_commit_response::OffsetCommitResponsePartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        Q::OffsetFetch(r) if version < 2 => R::OffsetFetch(
            OffsetFetchResponse::default().with_topics(
                r.topics
                    .iter()
                    .flatten()
                    .map(|t| {
                        offset_fetch_response::OffsetFetchResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(
                                t.partition_indexes
                                    .iter()
                                    .map(|p| {
                                        offset_fetch_response::OffsetFetchResponsePartition::default()
                                            .with_partition_index(*p)
                                            .with_committed_offset(-1)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            ),
        ),
        Q::OffsetFetch(_) if version < 8 => R::OffsetFetch(OffsetFetchResponse::default().with_error_code(code)),
        Q::OffsetFetch(r) => R::OffsetFetch(
            OffsetFetchResponse::default().with_groups(
                r.groups
                    .iter()
                    .map(|g| {
                        offset_fetch_response::OffsetFetchResponseGroup::default()
                            .with_group_id(g.group_id.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::FindCoordinator(_) if version < 4 => R::FindCoordinator(
            FindCoordinatorResponse::default().with_error_code(code).with_node_id((-1).into()).with_port(-1),
        ),
        Q::FindCoordinator(r) => R::FindCoordinator(
            FindCoordinatorResponse::default().with_coordinators(
                r.coordinator_keys
                    .iter()
                    .map(|k| {
                        find_coordinator_response::Coordinator::default()
                            .with_key(k.clone())
                            .with_node_id((-1).into())
                            .with_port(-1)
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::JoinGroup(_) => R::JoinGroup(JoinGroupResponse::default().with_error_code(code)),
        Q::Heartbeat(_) => R::Heartbeat(HeartbeatResponse::default().with_error_code(code)),
        Q::LeaveGroup(_) => R::LeaveGroup(LeaveGroupResponse::default().with_error_code(code)),
        Q::SyncGroup(_) => R::SyncGroup(SyncGroupResponse::default().with_error_code(code)),
        Q::DescribeGroups(r) => R::DescribeGroups(
            DescribeGroupsResponse::default().with_groups(
                r.groups
                    .iter()
                    .map(|g| {
                        describe_groups_response::DescribedGroup::default()
                            .with_group_id(g.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::ListGroups(_) => R::ListGroups(ListGroupsResponse::default().with_error_code(code)),
        Q::CreateTopics(r) => R::CreateTopics(
            CreateTopicsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        create_topics_response::CreatableTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::DeleteTopics(r) => R::DeleteTopics(
            DeleteTopicsResponse::default().with_responses(
                r.topic_names
                    .iter()
                    .map(|n| Some(n.clone()))
                    .chain(r.topics.iter().map(|t| t.name.clone()))
                    .map(|n| delete_topics_response::DeletableTopicResult::default().with_name(n).with_error_code(code))
                    .collect(),
            ),
        ),
        Q::CreatePartitions(r) => R::CreatePartitions(
            CreatePartitionsResponse::default().with_results(
                r.topics
                    .iter()
                    .map(|t| {
                        create_partitions_response::CreatePartitionsTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::InitProducerId(_) => R::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(code)
                .with_producer_id((-1).into())
                .with_producer_epoch(-1),
        ),
        Q::DescribeConfigs(r) => R::DescribeConfigs(
            DescribeConfigsResponse::default().with_results(
                r.resources
                    .iter()
                    .map(|c| {
                        describe_configs_response::DescribeConfigsResult::default()
                            .with_resource_type(c.resource_type)
                            .with_resource_name(c.resource_name.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        Q::DeleteGroups(r) => R::DeleteGroups(
            DeleteGroupsResponse::default().with_results(
                r.groups_names
                    .iter()
                    .map(|g| {
                        delete_groups_response::DeletableGroupResult::default()
                            .with_group_id(g.clone())
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        ),
        _ => return crate::txn::error_response(req, code),
    })
}
