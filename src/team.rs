//! A team's aggregate request (`analytics.md` §5): one query over many of a team's users.
//! Validate (the language, then the `users` selector), then, for each user (a few at once),
//! load the datasets the user's part reads and run it on the engine (`engine::TeamRun`, which
//! releases each user's inputs once its part has run), then combine and encode; all within one
//! deadline and the request's one memory pool. What the answer means is the engine's
//! (`engine/team.rs`): the per-user query for each user, combined.
//!
//! The `users` selector: `{"user_ids": [...]}` or `{"client_user_ids": [...]}` (1 to
//! [`MAX_SELECTED`] distinct ids), default every live user of the team. Decisions where the
//! spec is silent: an id that names no live user of the team is a 422 listing the unknown ones
//! (a typo must not quietly shrink a cohort); a repeated id counts once; users are run in
//! creation order (the answer's order comes from its keys, never from this).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::Value;
use uuid::Uuid;

use crate::engine::{self, Engine, EngineError, Member, OutputFormat, TeamRequest};
use crate::loc;
use crate::query::{self, Answered, QueryError};
use crate::store::health::HealthStore;
use crate::store::metadata::{MetadataStore, User};
use crate::validation::read::at;
use crate::validation::{Invalid, Violation};

/// The most ids a `users` selector may name.
pub const MAX_SELECTED: usize = 10_000;

/// Users whose parts load and run at once: enough to keep every engine thread busy while
/// another user's data loads; each holds its inputs meanwhile.
const USERS_IN_FLIGHT: usize = 4;

/// Users listed per metadata read while gathering the team.
const LIST_PAGE: i64 = 1_000;

/// Runs `body` over the users it selects of `team`, within the engine's deadline for the
/// whole request (as [`crate::query::run_measured`] does for one user), answering the encoded
/// bytes in `format` and the bytes of stored data loaded (summed over the users).
pub async fn run_measured(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    body: &Value,
    format: OutputFormat,
    engine: &Engine,
) -> Result<Answered, QueryError> {
    query::within(
        engine,
        engine.deadline(),
        run(meta, store, team, body, format, engine),
    )
    .await
}

async fn run(
    meta: &MetadataStore,
    store: &HealthStore,
    team: Uuid,
    body: &Value,
    format: OutputFormat,
    engine: &Engine,
) -> Result<Answered, QueryError> {
    let limits = engine.limits();
    // Every rule is checked before any data is read.
    let parsed = engine::parse_team_request(body, limits).map_err(EngineError::from)?;
    let request = TeamRequest::new(parsed).map_err(EngineError::from)?;
    let selector = Selector::parse(body.get("users")).map_err(EngineError::from)?;
    let users = selector.pick(team_users(meta, team).await?)?;
    let team_priorities = meta.team_priorities(team).await?;
    let now = chrono::Utc::now();
    let mut run = engine.team_run(&request, format)?;
    let runner = run.runner();
    // A few users in flight: one loads while others run, on every engine thread. In the
    // team's order, so the answer is the same however the work interleaves.
    // (The futures are made first: lazy, and a closure inside the stream would make the
    // request's future higher-ranked over the users' lifetime, which `Send` cannot prove.)
    let work: Vec<_> = users
        .iter()
        .map(|user| {
            one_user(
                store,
                user,
                (&team_priorities, now),
                &request,
                &runner,
                limits,
            )
        })
        .collect();
    let mut parts = futures::stream::iter(work).buffered(USERS_IN_FLIGHT);
    let mut loaded = 0usize;
    while let Some(part) = parts.next().await {
        let (part, held) = part?;
        loaded += held;
        run.keep(part)?;
    }
    drop(parts);
    let results = run.finish().await?;
    let output = tracing::Instrument::instrument(
        engine::encode_blocking(results, format, limits),
        tracing::info_span!("team.encode"),
    )
    .await?;
    Ok(Answered {
        output,
        input_bytes: loaded,
    })
}

/// Loads `user`'s part's inputs and runs it; answers the part and the bytes loaded.
async fn one_user(
    store: &HealthStore,
    user: &User,
    (priorities, now): (&HashMap<String, Vec<String>>, chrono::DateTime<chrono::Utc>),
    request: &TeamRequest,
    runner: &engine::Runner,
    limits: &engine::Limits,
) -> Result<(engine::UserPart, usize), QueryError> {
    let ctx = query::user_context(user, priorities.clone(), now);
    let (inputs, held) = query::load(store, user, request.per_user(), &ctx, limits).await?;
    let user_id = user.id.to_string();
    let member = Member {
        user_id: &user_id,
        client_user_id: Some(&user.client_user_id),
    };
    Ok((runner.run(member, &ctx, inputs).await?, held))
}

/// Every live user of the team, oldest first.
pub async fn team_users(meta: &MetadataStore, team: Uuid) -> Result<Vec<User>, QueryError> {
    let mut users = Vec::new();
    loop {
        let (page, total) = meta.list_users(team, users.len() as i64, LIST_PAGE).await?;
        let done = page.is_empty();
        users.extend(page);
        if done || users.len() as i64 >= total {
            return Ok(users);
        }
    }
}

/// Which of the team's users a team query reads.
#[derive(Debug, Clone, PartialEq)]
enum Selector {
    /// Every live user.
    All,
    /// These ids (wearhouse's, in the canonical hyphenated form).
    UserIds(Vec<String>),
    /// These ids (the team's).
    ClientUserIds(Vec<String>),
}

impl Selector {
    fn parse(v: Option<&Value>) -> Result<Selector, Invalid> {
        let loc = loc!["body", "users"];
        let wrong = |msg: String| Invalid(vec![Violation::value(loc.clone(), msg)]);
        let obj = match v {
            None | Some(Value::Null) => return Ok(Selector::All),
            Some(Value::Object(o)) => o,
            Some(_) => {
                return Err(wrong(
                    "users must be {\"user_ids\": [...]} or {\"client_user_ids\": [...]}".into(),
                ));
            }
        };
        let (key, list) = match (obj.len(), obj.iter().next()) {
            (1, Some((k, Value::Array(list)))) if k == "user_ids" || k == "client_user_ids" => {
                (k.as_str(), list)
            }
            _ => {
                return Err(wrong(
                    "users must hold exactly one of user_ids or client_user_ids, an array of ids"
                        .into(),
                ));
            }
        };
        if list.is_empty() || list.len() > MAX_SELECTED {
            return Err(Invalid(vec![Violation::value(
                at(&loc, key),
                format!(
                    "{key} must name 1 to {MAX_SELECTED} users, found {}",
                    list.len()
                ),
            )]));
        }
        let mut bad = Vec::new();
        let mut ids = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let parsed = match (key, item.as_str()) {
                ("user_ids", Some(s)) => Uuid::parse_str(s).ok().map(|u| u.to_string()),
                (_, Some(s)) if !s.is_empty() => Some(s.to_owned()),
                _ => None,
            };
            match parsed {
                Some(id) => ids.push(id),
                None => bad.push(
                    Violation::value(
                        at(&at(&loc, key), i),
                        match key {
                            "user_ids" => "a user id is a UUID string",
                            _ => "a client user id is a non-empty string",
                        },
                    )
                    .with_input(item.clone()),
                ),
            }
        }
        if !bad.is_empty() {
            return Err(Invalid(bad));
        }
        let mut seen = HashSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        Ok(match key {
            "user_ids" => Selector::UserIds(ids),
            _ => Selector::ClientUserIds(ids),
        })
    }

    /// The selected users among the team's, in the team's order; an id naming none of them is
    /// a 422 naming it.
    fn pick(&self, users: Vec<User>) -> Result<Vec<User>, QueryError> {
        let (key, wanted): (&str, Vec<String>) = match self {
            Selector::All => return Ok(users),
            Selector::UserIds(ids) => ("user_ids", ids.clone()),
            Selector::ClientUserIds(ids) => ("client_user_ids", ids.clone()),
        };
        let id_of = |u: &User| match self {
            Selector::ClientUserIds(_) => u.client_user_id.clone(),
            _ => u.id.to_string(),
        };
        let known: HashSet<String> = users.iter().map(id_of).collect();
        let unknown: Vec<&String> = wanted.iter().filter(|id| !known.contains(*id)).collect();
        if !unknown.is_empty() {
            let shown: Vec<&str> = unknown.iter().take(10).map(|s| s.as_str()).collect();
            let more = match unknown.len() {
                n if n > 10 => format!(" and {} more", n - 10),
                _ => String::new(),
            };
            return Err(EngineError::from(Invalid(vec![Violation::value(
                loc!["body", "users", key],
                format!(
                    "no live user of this team has these ids: {}{more}",
                    shown.join(", ")
                ),
            )]))
            .into());
        }
        let wanted: HashSet<String> = wanted.into_iter().collect();
        Ok(users
            .into_iter()
            .filter(|u| wanted.contains(&id_of(u)))
            .collect())
    }
}

/// The team queries running now, per team: a team may run at most `limit` at once (each can
/// read every user's data), the next one is refused until one ends. In memory: a count of
/// requests in flight on this process, not state that must survive it.
#[derive(Debug, Clone, Default)]
pub struct Running {
    counts: Arc<Mutex<HashMap<Uuid, usize>>>,
}

/// A running team query's place; freed when dropped (answered, failed or cancelled).
#[derive(Debug)]
pub struct Slot {
    running: Running,
    team: Uuid,
}

impl Running {
    /// A place for one more of `team`'s queries, or `None` when `limit` already run.
    pub fn enter(&self, team: Uuid, limit: usize) -> Option<Slot> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(team).or_insert(0);
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(Slot {
            running: self.clone(),
            team,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self
            .running
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.team) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.team);
            }
        }
    }
}
