//! The Baton members a relay publishes through (`--to URL[,URL...]`, D63): one at a
//! time, the next one after a call whose outcome the current one could not give (a
//! transport failure or a 5xx: down, cut off from the leader, between leaders). Owns
//! only which member is current. Must never resend a call itself: a push whose outcome
//! is unknown is the caller's to retry (deduplicated by its transactionId and guarded by
//! the bucket lease), and a locks call's errors are the lease loop's to handle.

use crate::metrics::Metrics;
use baton_client::{Client, Options, TxnOutcome};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most members `--to` may name (a cluster is a handful; a long list is a mistake).
pub const MAX_TARGETS: usize = 16;

pub struct Targets {
    clients: Vec<Client>,
    at: AtomicUsize,
    m: Arc<Metrics>,
}

/// The URLs of a `--to` list: comma-separated, each `http://host:port`, at least one and
/// at most [`MAX_TARGETS`], none twice.
pub fn parse(list: &str) -> Result<Vec<String>, crate::Error> {
    let urls: Vec<String> = list.split(',').map(|u| u.trim().trim_end_matches('/').to_string()).collect();
    if urls.iter().any(String::is_empty) {
        return Err(format!("--to {list:?}: an empty URL in the list").into());
    }
    if urls.len() > MAX_TARGETS {
        return Err(format!("--to names {} URLs; at most {MAX_TARGETS}", urls.len()).into());
    }
    for (i, u) in urls.iter().enumerate() {
        if urls[..i].contains(u) {
            return Err(format!("--to names {u} twice").into());
        }
    }
    Ok(urls)
}

/// `--to` checked at start (a bad list is exit 2 naming the flag, not a failure after
/// connecting to PostgreSQL): the list as given.
pub fn checked(list: &str) -> Result<String, String> {
    let urls = parse(list).map_err(|e| e.to_string())?;
    for u in &urls {
        Client::new(u, 1).map_err(|e| e.to_string())?;
    }
    Ok(list.to_string())
}

impl Targets {
    pub fn new(list: &str, timeout: Duration, m: Arc<Metrics>) -> Result<Targets, crate::Error> {
        let clients = parse(list)?
            .iter()
            .map(|u| Client::with_options(u, Options { timeout, ..Default::default() }))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Targets { clients, at: AtomicUsize::new(0), m })
    }

    /// The member in use and its index.
    fn pick(&self) -> (usize, &Client) {
        let i = self.at.load(Ordering::Relaxed) % self.clients.len();
        (i, &self.clients[i])
    }

    /// How many members the list names.
    pub fn members(&self) -> usize {
        self.clients.len()
    }

    #[cfg(test)]
    fn current_url(&self) -> &str {
        self.pick().1.base()
    }

    /// Member `i` could not answer: the next call goes to the one after it. Concurrent
    /// failures of one member move on once (a compare-and-swap from `i`).
    fn passed_over(&self, i: usize, why: &str) {
        let n = self.clients.len();
        if n > 1 && self.at.compare_exchange(i, (i + 1) % n, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.m.target_switches.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "baton relay: {} did not answer ({why}); now {}",
                self.clients[i].base(),
                self.clients[(i + 1) % n].base()
            );
        }
    }

    pub async fn transaction(&self, body: &Value, timeout: Duration) -> TxnOutcome {
        let (i, c) = self.pick();
        let out = c.transaction_raw(body, timeout).await;
        if let TxnOutcome::Unknown(e) = &out {
            self.passed_over(i, e);
        }
        out
    }

    pub async fn locks(&self, body: &Value) -> Result<Value, baton_client::Error> {
        let (i, c) = self.pick();
        let out = c.locks(body).await;
        match &out {
            Err(e @ baton_client::Error::Transport(_)) => self.passed_over(i, &e.to_string()),
            Err(e @ baton_client::Error::Api { status, .. }) if *status >= 500 => self.passed_over(i, &e.to_string()),
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_to_list_is_checked_whole() {
        assert_eq!(parse("http://a:1").unwrap(), vec!["http://a:1"]);
        assert_eq!(parse("http://a:1/, http://b:2").unwrap(), vec!["http://a:1", "http://b:2"]);
        assert!(parse("http://a:1,,http://b:2").unwrap_err().to_string().contains("empty URL"));
        assert!(parse("http://a:1,http://a:1/").unwrap_err().to_string().contains("twice"));
        let many: Vec<String> = (0..17).map(|i| format!("http://h:{i}")).collect();
        assert!(parse(&many.join(",")).unwrap_err().to_string().contains("at most 16"));
    }

    #[tokio::test]
    async fn a_member_that_does_not_answer_is_passed_over_once() {
        // Two closed ports: every call fails at connect.
        let ports: Vec<u16> =
            (0..2).map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()).collect();
        let list = format!("http://127.0.0.1:{},http://127.0.0.1:{}", ports[0], ports[1]);
        let m = Arc::new(Metrics::default());
        let t = Targets::new(&list, Duration::from_secs(2), m.clone()).unwrap();
        assert!(t.current_url().ends_with(&ports[0].to_string()));
        let out = t.transaction(&serde_json::json!({"operations": []}), Duration::from_secs(2)).await;
        assert!(matches!(out, TxnOutcome::Unknown(_)), "{out:?}");
        assert!(t.current_url().ends_with(&ports[1].to_string()));
        assert!(t.locks(&serde_json::json!({"operations": []})).await.is_err());
        assert!(t.current_url().ends_with(&ports[0].to_string()));
        assert_eq!(m.target_switches.load(Ordering::Relaxed), 2);
        // A stale failure report (member 1 already passed over) moves nothing.
        t.passed_over(1, "late");
        assert!(t.current_url().ends_with(&ports[0].to_string()));
        assert_eq!(m.target_switches.load(Ordering::Relaxed), 2);
    }
}
