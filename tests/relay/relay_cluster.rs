//! Tandem's scenario 8, second half, on real processes: the outbox relay publishing into
//! a three-member Baton cluster (through a member that does not lead, which forwards) while
//! the leader is SIGKILLed mid-run. The bucket locks and their guards live in the
//! replicated state, a push whose answer was lost is retried and answered `duplicate` when
//! it had committed, and every event ends in Baton once and in order. And a relay given
//! every member (`--to A,B,C`) passes over the one it used when that one dies.

use crate::common;
use crate::relay_util;

use common::cluster::{leader, wait_known, Cluster};
use relay_util::*;
use std::time::Duration;

/// A PostgreSQL with the outbox, a runtime, a three-member cluster, an HTTP client, and the
/// leader's index once every member knows it.
fn setup() -> (Pg, tokio::runtime::Runtime, Cluster, reqwest::Client, usize) {
    let pg = Pg::start();
    init(&pg);
    let rt = rt();
    let cluster = Cluster::start(&[]);
    let c = common::load::client();
    let l = rt.block_on(async {
        let l = leader(&c, &cluster, Duration::from_secs(20)).await;
        wait_known(&c, &cluster, l).await;
        l
    });
    (pg, rt, cluster, c, l)
}

#[test]
fn a_killed_baton_leader_loses_and_doubles_nothing() {
    let (pg, rt, mut cluster, c, l) = setup();
    // Neither the leader nor the member that will serve the reads: it forwards throughout.
    let f = (l + 1) % 3;
    let relay = Relay::start_url(&pg, &cluster.members[f].url(""), "r1", &["--lease-secs", "4"]);
    rt.block_on(async {
        relay.wait_buckets(64).await;
        let inserting = insert_rounds(&pg, 30, Duration::from_millis(60));
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(relay.metric("baton_relay_delivered_total").await > 0.0, "nothing delivered before the kill");
        cluster.kill(l);
        inserting.await.unwrap();
        let pgc = pg.client().await;
        wait_delivered(&pgc, 600, Duration::from_secs(60), &|| relay.log()).await;
        let now = leader(&c, &cluster, Duration::from_secs(20)).await;
        assert_ne!(now, l);
        check_in_baton(&pgc, &cluster.members[now].url("")).await;
        assert_eq!(relay.metric("baton_relay_parked_total").await, 0.0, "{}", relay.log());
    });
}

/// `--to` names all three members, a follower first; that follower is SIGKILLed mid-run.
/// The relay moves on to the next member (a push whose answer was lost is re-sent there
/// and answered `duplicate` if it had committed) and every event ends in Baton once and in
/// order. With one URL the relay would wait for the dead member to come back.
#[test]
fn a_dead_member_in_the_to_list_is_passed_over() {
    let (pg, rt, mut cluster, c, l) = setup();
    let f = (l + 1) % 3;
    let to: Vec<String> = [f, (l + 2) % 3, l].iter().map(|&i| cluster.members[i].url("")).collect();
    let relay = Relay::start_url(&pg, &to.join(","), "r1", &["--lease-secs", "4"]);
    rt.block_on(async {
        relay.wait_buckets(64).await;
        let inserting = insert_rounds(&pg, 30, Duration::from_millis(60));
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(relay.metric("baton_relay_delivered_total").await > 0.0, "nothing delivered before the kill");
        assert_eq!(relay.metric("baton_relay_target_switches_total").await, 0.0);
        cluster.kill(f);
        inserting.await.unwrap();
        let pgc = pg.client().await;
        wait_delivered(&pgc, 600, Duration::from_secs(60), &|| relay.log()).await;
        assert!(relay.metric("baton_relay_target_switches_total").await >= 1.0, "{}", relay.log());
        let now = leader(&c, &cluster, Duration::from_secs(20)).await;
        check_in_baton(&pgc, &cluster.members[now].url("")).await;
        assert_eq!(relay.metric("baton_relay_parked_total").await, 0.0, "{}", relay.log());
        // The operator's view goes past the dead member too.
        let st: serde_json::Value =
            serde_json::from_str(relay_cli(&pg, &["status", "--to", &to.join(",")]).trim()).unwrap();
        assert_eq!(st["bucketHolders"].as_object().map(|o| o.len()), Some(64), "{st}");
    });
}

/// Kafka mode into a three-member cluster's Kafka doors with every member in `--to-kafka`, a
/// follower first. That member is SIGKILLed, then the relay is kill -9'd and started again:
/// the new process finds its first broker dead and bootstraps from the next (metadata,
/// coordinators), takes its buckets back, settles and goes on. Every event once and in
/// order for a read_committed consumer. With one broker it would wait for the dead one.
#[test]
fn kafka_mode_bootstraps_past_a_dead_broker() {
    let (pg, rt, mut cluster, _c, l) = setup();
    let f = (l + 1) % 3;
    let brokers: Vec<String> =
        [f, (l + 2) % 3, l].iter().map(|&i| format!("127.0.0.1:{}", cluster.members[i].kafka)).collect();
    let brokers = brokers.join(",");
    let mut relay = Relay::start_kafka(&pg, &brokers, "r1", &["--lease-secs", "4"]);
    rt.block_on(async {
        relay.wait_buckets(64).await;
        let inserting = insert_rounds(&pg, 30, Duration::from_millis(60));
        // The first rounds take the 64 buckets (an InitProducerId each) and make the topics.
        relay.wait_delivered_some(Duration::from_secs(30)).await;
        cluster.kill(f);
        relay.kill9();
        let again = Relay::start_kafka(&pg, &brokers, "r1", &["--lease-secs", "4"]);
        inserting.await.unwrap();
        let pgc = pg.client().await;
        wait_delivered(&pgc, 600, Duration::from_secs(90), &|| again.log()).await;
        assert!(again.log().contains("trying the next --to-kafka broker"), "{}", again.log());
        check_topic(&pgc, &format!("127.0.0.1:{}", cluster.members[l].kafka), "outbox-order").await;
    });
}
