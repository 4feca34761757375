//! Engine integration tests: golden query files, a differential test against a simple
//! row-by-row reference evaluator, and robustness over generated bodies and WHERE strings.

#[path = "engine/data.rs"]
mod data;
#[path = "engine/golden.rs"]
mod golden;

#[tokio::test]
async fn golden_query_files_match_their_snapshots() {
    golden::check_all().await;
}
