//! `limit` and `offset` of the views that list queues or a queue's partitions
//! (`/api/v1/resources/queues`, `/api/v1/status/queues[/{queue}]`, the depth report). Owns
//! the page bounds; must never let one answer list more than [`MAX_PAGE`] items (a queue
//! of 200,000 partitions answered 24 MB in one body before).

use crate::error::ApiError;
use serde::Deserialize;
use serde_json::{json, Value};

/// Items a view lists when the request names no `limit`.
pub const DEFAULT_PAGE: usize = 1000;
/// Most items one view lists.
pub const MAX_PAGE: usize = 10_000;

/// Read apart from a view's other parameters (serde's `flatten` cannot read numbers out of
/// a query string).
#[derive(Deserialize, Default, Clone, Copy)]
pub struct Page {
    limit: Option<usize>,
    offset: Option<usize>,
}

impl Page {
    pub fn from_query(
        q: Result<axum::extract::Query<Page>, axum::extract::rejection::QueryRejection>,
    ) -> Result<Page, ApiError> {
        let axum::extract::Query(p) = q.map_err(|e| ApiError::bad("invalid_query", e.body_text()))?;
        match p.limit {
            Some(0) => Err(ApiError::bad("invalid_limit", format!("limit is 1 to {MAX_PAGE}"))),
            Some(n) if n > MAX_PAGE => {
                Err(ApiError::bad("invalid_limit", format!("limit is 1 to {MAX_PAGE}, not {n}")))
            }
            _ => Ok(p),
        }
    }

    /// The items of this page, and the fields that describe it (`total`, `limit`, `offset`,
    /// `next`: the offset of the next page, or null at the end).
    pub fn cut<T>(&self, items: Vec<T>) -> (Vec<T>, Value) {
        let total = items.len();
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        let offset = self.offset.unwrap_or(0).min(total);
        let end = offset.saturating_add(limit).min(total);
        let next = (end < total).then_some(end);
        let page: Vec<T> = items.into_iter().skip(offset).take(end - offset).collect();
        (page, json!({"total": total, "limit": limit, "offset": offset, "next": next}))
    }
}
