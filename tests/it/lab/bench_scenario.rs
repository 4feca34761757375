//! The lab bench's scenario at a small size (`benches/lab_support`), on SQLite and PostgreSQL,
//! so the bench's seeding and self-checks are known to hold before anyone runs it.

#[path = "../../../benches/lab_support/mod.rs"]
mod lab_support;

use crate::support::postgres::ScratchDb;

#[tokio::test]
async fn bench_scenario_checks_hold_on_sqlite() {
    let s = lab_support::seed(None, 2_000).await;
    // 2,000 orders: a quarter walk-in, a quarter of those in the two statuses, plus the template.
    assert_eq!(s.matching, 127);
    assert_eq!(lab_support::list_checked(&s).await, 27);
    let expected = lab_support::area_expected(&s);
    assert!(lab_support::area_checked(&s, &expected).await > 100);
}

#[tokio::test]
async fn bench_scenario_checks_hold_on_postgres() {
    let db = ScratchDb::create("lab_bench").await;
    let s = lab_support::seed(Some(&db.url), 2_000).await;
    assert_eq!(lab_support::list_checked(&s).await, 27);
    s.state.meta.close().await;
    db.drop_db().await;
}
