//! Object storage shared by processes: versions shared through PostgreSQL, merged inputs
//! readable for the grace period, and DataFusion reading the bucket in place.

use std::time::Duration;

use super::support::{
    Backing, DAY, Site, T0, at, batch, dataset_folder, floats, heartrate, ids, night_and_samples,
    one, row, user_folder,
};
use uuid::Uuid;
use wearhouse::schema::{Dataset, Table};
use wearhouse::store::health::{HealthStore, StoreOptions};

/// A push across two datasets: the sleep record `night` (efficiency 80) and heart-rate
/// `samples` (time in µs, bpm).
/// Two processes' stores on one bucket, their versions shared through the machine's
/// PostgreSQL: a write or a deletion acknowledged by one is seen by the other's next read, even
/// where that one holds the dataset cached. A store that does not share stays stale, which is
/// why the versions exist.
#[tokio::test]
async fn stores_sharing_a_bucket_see_each_others_writes_through_shared_versions() {
    let db = crate::jobs::support::Db::postgres().await;
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
    let bucket = crate::support::provision::s3_server().bucket.clone();
    let url = url::Url::parse(&format!("s3://{bucket}")).unwrap();
    ctx.register_object_store(&url, Arc::new(super::support::s3_bucket()));
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
