//! Integration tests of the health-data store: round trips, replacement, pruning, cache,
//! torn and temporary files, compaction and user deletion. Every test that does not look at a
//! local directory's specifics runs twice (`on_every_backing!`): on a local directory and on a
//! real S3-compatible server (moto's, provisioned by the tests).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::store_support;

use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use store_support::{
    Backing, DAY, Site, T0, at, batch, dataset_folder, floats, heartrate, ids, one, row, times,
    user_folder,
};
use uuid::Uuid;
use wearhouse::schema::{Dataset, Table, resource};
use wearhouse::store::health::{HealthStore, StoreError, StoreOptions};

/// A push across two datasets: the sleep record `night` (efficiency 80) and heart-rate
/// `samples` (time in µs, bpm).
fn night_and_samples(samples: &[(i64, f64)]) -> Vec<(Dataset, RecordBatch)> {
    let (sleep, hr) = (Dataset::Table(Table::Sleep), heartrate());
    let samples: Vec<_> = samples.iter().map(|(t, bpm)| row(*t, "", *bpm)).collect();
    vec![
        (sleep, batch(sleep, &[row(T0, "night", 80.0)])),
        (hr, batch(hr, &samples)),
    ]
}

async fn every_table_and_family_round_trips_sorted_by_time(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let mut datasets: Vec<Dataset> = Table::ALL.into_iter().map(Dataset::Table).collect();
    for name in [
        "heartrate",
        "steps",
        "insulin_injection",
        "blood_pressure",
        "note",
    ] {
        datasets.push(Dataset::Timeseries(resource(name).unwrap()));
    }
    for dataset in datasets.iter().copied() {
        // Written out of order: the store sorts by the time column.
        let rows = [
            row(T0 + 2 * DAY, "c", 3.0),
            row(T0, "a", 1.0),
            row(T0 + DAY, "b", 2.0),
        ];
        let receipt = store
            .write(team, user, dataset, batch(dataset, &rows))
            .await
            .unwrap();
        assert_eq!(receipt.rows, 3, "{dataset:?}");
        assert!(receipt.bytes > 0 && receipt.segment.is_some());

        let got = one(
            dataset,
            &store.read(team, user, dataset, None).await.unwrap(),
        );
        let sorted = [rows[1].clone(), rows[2].clone(), rows[0].clone()];
        assert_eq!(got, batch(dataset, &sorted), "{dataset:?}");
        assert_eq!(times(dataset, &got), vec![T0, T0 + DAY, T0 + 2 * DAY]);
    }
    assert_eq!(store.datasets(team, user).await.unwrap(), datasets);
}

async fn a_newer_version_replaces_the_older_before_and_after_compaction(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let sleep = Dataset::Table(Table::Sleep);
    let hr = heartrate();
    let first = [row(T0, "night-1", 50.0), row(T0 + DAY, "night-2", 55.0)];
    store
        .write(team, user, sleep, batch(sleep, &first))
        .await
        .unwrap();
    store
        .write(team, user, hr, batch(hr, &first))
        .await
        .unwrap();
    // The same records re-ingested later with changed values (the sleep session also moved).
    let mut second = row(T0 + 3_600_000_000, "night-1", 60.0);
    second.ingested = T0 + 1;
    let mut second_hr = row(T0, "x", 61.0);
    second_hr.ingested = T0 + 1;
    store
        .write(team, user, sleep, batch(sleep, &[second]))
        .await
        .unwrap();
    store
        .write(team, user, hr, batch(hr, &[second_hr]))
        .await
        .unwrap();
    // An older version arriving late does not win: newest ingested_at does.
    let mut stale = row(T0, "night-1", 1.0);
    stale.ingested = T0 - 1;
    store
        .write(team, user, sleep, batch(sleep, &[stale]))
        .await
        .unwrap();

    for phase in ["before", "after"] {
        let got = one(sleep, &store.read(team, user, sleep, None).await.unwrap());
        assert_eq!(
            floats(&got, "efficiency"),
            vec![60.0, 55.0],
            "sleep {phase}"
        );
        let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
        assert_eq!(floats(&got, "value"), vec![61.0, 55.0], "heartrate {phase}");
        if phase == "before" {
            let report = store.compact(team, user, sleep).await.unwrap();
            assert_eq!((report.segments_merged, report.segments_written), (3, 1));
            assert_eq!((report.rows_in, report.rows_out), (4, 2));
            let report = store.compact(team, user, hr).await.unwrap();
            assert_eq!((report.rows_in, report.rows_out), (3, 2));
            assert_eq!(site.segment_files(team, user, sleep).await.len(), 1);
            assert_eq!(site.segment_files(team, user, hr).await.len(), 1);
        }
    }
    // Nothing left to merge.
    assert_eq!(
        store
            .compact(team, user, sleep)
            .await
            .unwrap()
            .segments_merged,
        0
    );
}

async fn a_one_day_window_reads_only_the_segments_and_row_groups_overlapping_it(backing: Backing) {
    let site = Site::new(backing);
    let options = StoreOptions {
        row_group_rows: 100,
        ..StoreOptions::default()
    };
    let store = site.open(options);
    let (team, user) = ids();
    let hr = heartrate();
    // Ten days, one segment per day, one sample per minute.
    for day in 0..10 {
        let rows: Vec<_> = (0..1440)
            .map(|m| row(T0 + day * DAY + m * 60_000_000, "", 60.0 + (m % 40) as f64))
            .collect();
        store.write(team, user, hr, batch(hr, &rows)).await.unwrap();
    }
    let before = store.metrics();
    let window = at(T0 + 4 * DAY)..at(T0 + 5 * DAY);
    let got = one(hr, &store.read(team, user, hr, Some(window)).await.unwrap());
    let after = store.metrics();
    assert_eq!(got.num_rows(), 1440);
    let t = times(hr, &got);
    assert_eq!((t[0], t[1439]), (T0 + 4 * DAY, T0 + 5 * DAY - 60_000_000));
    assert_eq!(after.segments_considered - before.segments_considered, 10);
    assert_eq!(after.segments_pruned - before.segments_pruned, 9);
    assert_eq!(after.segments_read - before.segments_read, 1);
    assert_eq!(after.row_groups_read - before.row_groups_read, 15); // 1440 rows / 100

    // One segment holding all ten days: row groups are pruned by their statistics instead.
    assert_eq!(
        store
            .compact(team, user, hr)
            .await
            .unwrap()
            .segments_written,
        1
    );
    // (A window outside day 4, which the cache still holds: compaction keeps the entry.)
    let before = store.metrics();
    let start = T0 + 6 * DAY + 40 * 60_000_000;
    let window = at(start + 1)..at(start + 3_600_000_000);
    let got = one(hr, &store.read(team, user, hr, Some(window)).await.unwrap());
    let after = store.metrics();
    assert_eq!(got.num_rows(), 59, "minutes 1..=59 of the hour");
    assert_eq!(after.segments_read - before.segments_read, 1);
    // Minutes 8681..8739 of 14,400 lie in row groups 86 and 87 of 144.
    assert_eq!(after.row_groups_read - before.row_groups_read, 2);
    assert_eq!(after.row_groups_pruned - before.row_groups_pruned, 142);
}

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

#[tokio::test]
async fn locations_and_schemas_are_checked() {
    let err = HealthStore::open("ftp://host/data", StoreOptions::default()).unwrap_err();
    assert!(
        matches!(err, StoreError::UnsupportedLocation { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("s3://"), "{err}");
    for (location, why) in [
        ("memory://", "unsupported store location"),
        ("s3:///data", "names no bucket"),
        ("file://", "empty path"),
        ("", "empty path"),
    ] {
        let err = HealthStore::open(location, StoreOptions::default()).unwrap_err();
        assert!(err.to_string().contains(why), "{location}: {err}");
    }

    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let store = HealthStore::open(&url, StoreOptions::default()).unwrap();
    let (team, user) = ids();
    let sleep = Dataset::Table(Table::Sleep);
    let wrong = batch(heartrate(), &[row(T0, "a", 1.0)]);
    let err = store.write(team, user, sleep, wrong).await.unwrap_err();
    assert!(matches!(err, StoreError::SchemaMismatch { .. }), "{err}");
    assert!(store.datasets(team, user).await.unwrap().is_empty());
    let empty = batch(sleep, &[]);
    assert_eq!(store.write(team, user, sleep, empty).await.unwrap().rows, 0);
    assert!(
        store
            .read(team, user, sleep, None)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn date_indexed_tables_are_windowed_by_midnight_utc_and_nothing_is_pruned_unsafely(
    backing: Backing,
) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let activity = Dataset::Table(Table::Activity);
    let days = [
        row(T0, "d0", 1.0),
        row(T0 + DAY, "d1", 2.0),
        row(T0 + 2 * DAY, "d2", 3.0),
    ];
    store
        .write(team, user, activity, batch(activity, &days))
        .await
        .unwrap();
    // Day 1 re-ingested with a new value in a later segment.
    let mut again = row(T0 + DAY, "d1", 20.0);
    again.ingested = T0 + 1;
    store
        .write(team, user, activity, batch(activity, &[again]))
        .await
        .unwrap();

    let window = at(T0 + DAY - 1)..at(T0 + DAY + 1);
    let got = one(
        activity,
        &store
            .read(team, user, activity, Some(window))
            .await
            .unwrap(),
    );
    assert_eq!(times(activity, &got), vec![T0 + DAY]);
    assert_eq!(floats(&got, "calories_total"), vec![20.0]);
    let window = at(T0 + DAY + 1)..at(T0 + 2 * DAY);
    assert!(
        store
            .read(team, user, activity, Some(window))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_folder_removed_behind_the_stores_back_is_recreated_on_write(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let hr = heartrate();
    store
        .write(team, user, hr, batch(hr, &[row(T0, "", 1.0)]))
        .await
        .unwrap();
    site.remove_all(&format!("team={team}")).await;
    store
        .write(team, user, hr, batch(hr, &[row(T0, "", 2.0)]))
        .await
        .unwrap();
    let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![2.0]);
}

/// (provider, time, value) of every row, per batch.
fn sources_per_batch(
    batches: &[datafusion::arrow::array::RecordBatch],
) -> Vec<Vec<(String, i64, f64)>> {
    use datafusion::arrow::array::AsArray;
    let hr = heartrate();
    batches
        .iter()
        .map(|b| {
            let provider = b
                .column_by_name("source_provider")
                .unwrap()
                .as_string::<i32>();
            let t = times(hr, b);
            let v = floats(b, "value");
            (0..b.num_rows())
                .map(|i| (provider.value(i).to_owned(), t[i], v[i]))
                .collect()
        })
        .collect()
}

async fn timeseries_reads_come_back_one_source_per_batch_each_sorted_by_time(backing: Backing) {
    let site = Site::new(backing);
    let store = site.open(StoreOptions::default());
    let (team, user) = ids();
    let hr = heartrate();
    // A ring and a watch interleaved minute by minute in one write (one mixed segment), then a
    // correction from the ring overlapping it (so reads resolve replacements across segments).
    let minute = 60_000_000;
    let interleaved: Vec<_> = (0..40)
        .map(|i| {
            let mut r = row(T0 + i * minute, "x", i as f64);
            r.provider = if i % 2 == 0 {
                "oura"
            } else {
                "apple_health_kit"
            };
            r
        })
        .collect();
    store
        .write(team, user, hr, batch(hr, &interleaved))
        .await
        .unwrap();
    let mut fix = row(T0 + 10 * minute, "x", 100.0);
    fix.ingested = T0 + 1;
    store
        .write(team, user, hr, batch(hr, &[fix]))
        .await
        .unwrap();

    let expected = |provider: &str, window: (i64, i64)| -> Vec<(String, i64, f64)> {
        (0..40)
            .filter(|i| (i % 2 == 0) == (provider == "oura"))
            .map(|i| {
                (
                    provider.to_owned(),
                    T0 + i * minute,
                    if i == 10 { 100.0 } else { i as f64 },
                )
            })
            .filter(|(_, t, _)| (window.0..window.1).contains(t))
            .collect()
    };
    for phase in ["before compaction", "after compaction"] {
        for window in [(T0, T0 + 40 * minute), (T0 + 5 * minute, T0 + 21 * minute)] {
            let batches = store
                .read(team, user, hr, Some(at(window.0)..at(window.1)))
                .await
                .unwrap();
            let per_batch = sources_per_batch(&batches);
            let mut by_source: Vec<Vec<(String, i64, f64)>> = Vec::new();
            for rows in per_batch {
                assert!(!rows.is_empty(), "{phase}: an empty batch");
                assert!(
                    rows.iter().all(|r| r.0 == rows[0].0),
                    "{phase}: a batch mixes sources: {rows:?}"
                );
                assert!(
                    rows.windows(2).all(|w| w[0].1 < w[1].1),
                    "{phase}: unsorted batch"
                );
                match by_source.iter_mut().find(|s| s[0].0 == rows[0].0) {
                    Some(s) => s.extend(rows),
                    None => by_source.push(rows),
                }
            }
            by_source.sort_by(|a, b| a[0].0.cmp(&b[0].0));
            assert_eq!(
                by_source,
                vec![
                    expected("apple_health_kit", window),
                    expected("oura", window)
                ],
                "{phase} {window:?}"
            );
        }
        if phase == "before compaction" {
            let report = store.compact(team, user, hr).await.unwrap();
            assert_eq!((report.rows_in, report.rows_out), (41, 40));
        }
    }
}

/// Two devices covering the same hours: their segments overlap in time, but a record key starts
/// with the source, so neither can replace the other's rows and a read resolves nothing; a
/// correction of one device is resolved within that device's rows only. Compaction keeps the
/// two apart: each output holds one source, sorted by time.
async fn overlapping_sources_are_resolved_apart_and_compacted_apart(backing: Backing) {
    let site = Site::new(backing);
    let cold = StoreOptions {
        cache_bytes: 0,
        ..StoreOptions::default()
    };
    let store = site.open(cold);
    let (team, user) = ids();
    let hr = heartrate();
    let minute = 60_000_000;
    let device = |provider: &'static str, from: i64, to: i64, offset: f64| -> Vec<_> {
        (from..to)
            .map(|i| {
                let mut r = row(T0 + i * minute, "x", i as f64 + offset);
                r.provider = provider;
                r
            })
            .collect()
    };
    // Each device syncs two hours in two writes.
    for (provider, offset) in [("oura", 0.0), ("apple_health_kit", 1000.0)] {
        for (from, to) in [(0, 60), (60, 120)] {
            let rows = device(provider, from, to, offset);
            store.write(team, user, hr, batch(hr, &rows)).await.unwrap();
        }
    }
    let expected = |fixed: Option<(i64, f64)>| -> Vec<Vec<(String, i64, f64)>> {
        ["apple_health_kit", "oura"]
            .iter()
            .map(|p| {
                let offset = if *p == "oura" { 0.0 } else { 1000.0 };
                (0..120)
                    .map(|i| {
                        let v = match fixed {
                            Some((at, v)) if *p == "oura" && at == i => v,
                            _ => i as f64 + offset,
                        };
                        (p.to_string(), T0 + i * minute, v)
                    })
                    .collect()
            })
            .collect()
    };
    let read_by_source = |store: &HealthStore| {
        let store = store.clone();
        async move {
            let batches = store.read(team, user, hr, None).await.unwrap();
            let mut by_source: Vec<Vec<(String, i64, f64)>> = Vec::new();
            for rows in sources_per_batch(&batches) {
                assert!(
                    rows.iter().all(|r| r.0 == rows[0].0),
                    "a batch mixes sources"
                );
                match by_source.iter_mut().find(|s| s[0].0 == rows[0].0) {
                    Some(s) => s.extend(rows),
                    None => by_source.push(rows),
                }
            }
            by_source.sort_by(|a, b| a[0].0.cmp(&b[0].0));
            by_source
        }
    };
    assert_eq!(read_by_source(&store).await, expected(None));
    assert_eq!(store.metrics().rows_read, 240);
    assert_eq!(store.metrics().rows_resolved, 0, "nothing to resolve");

    // A correction of the ring's minute 30: resolved within the ring's rows.
    let mut fix = row(T0 + 30 * minute, "x", -1.0);
    fix.ingested = T0 + 1;
    store
        .write(team, user, hr, batch(hr, &[fix]))
        .await
        .unwrap();
    assert_eq!(read_by_source(&store).await, expected(Some((30, -1.0))));
    assert_eq!(store.metrics().rows_replaced, 1);
    assert_eq!(
        store.metrics().rows_resolved,
        121,
        "only the ring's rows are resolved"
    );

    let report = store.compact(team, user, hr).await.unwrap();
    assert_eq!(report.segments_merged, 5);
    assert_eq!(report.rows_out, 240);
    let files = site.segment_files(team, user, hr).await;
    assert_eq!(files.len(), 2, "one output per source: {files:?}");
    let before = store.metrics().rows_resolved;
    assert_eq!(read_by_source(&store).await, expected(Some((30, -1.0))));
    assert_eq!(
        store.metrics().rows_resolved,
        before,
        "the outputs overlap in time but not in source: nothing to resolve"
    );
    // Each output is one source, sorted by time (the name's range is its first and last row).
    for file in &files {
        let bytes = site
            .get(&format!("{}/{file}", dataset_folder(team, user, hr)))
            .await;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
            bytes::Bytes::from(bytes),
            1024,
        )
        .unwrap();
        let rows: Vec<_> = reader
            .flat_map(|b| sources_per_batch(&[b.unwrap()]).remove(0))
            .collect();
        assert_eq!(rows.len(), 120, "{file}");
        assert!(
            rows.iter().all(|r| r.0 == rows[0].0),
            "{file} mixes sources"
        );
        assert!(rows.windows(2).all(|w| w[0].1 < w[1].1), "{file} unsorted");
    }
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
    every_table_and_family_round_trips_sorted_by_time,
    a_newer_version_replaces_the_older_before_and_after_compaction,
    a_one_day_window_reads_only_the_segments_and_row_groups_overlapping_it,
    torn_temporary_and_stray_files_are_ignored_and_stale_temps_swept,
    deleting_a_user_removes_all_of_its_data_and_nothing_else,
    the_cache_answers_repeated_reads_is_invalidated_by_writes_and_kept_by_compaction,
    reads_racing_compactions_never_double_count_or_miss_rows,
    due_compaction_waits_for_a_run_of_compact_min_segments,
    date_indexed_tables_are_windowed_by_midnight_utc_and_nothing_is_pruned_unsafely,
    a_folder_removed_behind_the_stores_back_is_recreated_on_write,
    timeseries_reads_come_back_one_source_per_batch_each_sorted_by_time,
    overlapping_sources_are_resolved_apart_and_compacted_apart,
);

/// Two processes' stores on one bucket, their versions shared through the machine's
/// PostgreSQL: a write or a deletion acknowledged by one is seen by the other's next read, even
/// where that one holds the dataset cached. A store that does not share stays stale, which is
/// why the versions exist.
#[tokio::test]
async fn stores_sharing_a_bucket_see_each_others_writes_through_shared_versions() {
    let db = crate::jobs_support::Db::postgres().await;
    let site = Site::new(Backing::S3);
    let (a, b, unshared) = (
        site.open(StoreOptions::default()),
        site.open(StoreOptions::default()),
        site.open(StoreOptions::default()),
    );
    for store in [&a, &b] {
        store.share_versions(std::sync::Arc::new(db.store().await));
        assert!(store.is_shared());
    }
    assert!(!unshared.is_shared());
    let (team, user) = ids();
    let hr = heartrate();
    let values = |store: &HealthStore| {
        let store = store.clone();
        async move {
            let batches = store.read(team, user, hr, None).await.unwrap();
            batches
                .iter()
                .flat_map(|b| floats(b, "value"))
                .collect::<Vec<_>>()
        }
    };
    a.write(team, user, hr, batch(hr, &[row(T0, "", 61.0)]))
        .await
        .unwrap();
    for store in [&a, &b, &unshared] {
        assert_eq!(values(store).await, vec![61.0]);
    }
    // Cached everywhere now; B writes.
    let hits = a.metrics().cache_hits;
    assert_eq!(values(&a).await, vec![61.0]);
    assert_eq!(a.metrics().cache_hits, hits + 1, "a warm read is a hit");
    b.write(team, user, hr, batch(hr, &[row(T0 + 1_000_000, "", 62.0)]))
        .await
        .unwrap();
    assert_eq!(values(&a).await, vec![61.0, 62.0], "A sees B's write");
    assert_eq!(
        values(&unshared).await,
        vec![61.0],
        "without sharing: stale"
    );
    // A push across datasets, then a deletion, from B.
    let sleep = Dataset::Table(Table::Sleep);
    assert!(a.read(team, user, sleep, None).await.unwrap().is_empty());
    b.write_push(team, user, night_and_samples(&[(T0 + 2_000_000, 63.0)]))
        .await
        .unwrap();
    assert_eq!(values(&a).await, vec![61.0, 62.0, 63.0]);
    assert_eq!(
        a.read(team, user, sleep, None).await.unwrap()[0].num_rows(),
        1
    );
    b.delete_user(team, user).await.unwrap();
    assert!(values(&a).await.is_empty(), "A sees B's deletion");
    assert!(a.read(team, user, sleep, None).await.unwrap().is_empty());
    db.close().await;
}

/// On object storage a compaction retires its inputs instead of removing them: a reader in
/// another process that listed them before still fetches them, every listing after it sees the
/// outputs alone (no double count), and once the grace period is over the next compaction, in
/// any process, removes them and releases the commit records they needed.
#[tokio::test]
async fn on_object_storage_merged_inputs_stay_readable_for_the_grace_period() {
    let site = Site::new(Backing::S3);
    let grace = |secs| StoreOptions {
        retired_grace: Duration::from_secs(secs),
        ..StoreOptions::default()
    };
    let compactor = site.open_at(&site.location, grace(3600));
    let (team, user) = ids();
    let (hr, sleep) = (heartrate(), Dataset::Table(Table::Sleep));
    // One push across two datasets (its heart-rate segment needs the commit record), then two
    // single writes, one replacing a sample.
    compactor
        .write_push(team, user, night_and_samples(&[(T0, 61.0)]))
        .await
        .unwrap();
    let mut newer = row(T0, "", 70.0);
    newer.ingested = T0 + 1;
    for rows in [vec![row(T0 + 1_000_000, "", 62.0)], vec![newer]] {
        compactor
            .write(team, user, hr, batch(hr, &rows))
            .await
            .unwrap();
    }
    let inputs = site.segment_files(team, user, hr).await;
    assert_eq!(inputs.len(), 3);
    let folder = dataset_folder(team, user, hr);
    let commits = format!("{}/_commits", user_folder(team, user));

    let report = compactor.compact(team, user, hr).await.unwrap();
    assert_eq!(
        (
            report.segments_merged,
            report.retired_removed,
            report.retirements_waiting
        ),
        (3, 0, 1)
    );
    let files = site.files_in(&folder).await;
    for input in &inputs {
        assert!(
            files.contains(input),
            "{input} removed within its grace period"
        );
        // What a reader that listed it before the compaction does next: fetch it.
        assert!(!site.get(&format!("{folder}/{input}")).await.is_empty());
    }
    assert_eq!(
        files.iter().filter(|f| f.starts_with("_retired-")).count(),
        1,
        "{files:?}"
    );
    assert_eq!(
        site.files_in(&commits).await.len(),
        1,
        "the record still needed"
    );
    // Every store's listing now sees the output alone: one segment read, nothing twice.
    let reader = site.open_at(
        &site.location,
        StoreOptions {
            cache_bytes: 0,
            ..grace(3600)
        },
    );
    let before = reader.metrics();
    let got = one(hr, &reader.read(team, user, hr, None).await.unwrap());
    assert_eq!(floats(&got, "value"), vec![70.0, 62.0]);
    let after = reader.metrics();
    assert_eq!(after.segments_read - before.segments_read, 1);
    assert_eq!(after.rows_replaced - before.rows_replaced, 0);
    // Nothing is merged again while the inputs wait.
    let again = compactor.compact(team, user, hr).await.unwrap();
    assert_eq!((again.segments_merged, again.retirements_waiting), (0, 1));
    // The push's sleep segment is merged away too, and waits likewise.
    let mut later = row(T0, "night", 90.0);
    later.ingested = T0 + 1;
    compactor
        .write(team, user, sleep, batch(sleep, &[later]))
        .await
        .unwrap();
    assert_eq!(
        compactor
            .compact(team, user, sleep)
            .await
            .unwrap()
            .retirements_waiting,
        1
    );

    // Another process whose grace period is over removes them, and releases the record.
    let sweeper = site.open_at(&site.location, grace(0));
    let swept = sweeper.compact(team, user, hr).await.unwrap();
    assert_eq!(
        (
            swept.segments_merged,
            swept.retired_removed,
            swept.retirements_waiting
        ),
        (0, 3, 0)
    );
    let files = site.files_in(&folder).await;
    assert_eq!(files.len(), 1, "the output alone: {files:?}");
    assert!(!inputs.contains(&files[0]));
    // The push's sleep segment, retired but not yet removed, still needs the record.
    assert_eq!(site.files_in(&commits).await.len(), 1);
    assert_eq!(
        sweeper
            .compact(team, user, sleep)
            .await
            .unwrap()
            .retired_removed,
        2
    );
    assert!(site.files_in(&commits).await.is_empty(), "record released");
    for store in [&compactor, &reader, &sweeper] {
        let got = one(hr, &store.read(team, user, hr, None).await.unwrap());
        assert_eq!(floats(&got, "value"), vec![70.0, 62.0]);
        let got = one(sleep, &store.read(team, user, sleep, None).await.unwrap());
        assert_eq!(floats(&got, "efficiency"), vec![90.0]);
    }
}

/// Other engines read the bucket in place (`spec/scale-out.md`, the README's "Running on several
/// machines"): DataFusion, given only the bucket through its own S3 client, a listing table over
/// the store's root with the Hive partition columns and the dataset's published schema, answers
/// a cross-user query (mean heart rate and samples per user and day, across every user of one
/// team). Files of other datasets (another depth, another schema), of the other team and the
/// store's own records are left out by the partitions and the extension.
///
/// `CREATE EXTERNAL TABLE ... PARTITIONED BY` over the root (datafusion-cli) refuses it: it
/// samples the folders and finds summaries (`dataset=sleep/`) and timeseries
/// (`dataset=timeseries/resource=heartrate/`) at different depths. The listing table built
/// here checks each file's partitions instead.
#[tokio::test]
async fn datafusion_reads_the_bucket_in_place_across_users() {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
    use datafusion::datasource::file_format::parquet::ParquetFormat;
    use datafusion::datasource::listing::{
        ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
    };
    use datafusion::prelude::SessionContext;
    use std::sync::Arc;

    let site = Site::new(Backing::S3);
    let store = site.open(StoreOptions::default());
    let (team, other_team) = (Uuid::new_v4(), Uuid::new_v4());
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    let hr = heartrate();
    let sample = |time, bpm| row(time, "", bpm);
    store
        .write(
            team,
            first,
            hr,
            batch(hr, &[sample(T0, 60.0), sample(T0 + 1_000_000, 64.0)]),
        )
        .await
        .unwrap();
    store
        .write(team, first, hr, batch(hr, &[sample(T0 + DAY, 70.0)]))
        .await
        .unwrap();
    // A push across datasets: a sleep segment (another schema) and a commit record beside it.
    store
        .write_push(
            team,
            second,
            night_and_samples(&[(T0, 80.0), (T0 + 5_000_000, 90.0)]),
        )
        .await
        .unwrap();
    store
        .write(other_team, first, hr, batch(hr, &[sample(T0, 100.0)]))
        .await
        .unwrap();

    let ctx = SessionContext::new();
    let bucket = crate::provision::s3_server().bucket.clone();
    let url = url::Url::parse(&format!("s3://{bucket}")).unwrap();
    ctx.register_object_store(&url, Arc::new(store_support::s3_bucket()));
    let partitions = ["team", "user", "dataset", "resource"]
        .map(|key| (key.to_owned(), DataType::Utf8))
        .to_vec();
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(partitions);
    let root = ListingTableUrl::parse(format!("{}/", site.location)).unwrap();
    let config = ListingTableConfig::new(root)
        .with_listing_options(options)
        .with_schema(hr.schema());
    ctx.register_table("segments", Arc::new(ListingTable::try_new(config).unwrap()))
        .unwrap();
    let answer = ctx
        .sql(&format!(
            "SELECT CAST(\"user\" AS VARCHAR) AS u, \
                    CAST(date_trunc('day', \"timestamp\") AS VARCHAR) AS day, \
                    avg(value) AS bpm, count(*) AS samples \
             FROM segments \
             WHERE team = '{team}' AND dataset = 'timeseries' AND resource = 'heartrate' \
             GROUP BY 1, 2 ORDER BY 1, 2"
        ))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut rows = Vec::new();
    for b in &answer {
        let text = |i: usize| datafusion::arrow::compute::cast(b.column(i), &DataType::Utf8);
        let (users, days) = (text(0).unwrap(), text(1).unwrap());
        let (users, days) = (users.as_string::<i32>(), days.as_string::<i32>());
        let (bpm, count) = (
            b.column(2).as_primitive::<Float64Type>(),
            b.column(3).as_primitive::<Int64Type>(),
        );
        for i in 0..b.num_rows() {
            assert!(!users.is_null(i));
            rows.push((
                users.value(i).to_owned(),
                days.value(i)[..10].to_owned(),
                bpm.value(i),
                count.value(i),
            ));
        }
    }
    let day = |us: i64| at(us).format("%Y-%m-%d").to_string();
    let mut expected = vec![
        (first.to_string(), day(T0), 62.0, 2),
        (first.to_string(), day(T0 + DAY), 70.0, 1),
        (second.to_string(), day(T0), 85.0, 2),
    ];
    expected.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    assert_eq!(rows, expected);
}
