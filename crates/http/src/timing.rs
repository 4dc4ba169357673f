//! Server-side duration of every HTTP request, by method and route template,
//! for `/metrics` (`baton_http_request_duration_seconds`).
//!
//! Owns only the histograms. Measured from the moment the router hands the
//! request to its handler until the handler's answer is ready (a long poll's
//! wait included), so it shows where a client's latency is spent: a client
//! seeing much more than this is waiting on the network or on itself. Must
//! never label by anything a client chooses freely (queue names, ids): the
//! route template bounds the number of series.

use crate::App;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use baton_log::Histogram;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Seconds: from a fast in-memory answer (~50 µs) to a long poll's whole wait.
const BOUNDS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

type ByRoute = HashMap<Box<str>, Arc<Histogram>>;

#[derive(Default)]
pub struct RequestTimes(RwLock<HashMap<Method, ByRoute>>);

impl RequestTimes {
    fn histogram(&self, method: &Method, route: &str) -> Arc<Histogram> {
        if let Some(h) = self.0.read().unwrap_or_else(|e| e.into_inner()).get(method).and_then(|m| m.get(route)) {
            return h.clone();
        }
        let mut w = self.0.write().unwrap_or_else(|e| e.into_inner());
        w.entry(method.clone())
            .or_default()
            .entry(route.into())
            .or_insert_with(|| Arc::new(Histogram::new(BOUNDS)))
            .clone()
    }

    /// Every (method, route, histogram) seen so far, sorted for a stable scrape.
    pub fn snapshot(&self) -> Vec<(String, String, Arc<Histogram>)> {
        let r = self.0.read().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<_> = r
            .iter()
            .flat_map(|(m, routes)| routes.iter().map(move |(p, h)| (m.to_string(), p.to_string(), h.clone())))
            .collect();
        out.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        out
    }
}

impl std::fmt::Debug for RequestTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestTimes")
    }
}

/// Route-layer middleware: only matched routes reach it, so `MatchedPath` is set.
pub async fn time_request(State(app): State<App>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let t0 = Instant::now();
    let res = next.run(req).await;
    if let Some(route) = route {
        app.times.histogram(&method, route.as_str()).observe(t0.elapsed().as_secs_f64());
    }
    res
}
