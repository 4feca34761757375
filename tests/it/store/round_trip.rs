//! Reads: every table and family round trips, a newer version replaces the older, a window reads
//! only what overlaps it, locations and schemas are checked, date-indexed tables are windowed by
//! UTC midnight, a removed folder is recreated, and sources are read and compacted apart.

use super::support::{
    Backing, DAY, Site, T0, at, batch, dataset_folder, floats, heartrate, ids, one, row, times,
};
use wearhouse::schema::{Dataset, Table, resource};
use wearhouse::store::health::{HealthStore, StoreError, StoreOptions};

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

crate::on_every_backing!(
    every_table_and_family_round_trips_sorted_by_time,
    a_newer_version_replaces_the_older_before_and_after_compaction,
    a_one_day_window_reads_only_the_segments_and_row_groups_overlapping_it,
    date_indexed_tables_are_windowed_by_midnight_utc_and_nothing_is_pruned_unsafely,
    a_folder_removed_behind_the_stores_back_is_recreated_on_write,
    timeseries_reads_come_back_one_source_per_batch_each_sorted_by_time,
    overlapping_sources_are_resolved_apart_and_compacted_apart,
);
