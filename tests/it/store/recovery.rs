//! Integration tests of multi-dataset pushes and start-up recovery: a push is committed by one
//! record, segments of an uncommitted push are invisible and removed at start-up, temp files of
//! a crashed write are removed at start-up, commit records are removed once their segments are
//! merged away.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::store::support as store_support;

use std::path::{Path, PathBuf};

use store_support::{DAY, T0, batch, floats, heartrate, ids, one, open, row, segment_files};
use uuid::Uuid;
use wearhouse::schema::{Dataset, Table};
use wearhouse::store::health::{HealthStore, StoreOptions};

/// File names in a folder (none when it does not exist).
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn commits_dir(store: &HealthStore, team: Uuid, user: Uuid) -> PathBuf {
    store.root().unwrap().join(format!(
        "{}/_commits",
        store_support::user_folder(team, user)
    ))
}

fn dataset_dir(store: &HealthStore, team: Uuid, user: Uuid, dataset: Dataset) -> PathBuf {
    store
        .root()
        .unwrap()
        .join(store_support::dataset_folder(team, user, dataset))
}

/// A push of one sleep record and one heart-rate sample, `value` in both.
fn push(value: f64, time: i64) -> Vec<(Dataset, datafusion::arrow::array::RecordBatch)> {
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    vec![
        (
            sleep,
            batch(sleep, &[row(time, &format!("n{time}"), value)]),
        ),
        (hr, batch(hr, &[row(time, "", value)])),
    ]
}

async fn values(store: &HealthStore, team: Uuid, user: Uuid) -> (Vec<f64>, Vec<f64>) {
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    let s = one(sleep, &store.read(team, user, sleep, None).await.unwrap());
    let h = one(hr, &store.read(team, user, hr, None).await.unwrap());
    (floats(&s, "efficiency"), floats(&h, "value"))
}

#[tokio::test]
async fn a_push_spanning_datasets_is_committed_by_one_record_naming_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, StoreOptions::default());
    let (team, user) = ids();
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    let mut batches = push(1.0, T0);
    // A second batch of one dataset joins the same segment.
    batches.push((hr, batch(hr, &[row(T0 + DAY, "", 2.0)])));
    let receipts = store.write_push(team, user, batches).await.unwrap();
    assert_eq!(receipts.iter().map(|r| r.rows).collect::<Vec<_>>(), [1, 2]);

    assert_eq!(
        values(&store, team, user).await,
        (vec![1.0], vec![1.0, 2.0])
    );
    assert_eq!(store.datasets(team, user).await.unwrap(), vec![sleep, hr]);
    let records = files(&commits_dir(&store, team, user));
    assert_eq!(records.len(), 1, "{records:?}");
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(commits_dir(&store, team, user).join(&records[0])).unwrap(),
    )
    .unwrap();
    let mut named: Vec<String> = record["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    named.sort();
    let mut expected = vec![
        format!(
            "dataset=sleep/{}",
            segment_files(&store, team, user, sleep)[0]
        ),
        format!(
            "dataset=timeseries/resource=heartrate/{}",
            segment_files(&store, team, user, hr)[0]
        ),
    ];
    expected.sort();
    assert_eq!(named, expected);
    assert!(named.iter().all(|n| n.ends_with(".c.parquet")));

    // A push of a single dataset needs no record.
    store
        .write_push(
            team,
            user,
            vec![(hr, batch(hr, &[row(T0 + 2 * DAY, "", 3.0)]))],
        )
        .await
        .unwrap();
    assert_eq!(files(&commits_dir(&store, team, user)).len(), 1);
    assert_eq!(values(&store, team, user).await.1, vec![1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn segments_of_a_push_without_its_commit_record_are_invisible_and_removed_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, StoreOptions::default());
    let (team, user) = ids();
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    store.write_push(team, user, push(1.0, T0)).await.unwrap();
    // What a crash between the segments and the record leaves: the segments of a second push,
    // and no record for them (copies of the first push's segments under another push's id).
    let committed = files(&commits_dir(&store, team, user));
    let mut orphans = Vec::new();
    for d in [sleep, hr] {
        let folder = dataset_dir(&store, team, user, d);
        let name = segment_files(&store, team, user, d)[0].clone();
        let (order, rest) = name.split_once('.').unwrap();
        let orphan = format!("{}ffffffff.{rest}", &order[..order.len() - 8]);
        std::fs::copy(folder.join(&name), folder.join(&orphan)).unwrap();
        orphans.push(folder.join(orphan));
    }
    std::fs::write(
        commits_dir(&store, team, user).join("_tmp-0123.partial"),
        b"{\"segm",
    )
    .unwrap();
    // The store does not count them, nor does a second one opened next to it (which learns
    // about commits from the records alone).
    let second = open(&dir, StoreOptions::default());
    for s in [&store, &second] {
        assert_eq!(values(s, team, user).await, (vec![1.0], vec![1.0]));
        assert_eq!(s.compact(team, user, hr).await.unwrap().segments_merged, 0);
    }
    drop(store);
    drop(second);
    assert!(
        orphans.iter().all(|o| o.exists()),
        "a store opened next to another removes nothing"
    );

    let reopened = open(&dir, StoreOptions::default());
    assert!(orphans.iter().all(|o| !o.exists()), "removed at start-up");
    assert_eq!(files(&commits_dir(&reopened, team, user)), committed);
    assert_eq!(values(&reopened, team, user).await, (vec![1.0], vec![1.0]));
    // Only orphans go: a second start-up finds nothing more to remove.
    drop(reopened);
    let again = open(&dir, StoreOptions::default());
    assert_eq!(segment_files(&again, team, user, hr).len(), 1);
    assert_eq!(values(&again, team, user).await, (vec![1.0], vec![1.0]));
}

#[tokio::test]
async fn temp_files_of_a_crashed_write_are_removed_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, StoreOptions::default());
    let (team, user) = ids();
    let hr = heartrate();
    store
        .write(team, user, hr, batch(hr, &[row(T0, "", 70.0)]))
        .await
        .unwrap();
    let folder = dataset_dir(&store, team, user, hr);
    // A write that crashed a moment ago: far younger than `stale_temp_after`.
    std::fs::write(folder.join("_tmp-0123.partial"), b"PAR1 torn").unwrap();
    std::fs::write(folder.join("notes.txt"), b"hello").unwrap();
    drop(store);

    let reopened = open(&dir, StoreOptions::default());
    assert_eq!(
        files(&folder),
        [
            segment_files(&reopened, team, user, hr)[0].clone(),
            "notes.txt".to_owned()
        ],
        "the temp file is gone, the segment and strays stay"
    );
    let got = one(hr, &reopened.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0]);
}

#[tokio::test]
async fn a_commit_record_goes_once_compaction_merged_away_all_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, StoreOptions::default());
    let (team, user) = ids();
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    store.write_push(team, user, push(1.0, T0)).await.unwrap();
    store
        .write_push(team, user, push(2.0, T0 + DAY))
        .await
        .unwrap();
    assert_eq!(files(&commits_dir(&store, team, user)).len(), 2);

    assert_eq!(
        store.compact(team, user, hr).await.unwrap().segments_merged,
        2
    );
    assert_eq!(
        files(&commits_dir(&store, team, user)).len(),
        2,
        "the sleep segments still need their records"
    );
    assert_eq!(
        store
            .compact(team, user, sleep)
            .await
            .unwrap()
            .segments_merged,
        2
    );
    assert!(files(&commits_dir(&store, team, user)).is_empty());
    assert_eq!(
        values(&store, team, user).await,
        (vec![1.0, 2.0], vec![1.0, 2.0])
    );

    // Data survives a restart; a record whose segments all vanished is removed at start-up.
    store
        .write_push(team, user, push(3.0, T0 + 2 * DAY))
        .await
        .unwrap();
    let record = files(&commits_dir(&store, team, user)).remove(0);
    std::fs::copy(
        commits_dir(&store, team, user).join(&record),
        commits_dir(&store, team, user).join(format!("{}-0000abcd.commit", &record[..20])),
    )
    .unwrap();
    drop(store);
    let reopened = open(&dir, StoreOptions::default());
    assert_eq!(files(&commits_dir(&reopened, team, user)), [record]);
    assert_eq!(
        values(&reopened, team, user).await,
        (vec![1.0, 2.0, 3.0], vec![1.0, 2.0, 3.0])
    );
}

/// A store written before Hive-style folder names (`<team>/<user>/sleep`,
/// `<team>/<user>/timeseries/heartrate`, records naming `sleep/…`) is renamed in place at
/// start-up: its data stays visible, its push stays committed, and compaction still releases
/// the old record once its segments are merged away.
#[tokio::test]
async fn a_store_in_the_layout_before_hive_folders_is_renamed_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (team, user) = ids();
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    {
        let store = open(&dir, StoreOptions::default());
        store.write_push(team, user, push(1.0, T0)).await.unwrap();
        store
            .write(team, user, hr, batch(hr, &[row(T0 + DAY, "", 2.0)]))
            .await
            .unwrap();
    }
    // Back to the old layout, by hand.
    let root = dir.path();
    let (old_team, old_user) = (
        root.join(team.to_string()),
        root.join(format!("{team}/{user}")),
    );
    std::fs::rename(root.join(format!("team={team}")), &old_team).unwrap();
    std::fs::rename(old_team.join(format!("user={user}")), &old_user).unwrap();
    std::fs::rename(old_user.join("dataset=sleep"), old_user.join("sleep")).unwrap();
    std::fs::rename(
        old_user.join("dataset=timeseries"),
        old_user.join("timeseries"),
    )
    .unwrap();
    let series = old_user.join("timeseries");
    std::fs::rename(series.join("resource=heartrate"), series.join("heartrate")).unwrap();
    let records = files(&old_user.join("_commits"));
    assert_eq!(records.len(), 1);
    let record = old_user.join("_commits").join(&records[0]);
    let text = std::fs::read_to_string(&record).unwrap();
    let old = text
        .replace("dataset=timeseries/resource=", "timeseries/")
        .replace("dataset=", "");
    assert_ne!(old, text);
    std::fs::write(&record, old).unwrap();

    let store = open(&dir, StoreOptions::default());
    assert!(!old_team.exists(), "renamed");
    assert_eq!(store.datasets(team, user).await.unwrap(), vec![sleep, hr]);
    assert_eq!(
        values(&store, team, user).await,
        (vec![1.0], vec![1.0, 2.0])
    );
    assert_eq!(segment_files(&store, team, user, hr).len(), 2);
    // Merging the heart rate away is not enough: the old record still names the sleep segment.
    store.compact(team, user, hr).await.unwrap();
    assert_eq!(files(&commits_dir(&store, team, user)).len(), 1);
    store
        .write(team, user, sleep, batch(sleep, &[row(T0 + DAY, "n2", 3.0)]))
        .await
        .unwrap();
    store.compact(team, user, sleep).await.unwrap();
    assert!(
        files(&commits_dir(&store, team, user)).is_empty(),
        "released"
    );
    assert_eq!(
        values(&store, team, user).await,
        (vec![1.0, 3.0], vec![1.0, 2.0])
    );
}
