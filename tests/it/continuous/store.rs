//! The continuous-query tables on SQLite and PostgreSQL: changes widen one range and count,
//! an evaluation clears only the changes it saw and is fenced by the version it read, one open
//! task per pair, slugs unique among active queries, progress and history paging.

use chrono::{Duration, Utc};
use uuid::Uuid;
use wearhouse::store::metadata::MetadataStore;
use wearhouse::store::metadata::continuous::{
    self as rows, Commit, Evaluated, NewResult, ResultRef, StoredQuery, UserState,
};

fn query(team: Uuid, slug: &str) -> StoredQuery {
    let now = Utc::now();
    StoredQuery {
        id: Uuid::new_v4(),
        team_id: team,
        slug: slug.to_owned(),
        title: "t".to_owned(),
        status: "active".to_owned(),
        definition: "{}".to_owned(),
        result_table_schema: "{}".to_owned(),
        resource_dependencies: "[\"timeseries/heartrate\"]".to_owned(),
        created_at: now,
        updated_at: now,
    }
}

/// Commits `e` for the pair and answers how it went with the state after it.
async fn commit(
    conn: &mut sqlx::AnyConnection,
    pair: (Uuid, Uuid),
    e: &Evaluated,
) -> (Commit, UserState) {
    let committed = rows::commit_evaluation(conn, pair, e).await.unwrap();
    let state = rows::user_state(conn, pair.0, pair.1)
        .await
        .unwrap()
        .unwrap();
    (committed, state)
}

const DONE: Commit = Commit::Done {
    changes_waiting: false,
};

async fn exercise(meta: &MetadataStore) {
    let (team, _) = meta.create_team("acme").await.unwrap();
    let (other, _) = meta.create_team("globex").await.unwrap();
    let user = crate::support::new_user(meta, team.id, "u").await;
    let mut conn = meta.writer().await.unwrap();
    let mut q = query(team.id, "daily");
    assert!(rows::insert_query(&mut conn, &q).await.unwrap());
    assert!(
        !rows::insert_query(&mut conn, &query(team.id, "daily"))
            .await
            .unwrap(),
        "slug taken"
    );
    let ids = (q.id, team.id, user.id);

    let s = rows::mark_dirty(&mut conn, ids, Some((100, 200)))
        .await
        .unwrap();
    assert_eq!(
        (s.dirty, s.dirty_all, s.dirty_seq, s.version),
        (Some((100, 200)), false, 1, 0)
    );
    let s = rows::mark_dirty(&mut conn, ids, Some((50, 150)))
        .await
        .unwrap();
    assert_eq!((s.dirty, s.dirty_seq), (Some((50, 200)), 2));
    let s = rows::mark_dirty(&mut conn, ids, Some((300, 400)))
        .await
        .unwrap();
    assert_eq!(s.dirty, Some((50, 400)));

    let t1 = rows::schedule_task(&mut conn, ids, Utc::now())
        .await
        .unwrap();
    let t2 = rows::schedule_task(&mut conn, ids, Utc::now())
        .await
        .unwrap();
    assert_eq!(t1.id, t2.id, "one open task per pair");

    // An evaluation that saw seq 3 while a fourth change arrived keeps the change pending.
    let seen = s.dirty_seq;
    rows::mark_dirty(&mut conn, ids, None).await.unwrap();
    let e = Evaluated {
        read_version: 0,
        result: Some(NewResult::File("f1".into())),
        seen_seq: seen,
        at: Utc::now(),
    };
    let pair = (q.id, user.id);
    let (committed, s) = commit(&mut conn, pair, &e).await;
    let waiting = Commit::Done {
        changes_waiting: true,
    };
    assert_eq!(committed, waiting, "the change after the snapshot stays");
    assert_eq!(
        (s.version, &s.result),
        (1, &Some(ResultRef::File("f1".into())))
    );
    assert!(s.is_dirty());
    // A stale evaluation (it read version 0) cannot commit over version 1.
    assert_eq!(commit(&mut conn, pair, &e).await.0, Commit::Superseded);
    assert_eq!(
        rows::inline_result(&mut conn, q.id, user.id).await.unwrap(),
        None
    );
    // The table moves inline: the file is no longer named.
    let e = Evaluated {
        read_version: 1,
        seen_seq: s.dirty_seq,
        result: Some(NewResult::Inline(vec![1, 2, 0, 255])),
        ..e
    };
    let (committed, s) = commit(&mut conn, pair, &e).await;
    assert_eq!(committed, DONE);
    assert!(!s.is_dirty());
    assert_eq!((s.version, &s.result), (2, &Some(ResultRef::Inline)));
    // An evaluation that changed nothing keeps the table and its version.
    rows::mark_dirty(&mut conn, ids, Some((1, 2)))
        .await
        .unwrap();
    let unchanged = Evaluated {
        read_version: 2,
        seen_seq: s.dirty_seq + 1,
        result: None,
        ..e
    };
    let (committed, s) = commit(&mut conn, pair, &unchanged).await;
    assert_eq!(committed, DONE);
    assert!(!s.is_dirty());
    assert_eq!((s.version, &s.result), (2, &Some(ResultRef::Inline)));
    assert_eq!(
        rows::inline_result(&mut conn, q.id, user.id).await.unwrap(),
        Some(vec![1, 2, 0, 255])
    );
    let p = rows::progress(&mut conn, q.id).await.unwrap();
    assert_eq!((p.users, p.evaluated, p.pending), (1, 1, 0));

    // History: 5 tasks, paged newest first. The open one ends with its start and end at once
    // (an incremental evaluation's one commit); then none is open.
    let started = chrono::DateTime::from_timestamp(1_764_000_000, 0).unwrap();
    let ended = started + Duration::milliseconds(3);
    assert!(
        rows::complete_open_task(&mut conn, pair, started, ended)
            .await
            .unwrap()
    );
    assert!(
        !rows::complete_open_task(&mut conn, pair, started, ended)
            .await
            .unwrap()
    );
    for i in 0..4 {
        let t = rows::schedule_task(&mut conn, ids, Utc::now() + Duration::seconds(i))
            .await
            .unwrap();
        rows::set_task(&mut conn, t.id, "skipped", None, None, Some("why"))
            .await
            .unwrap();
    }
    let page = rows::tasks(&mut conn, (q.id, user.id), None, 3)
        .await
        .unwrap();
    assert_eq!(
        page.iter().map(|t| t.seq).collect::<Vec<_>>(),
        vec![5, 4, 3]
    );
    let rest = rows::tasks(&mut conn, (q.id, user.id), Some(3), 3)
        .await
        .unwrap();
    assert_eq!(rest.iter().map(|t| t.seq).collect::<Vec<_>>(), vec![2, 1]);
    assert_eq!(rest[1].id, t1.id);
    assert_eq!(rest[1].status, "completed");
    assert_eq!(
        (rest[1].started_at, rest[1].ended_at),
        (Some(started), Some(ended))
    );

    // Archived: the slug is free again; by slug the active one wins.
    q.status = "archived".to_owned();
    rows::update_query(&mut conn, &q).await.unwrap();
    let again = query(team.id, "daily");
    assert!(rows::insert_query(&mut conn, &again).await.unwrap());
    let found = rows::query(&mut conn, team.id, "daily")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, again.id);
    assert_eq!(
        rows::queries(&mut conn, team.id, true).await.unwrap().len(),
        1
    );
    assert_eq!(
        rows::queries(&mut conn, team.id, false)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        rows::query(&mut conn, other.id, &q.id.to_string())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        rows::team_user_ids(&mut conn, team.id, None, 10)
            .await
            .unwrap(),
        vec![user.id]
    );
    assert_eq!(
        rows::team_user_ids(&mut conn, team.id, Some(user.id), 10)
            .await
            .unwrap(),
        Vec::<Uuid>::new()
    );
}

crate::support::backends::on_both_metadata_backends!(
    continuous_rows_on_sqlite,
    continuous_rows_on_postgres,
    exercise,
    "wearhouse_cq"
);
