//! The operator's commands: `status` (counts, lag, bucket holders: Baton
//! locks with --to, else Kafka mode's PostgreSQL leases), `parked`
//! (list) and `release` (parked back to pending). Must never change a row
//! that is not parked, nor touch Baton beyond reading lock holders.

use crate::lease::Leases;
use crate::pg::Pg;
use crate::schema::{self, Names};
use crate::{Error, PgArgs, ReleaseArgs, StatusArgs};
use serde_json::json;

pub async fn status(a: &StatusArgs) -> Result<(), Error> {
    let names = Names::new(&a.pg.table)?;
    let pg = Pg::new(&a.pg)?.connect().await?;
    let r = pg
        .query_one(
            &format!(
                "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'parked'), \
                 count(*) FILTER (WHERE status = 'delivered'), \
                 EXTRACT(EPOCH FROM now() - min(created_at) FILTER (WHERE status = 'pending'))::float8 FROM {}",
                names.table
            ),
            &[],
        )
        .await?;
    let buckets = schema::buckets(&pg, &names).await?;
    let mut out = json!({
        "table": names.table, "buckets": buckets,
        "pending": r.get::<_, i64>(0), "parked": r.get::<_, i64>(1), "delivered": r.get::<_, i64>(2),
        "oldestPendingAgeSeconds": r.get::<_, Option<f64>>(3),
    });
    if let Some(to) = &a.to {
        let m = std::sync::Arc::new(crate::metrics::Metrics::default());
        let c = crate::targets::Targets::new(to, std::time::Duration::from_secs(10), m)?;
        // Each member in turn until one answers (a failed call moves on to the next).
        let mut tries = c.members();
        out["bucketHolders"] = loop {
            tries -= 1;
            match Leases::holders(&c, buckets).await {
                Ok(h) => break h,
                Err(e) if tries == 0 => return Err(e),
                Err(_) => {}
            }
        };
    } else if let Ok(h) = crate::pg_lease::PgLeases::holders(&pg, &names).await {
        // Kafka mode keeps its leases in PostgreSQL: the live holders, if any.
        if h.as_object().is_some_and(|o| !o.is_empty()) {
            out["bucketHolders"] = h;
        }
    }
    println!("{out}");
    Ok(())
}

pub async fn parked(a: &PgArgs) -> Result<(), Error> {
    let names = Names::new(&a.table)?;
    let pg = Pg::new(a)?.connect().await?;
    let rows = pg
        .query(
            &format!(
                "SELECT id, aggregate_type, aggregate_id, event_type, attempts, last_error, created_at::text \
                 FROM {} WHERE status = 'parked' ORDER BY id",
                names.table
            ),
            &[],
        )
        .await?;
    for r in rows {
        let v = json!({"id": r.get::<_, i64>(0), "aggregateType": r.get::<_, String>(1),
            "aggregateId": r.get::<_, String>(2), "eventType": r.get::<_, String>(3),
            "attempts": r.get::<_, i32>(4), "lastError": r.get::<_, Option<String>>(5),
            "createdAt": r.get::<_, String>(6)});
        println!("{v}");
    }
    Ok(())
}

pub async fn release(a: &ReleaseArgs) -> Result<(), Error> {
    let names = Names::new(&a.pg.table)?;
    let pg = Pg::new(&a.pg)?.connect().await?;
    let sql = format!(
        "UPDATE {} SET status = 'pending', attempts = 0, next_attempt_at = NULL, last_error = NULL \
         WHERE status = 'parked' AND ($1::bigint IS NULL OR id = $1)",
        names.table
    );
    let id: Option<i64> = if a.all { None } else { a.id };
    let n = pg.execute(&sql, &[&id]).await?;
    println!("{}", json!({ "released": n }));
    Ok(())
}
