//! Files over time: torn, temporary and stray files, a user's deletion, the cache, reads racing
//! compactions, when compaction runs, commit records and what a push that never committed leaves,
//! and the bucket check.

use std::time::Duration;

use super::support::{
    Backing, DAY, Site, T0, at, batch, dataset_folder, floats, heartrate, ids, night_and_samples,
    one, row, times, user_folder,
};
use uuid::Uuid;
use wearhouse::schema::{Dataset, Table};
use wearhouse::store::health::{HealthStore, StoreError, StoreOptions};

/// A push across two datasets: the sleep record `night` (efficiency 80) and heart-rate
/// `samples` (time in µs, bpm).
/// A store with `stale_temp_after` holding one heart-rate segment (70 bpm at `T0`): the site,
/// the store, (team, user), and the segment's (folder, file name, bytes).
async fn one_segment(
    backing: Backing,
    stale_temp_after: Duration,
) -> (Site, HealthStore, (Uuid, Uuid), (String, String, Vec<u8>)) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions {
        stale_temp_after,
        ..StoreOptions::default()
    });
    let (team, user) = ids();
    let hr = heartrate();
    store
        .write(team, user, hr, batch(hr, &[row(T0, "", 70.0)]))
        .await
        .unwrap();
    let folder = dataset_folder(team, user, hr);
    let name = site.segment_files(team, user, hr).await.remove(0);
    let bytes = site.get(&format!("{folder}/{name}")).await;
    (site, store, (team, user), (folder, name, bytes))
}

async fn torn_temporary_and_stray_files_are_ignored_and_stale_temps_swept(backing: Backing) {
    let (site, store, (team, user), (folder, _, bytes)) =
        one_segment(backing, Duration::ZERO).await;
    let hr = heartrate();
    // What a crash mid-write leaves: a half-written temp file; plus strays a human might drop.
    let half = &bytes[..bytes.len() / 2];
    site.put(&format!("{folder}/_tmp-0123.partial"), half).await;
    site.put(&format!("{folder}/notes.txt"), b"hello").await;
    site.put(&format!("{folder}/copy.parquet"), &bytes).await;

    let reopened = site.open(StoreOptions::default());
    let got = one(hr, &reopened.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0]);
    assert_eq!(reopened.datasets(team, user).await.unwrap(), vec![hr]);

    let report = store.compact(team, user, hr).await.unwrap();
    assert_eq!(report.temp_files_removed, 1);
    let left = site.files_in(&folder).await;
    assert!(!left.contains(&"_tmp-0123.partial".to_owned()), "{left:?}");
    assert!(
        left.contains(&"notes.txt".to_owned()),
        "strays are not the store's to remove"
    );
}

async fn deleting_a_user_removes_all_of_its_data_and_nothing_else(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let team = Uuid::new_v4();
    let (gone, kept) = (Uuid::new_v4(), Uuid::new_v4());
    let sleep = Dataset::Table(Table::Sleep);
    for user in [gone, kept] {
        for d in [sleep, heartrate()] {
            store
                .write(team, user, d, batch(d, &[row(T0, "a", 1.0)]))
                .await
                .unwrap();
            assert_eq!(
                store.read(team, user, d, None).await.unwrap()[0].num_rows(),
                1
            );
        }
    }
    store.delete_user(team, gone).await.unwrap();
    assert!(store.datasets(team, gone).await.unwrap().is_empty());
    assert!(
        store
            .read(team, gone, sleep, None)
            .await
            .unwrap()
            .is_empty(),
        "cache dropped too"
    );
    let left = site.all_files(&user_folder(team, gone)).await;
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(store.datasets(team, kept).await.unwrap().len(), 2);
    // Deleting twice is fine; writing again after a delete starts afresh.
    store.delete_user(team, gone).await.unwrap();
    store
        .write(team, gone, sleep, batch(sleep, &[row(T0, "b", 2.0)]))
        .await
        .unwrap();
    let got = one(sleep, &store.read(team, gone, sleep, None).await.unwrap());
    assert_eq!(floats(&got, "efficiency"), vec![2.0]);
}

async fn the_cache_answers_repeated_reads_is_invalidated_by_writes_and_kept_by_compaction(
    backing: Backing,
) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let hr = heartrate();
    store
        .write(team, user, hr, batch(hr, &[row(T0, "", 70.0)]))
        .await
        .unwrap();
    let m0 = store.metrics();
    assert_eq!(
        store.read(team, user, hr, None).await.unwrap()[0].num_rows(),
        1
    );
    // A narrower window is served from the whole-dataset entry.
    let window = at(T0 - DAY)..at(T0 + DAY);
    assert_eq!(
        store.read(team, user, hr, Some(window)).await.unwrap()[0].num_rows(),
        1
    );
    let m1 = store.metrics();
    assert_eq!(
        (
            m1.cache_misses - m0.cache_misses,
            m1.cache_hits - m0.cache_hits
        ),
        (1, 1)
    );
    assert!(store.cache_bytes() > 0);

    store
        .write(team, user, hr, batch(hr, &[row(T0 + 1_000_000, "", 71.0)]))
        .await
        .unwrap();
    let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0, 71.0]);
    let m2 = store.metrics();
    assert_eq!(m2.cache_misses - m1.cache_misses, 1);

    // A compaction changes files, not content: the entry stays and still answers exactly.
    let report = store.compact(team, user, hr).await.unwrap();
    assert_eq!(report.segments_merged, 2);
    let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0, 71.0]);
    let m3 = store.metrics();
    assert_eq!(
        (
            m3.cache_misses - m2.cache_misses,
            m3.cache_hits - m2.cache_hits
        ),
        (0, 1)
    );
}

async fn reads_racing_compactions_never_double_count_or_miss_rows(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions {
        cache_bytes: 0,
        ..StoreOptions::default()
    });
    let (team, user) = ids();
    let hr = heartrate();
    let mut expected = 0;
    let reader = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut counts = Vec::new();
            for _ in 0..200 {
                let got = store.read(team, user, hr, None).await.unwrap();
                let t: Vec<i64> = got.iter().flat_map(|b| times(hr, b)).collect();
                assert!(t.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
                counts.push(t.len());
                tokio::task::yield_now().await;
            }
            counts
        })
    };
    for round in 0..20 {
        // Overlapping re-writes: every round re-sends the previous round's last sample.
        let rows: Vec<_> = (0..50)
            .map(|i| row(T0 + (round * 49 + i) * 1_000_000, "", 1.0))
            .collect();
        store.write(team, user, hr, batch(hr, &rows)).await.unwrap();
        expected = (round + 1) * 49 + 1;
        if round % 3 == 2 {
            store.compact(team, user, hr).await.unwrap();
        }
    }
    let counts = reader.await.unwrap();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "never fewer rows than a previous read"
    );
    let got = store.read(team, user, hr, None).await.unwrap();
    assert_eq!(
        got.iter().map(|b| b.num_rows()).sum::<usize>(),
        expected as usize
    );
}

/// The job's compaction waits for a run of `compact_min_segments` small segments (a push does
/// not rewrite its dataset every time), then merges it.
async fn due_compaction_waits_for_a_run_of_compact_min_segments(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions {
        compact_min_segments: 3,
        ..StoreOptions::default()
    });
    let (team, user) = ids();
    let hr = heartrate();
    for i in 0..2 {
        store
            .write(team, user, hr, batch(hr, &[row(T0 + i, "", 1.0)]))
            .await
            .unwrap();
    }
    let report = store.compact_due(team, user, hr).await.unwrap();
    assert_eq!(report.segments_merged, 0, "{report:?}");
    assert_eq!(site.segment_files(team, user, hr).await.len(), 2);
    store
        .write(team, user, hr, batch(hr, &[row(T0 + 2, "", 1.0)]))
        .await
        .unwrap();
    let report = store.compact_due(team, user, hr).await.unwrap();
    assert_eq!(report.segments_merged, 3, "{report:?}");
    assert_eq!(site.segment_files(team, user, hr).await.len(), 1);
    assert_eq!(
        store.read(team, user, hr, None).await.unwrap()[0].num_rows(),
        3
    );
}

/// A push across datasets becomes visible through one commit record, also to a store that has
/// never seen it; once compaction has merged away every segment it names, the record goes.
async fn a_push_across_datasets_commits_with_one_record_that_compaction_releases(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    let pushed = store
        .write_push(
            team,
            user,
            night_and_samples(&[(T0, 61.0), (T0 + 1_000_000, 62.0)]),
        )
        .await
        .unwrap();
    assert_eq!(
        pushed.iter().map(|r| r.rows).collect::<Vec<_>>(),
        vec![1, 2]
    );
    let commits = format!("{}/_commits", user_folder(team, user));
    assert_eq!(site.files_in(&commits).await.len(), 1, "one record");
    for d in [sleep, hr] {
        let files = site.segment_files(team, user, d).await;
        assert!(files.iter().all(|f| f.ends_with(".c.parquet")), "{files:?}");
    }
    // A second store learns the commit from the record itself. (Uncached: a store's cache
    // does not see another store's writes.)
    let other = site.open(StoreOptions {
        cache_bytes: 0,
        ..StoreOptions::default()
    });
    assert_eq!(other.datasets(team, user).await.unwrap(), vec![sleep, hr]);
    let got = one(hr, &other.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![61.0, 62.0]);

    // Merging the sleep segment away is not enough: the heart-rate one still needs the record.
    let mut later = row(T0, "night", 90.0);
    later.ingested = T0 + 1;
    store
        .write(team, user, sleep, batch(sleep, &[later]))
        .await
        .unwrap();
    store.compact(team, user, sleep).await.unwrap();
    assert_eq!(site.files_in(&commits).await.len(), 1);
    store
        .write(team, user, hr, batch(hr, &[row(T0 + 2_000_000, "", 63.0)]))
        .await
        .unwrap();
    assert_eq!(
        store.compact(team, user, hr).await.unwrap().segments_merged,
        2
    );
    assert!(site.files_in(&commits).await.is_empty(), "record released");
    let got = one(hr, &other.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![61.0, 62.0, 63.0]);
    let got = one(sleep, &other.read(team, user, sleep, None).await.unwrap());
    assert_eq!(floats(&got, "efficiency"), vec![90.0]);
}

/// What a push that crashed before its commit record leaves (marked segments without a
/// record) is invisible, and swept by compaction once older than `stale_temp_after`; a
/// younger one, possibly a push still running, is left alone.
async fn segments_of_a_push_that_never_committed_are_swept_once_stale(backing: Backing) {
    let (site, store, (team, user), (folder, real, bytes)) =
        one_segment(backing, Duration::from_secs(600)).await;
    let hr = heartrate();
    // The same segment under the names of two pushes that never wrote their record: one
    // created an hour ago, one just now.
    let now = chrono::Utc::now().timestamp_micros();
    let orphan = |created: i64| {
        let rest = &real[20..real.len() - ".parquet".len()];
        format!("{created:020}{rest}.c.parquet")
    };
    let (old, young) = (orphan(now - 3_600_000_000), orphan(now));
    site.put(&format!("{folder}/{old}"), &bytes).await;
    site.put(&format!("{folder}/{young}"), &bytes).await;
    let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0], "uncommitted: invisible");

    let report = store.compact(team, user, hr).await.unwrap();
    assert_eq!(report.uncommitted_removed, 1, "{report:?}");
    let left = site.segment_files(team, user, hr).await;
    assert!(!left.contains(&old), "{left:?}");
    assert!(left.contains(&young), "{left:?}");
    assert!(left.contains(&real), "{left:?}");
}

/// A push that would commit when its segments may already count as a crash's leftovers (older
/// than half of `stale_temp_after`) gives up instead, and nothing of it is visible.
#[tokio::test]
async fn a_push_too_late_to_commit_gives_up_and_leaves_nothing_visible() {
    let site = Site::new(Backing::Local);
    let store = site.open(StoreOptions {
        stale_temp_after: Duration::ZERO,
        ..StoreOptions::default()
    });
    let (team, user) = ids();
    let err = store
        .write_push(team, user, night_and_samples(&[(T0, 61.0)]))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Abandoned), "{err}");
    assert!(store.datasets(team, user).await.unwrap().is_empty());
}

/// A bucket that does not exist is reported by `check`, naming the cause, before any request;
/// an existing one passes.
#[tokio::test]
async fn check_reports_a_missing_bucket_before_any_request() {
    let site = Site::new(Backing::S3);
    assert!(site.open(StoreOptions::default()).check().await.is_ok());
    let missing = site.open_at("s3://no-such-bucket/data", StoreOptions::default());
    let err = missing.check().await.unwrap_err();
    assert!(matches!(err, StoreError::ObjectStore(_)), "{err}");
    let cause = format!("{:?}", anyhow::Error::from(err));
    assert!(
        cause.contains("NoSuchBucket") || cause.contains("not exist"),
        "{cause}"
    );
}

crate::on_every_backing!(
    segments_of_a_push_that_never_committed_are_swept_once_stale,
    a_push_across_datasets_commits_with_one_record_that_compaction_releases,
    torn_temporary_and_stray_files_are_ignored_and_stale_temps_swept,
    deleting_a_user_removes_all_of_its_data_and_nothing_else,
    the_cache_answers_repeated_reads_is_invalidated_by_writes_and_kept_by_compaction,
    reads_racing_compactions_never_double_count_or_miss_rows,
    due_compaction_waits_for_a_run_of_compact_min_segments,
);
