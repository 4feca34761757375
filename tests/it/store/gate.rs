//! Integration tests of gated writes (`HealthStore::write_push_gated`): the data is encoded and
//! fsynced at once but made visible only when the caller opens the gate, and a gate dropped
//! unopened leaves nothing behind. A push makes its events' plan durable behind this gate.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::store::support as store_support;

use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use store_support::{DAY, T0, batch, heartrate, ids, open, row};
use uuid::Uuid;
use wearhouse::schema::{Dataset, Table};
use wearhouse::store::health::{HealthStore, StoreError, StoreOptions, gate};

/// Rows of `dataset` a read finds.
async fn rows(store: &HealthStore, team: Uuid, user: Uuid, dataset: Dataset) -> usize {
    store
        .read(team, user, dataset, None)
        .await
        .unwrap()
        .iter()
        .map(RecordBatch::num_rows)
        .sum()
}

/// Every file under the store's root, relative to it.
fn all_files(store: &HealthStore) -> Vec<String> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    let root = store.root().expect("a local store");
    walk(root, root, &mut out);
    out.sort();
    out
}

fn one_dataset() -> Vec<(Dataset, RecordBatch)> {
    let hr = heartrate();
    vec![(hr, batch(hr, &[row(T0, "", 61.0), row(T0 + DAY, "", 62.0)]))]
}

fn two_datasets() -> Vec<(Dataset, RecordBatch)> {
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    vec![
        (sleep, batch(sleep, &[row(T0, "night", 0.9)])),
        (hr, batch(hr, &[row(T0, "", 61.0)])),
    ]
}

/// Starts a gated push, checks nothing of it is visible while the gate stays closed, opens it
/// and checks everything is.
async fn invisible_until_opened(batches: Vec<(Dataset, RecordBatch)>) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, StoreOptions::default());
    let (team, user) = ids();
    let datasets: Vec<(Dataset, usize)> = batches.iter().map(|(d, b)| (*d, b.num_rows())).collect();
    let (opener, gate) = gate();
    let writer = store.clone();
    let write = tokio::spawn(async move {
        writer
            .write_push_gated(team, user, batches, Some(gate))
            .await
    });
    // Long enough for the encoding and fsyncs to be done and the write to wait at the gate.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "the write waits for its gate");
    for (dataset, _) in &datasets {
        assert_eq!(rows(&store, team, user, *dataset).await, 0, "{dataset:?}");
    }
    opener.open();
    let receipts = write.await.unwrap().unwrap();
    assert_eq!(receipts.len(), datasets.len());
    for (dataset, n) in &datasets {
        assert_eq!(rows(&store, team, user, *dataset).await, *n, "{dataset:?}");
    }
}

#[tokio::test]
async fn a_gated_write_of_one_dataset_is_invisible_until_its_gate_opens() {
    invisible_until_opened(one_dataset()).await;
}

#[tokio::test]
async fn a_gated_push_of_several_datasets_is_invisible_until_its_gate_opens() {
    invisible_until_opened(two_datasets()).await;
}

#[tokio::test]
async fn a_gate_dropped_unopened_abandons_the_write_and_leaves_no_file() {
    for batches in [one_dataset(), two_datasets()] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, StoreOptions::default());
        let (team, user) = ids();
        let datasets: Vec<Dataset> = batches.iter().map(|(d, _)| *d).collect();
        let before = all_files(&store);
        let (opener, gate) = gate();
        let writer = store.clone();
        let write = tokio::spawn(async move {
            writer
                .write_push_gated(team, user, batches, Some(gate))
                .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(opener);
        let result = write.await.unwrap();
        assert!(
            matches!(result, Err(StoreError::Abandoned)),
            "{:?}",
            result.map(|r| r.len())
        );
        for dataset in datasets {
            assert_eq!(rows(&store, team, user, dataset).await, 0, "{dataset:?}");
        }
        assert_eq!(all_files(&store), before, "no segment, temp or record left");
    }
}
