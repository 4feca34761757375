//! Lab bench (criterion, seeded, self-checking): `cargo bench` (module `lab`).
//!
//! Scenarios (issue 17's performance targets):
//! - `GET /v3/orders, 100,000 orders, two filters and a sort, SQLite` and `..., PostgreSQL`:
//!   page 3 of 50 of a team's orders filtered on two low-level statuses and one method, sorted
//!   by patient name (target: at most 20 ms per page);
//! - `area info, radius 100, ZIP 10001`: every lab's centres within 100 miles of Manhattan
//!   (target: at most 1 ms).
//!
//! Each iteration sends one request through the whole router, built once as a server builds it
//! at start-up (`oneshot` on a clone: key check, query parsing, SQL, rendering), and asserts its
//! answer (total, page length, order, filters; the area counts equal the library's own, worked
//! out once before the timing). PostgreSQL runs on `WEARHOUSE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) in a scratch database dropped afterwards,
//! vacuumed and analysed after the seeding as autovacuum would have.

#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use crate::lab_support;

use criterion::{Criterion, criterion_group};
use sqlx::Connection;

const ORDERS: usize = 100_000;

fn admin_url() -> String {
    std::env::var("WEARHOUSE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

async fn scratch_postgres() -> (String, String) {
    let admin = admin_url();
    let name = format!("lab_bench_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
    (format!("{base}/{name}"), name)
}

async fn drop_postgres(name: &str) {
    let mut conn = sqlx::PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .unwrap();
}

fn orders(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("lab");
    let sqlite = rt.block_on(lab_support::seed(None, ORDERS));
    group.bench_function(
        "GET /v3/orders, 100,000 orders, two filters and a sort, SQLite",
        |b| b.iter(|| assert_eq!(rt.block_on(lab_support::list_checked(&sqlite)), 50)),
    );
    let expected = lab_support::area_expected(&sqlite);
    group.bench_function("area info, radius 100, ZIP 10001", |b| {
        b.iter(|| rt.block_on(lab_support::area_checked(&sqlite, &expected)))
    });
    let (url, name) = rt.block_on(scratch_postgres());
    let postgres = rt.block_on(lab_support::seed(Some(&url), ORDERS));
    // What autovacuum does within a minute of a bulk load, and long since on a team whose
    // 100,000 orders came one at a time: statistics for the planner and a visibility map for
    // index-only scans. Right after the seeding, without it, PostgreSQL plans a heap fetch per
    // matching order (about 23 ms here).
    rt.block_on(async {
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query("VACUUM ANALYZE lab_orders")
            .execute(&mut conn)
            .await
            .unwrap();
    });
    group.bench_function(
        "GET /v3/orders, 100,000 orders, two filters and a sort, PostgreSQL",
        |b| b.iter(|| assert_eq!(rt.block_on(lab_support::list_checked(&postgres)), 50)),
    );
    group.finish();
    rt.block_on(async {
        postgres.state.meta.close().await;
        drop_postgres(&name).await;
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = orders
}
