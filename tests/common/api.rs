//! A small JSON client over a started server, shared by the HTTP suites.
#![allow(dead_code)]

use super::Server;
use serde_json::Value;
use std::time::Duration;

pub struct Api {
    pub s: Server,
    pub c: reqwest::Client,
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("http client")
}

/// A body as JSON; `Null` for an empty body. Panics on a non-JSON body, since
/// every answer of the API but /metrics is JSON.
pub async fn read(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let bytes = r.bytes().await.expect("read body");
    if bytes.is_empty() {
        return (status, Value::Null);
    }
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (status, v)
}

impl Api {
    pub fn start() -> Api {
        Self::with(&[])
    }

    pub fn with(args: &[&str]) -> Api {
        Api { s: Server::start_with(args), c: client() }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        read(self.c.get(self.s.url(path)).send().await.expect("GET")).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        read(self.c.post(self.s.url(path)).json(&body).send().await.expect("POST")).await
    }
}
