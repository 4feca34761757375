//! The command-line operations besides `serve`: importing a push file, generating demo data as
//! Parquet, running an aggregate request against a data dir, managing a team's API keys and
//! inspecting its continuous queries.
//! Each goes through the same code path as its HTTP counterpart.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{NaiveDate, Utc};
use datafusion::arrow::compute::concat_batches;
use datafusion::parquet::arrow::ArrowWriter;
use serde_json::Value;
use uuid::Uuid;

use crate::app::{open_health, open_metadata};
use crate::config::{CqCommand, KeysCommand, StoreArgs};
use crate::data;
use crate::engine::OutputFormat;
use crate::engine::{Engine, Limits};
use crate::ingest::{self, PushUser};
use crate::keys::{self, KeysError, NewKeyRequest, RotateKeyRequest, TeamKey};
use crate::loc;
use crate::query;
use crate::store::metadata::{MetadataStore, Team, User};
use crate::sync::connectors::demo::generator as demo;
use crate::validation::Checks;

/// Finds a user by id, or by client user id within a team given by id or name.
async fn find_user(meta: &MetadataStore, team: Option<&str>, user: &str) -> anyhow::Result<User> {
    let team_id = match team {
        None => None,
        Some(t) => Some(match t.parse::<Uuid>() {
            Ok(id) => id,
            Err(_) => {
                meta.team_by_name(t)
                    .await?
                    .with_context(|| format!("no team named {t:?}"))?
                    .id
            }
        }),
    };
    if let Ok(id) = user.parse::<Uuid>() {
        let teams = match team_id {
            Some(t) => vec![t],
            None => meta.list_teams().await?.into_iter().map(|t| t.id).collect(),
        };
        for t in teams {
            if let Some(found) = meta.user(t, id).await? {
                return Ok(found);
            }
        }
    }
    let Some(team_id) = team_id else {
        bail!("user {user:?} not found (give --team to look up a client user id)");
    };
    meta.user_by_client_id(team_id, user)
        .await?
        .with_context(|| format!("user {user:?} not found in team {team_id}"))
}

/// `wearhouse import`: pushes a file in the push API's shape for one user.
pub async fn import(
    store: &StoreArgs,
    team: &str,
    user: &str,
    file: &Path,
) -> anyhow::Result<Value> {
    let meta = open_metadata(store).await?;
    let health = open_health(store, &meta)?;
    let user = find_user(&meta, Some(team), user).await?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let body: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    match data::push(&meta, &health, &user, &body, Utc::now()).await {
        Ok(counts) => Ok(counts),
        Err(data::DataError::Invalid(invalid)) => {
            bail!(
                "rejected, nothing stored:\n{}",
                serde_json::to_string_pretty(&invalid.0)?
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// `wearhouse demo generate`: writes the demo generator's data as one Parquet file per dataset
/// (`DIR/sleep.parquet`, `DIR/timeseries/heartrate.parquet`, ...), every provider's rows
/// together. Returns the files written.
pub fn demo_generate(
    out: &Path,
    providers: &[String],
    persona: demo::Persona,
    seed: u64,
    end: NaiveDate,
    days: u32,
) -> anyhow::Result<Vec<(PathBuf, usize)>> {
    let mut by_dataset: std::collections::BTreeMap<String, (crate::schema::Dataset, Vec<_>)> =
        Default::default();
    let now = Utc::now();
    for provider in providers {
        let bodies = demo::generate(provider, persona, seed, end, days)?;
        for body in crate::sync::connectors::demo::merge_bodies(bodies) {
            let parsed = ingest::parse_push(&body, &PushUser::default(), now)
                .map_err(|e| anyhow::anyhow!("generated data failed validation: {e}"))?;
            for (dataset, batch) in parsed.batches {
                by_dataset
                    .entry(dataset.path())
                    .or_insert_with(|| (dataset, Vec::new()))
                    .1
                    .push(batch);
            }
        }
    }
    let mut written = Vec::new();
    for (path, (dataset, batches)) in by_dataset {
        let batch = concat_batches(&dataset.schema(), &batches)?;
        let file_path = out.join(format!("{path}.parquet"));
        if let Some(dir) = file_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(&file_path)
            .with_context(|| format!("creating {}", file_path.display()))?;
        let mut writer = ArrowWriter::try_new(file, dataset.schema(), None)?;
        writer.write(&batch)?;
        writer.close()?;
        written.push((file_path, batch.num_rows()));
    }
    Ok(written)
}

/// `wearhouse query`: runs a request file for a user of the data dir; the answer's bytes (JSON
/// text or the Parquet tarball).
pub async fn run_query(
    store: &StoreArgs,
    team: Option<&str>,
    user: &str,
    request: &Path,
    format: OutputFormat,
) -> anyhow::Result<Vec<u8>> {
    let meta = open_metadata(store).await?;
    let health = open_health(store, &meta)?;
    let user = find_user(&meta, team, user).await?;
    let text = std::fs::read_to_string(request)
        .with_context(|| format!("reading {}", request.display()))?;
    let body: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", request.display()))?;
    let engine = Engine::new(Limits::default())?;
    match query::run(&meta, &health, &user, &body, format, &engine).await {
        Ok(out) => Ok(out),
        Err(query::QueryError::Engine(crate::engine::EngineError::Invalid(invalid))) => {
            bail!(
                "invalid request:\n{}",
                serde_json::to_string_pretty(&invalid.0)?
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// `wearhouse lab import-pscs`: replaces the centres of every lab named in the CSV file; the
/// number of centres per lab.
pub async fn import_pscs(store: &StoreArgs, file: &Path) -> anyhow::Result<Vec<(String, usize)>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let centres = match crate::lab::area::import::parse(&text) {
        Ok(c) => c,
        Err(errors) => bail!(
            "{} rejected, nothing imported:\n{}",
            file.display(),
            errors.join("\n")
        ),
    };
    let meta = open_metadata(store).await?;
    let mut tx = meta.begin().await?;
    crate::store::metadata::lab::pscs::replace(&mut tx, &centres).await?;
    tx.commit().await?;
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for c in &centres {
        *counts.entry(c.lab_slug.clone()).or_default() += 1;
    }
    Ok(counts.into_iter().collect())
}

/// Finds a team by id or name.
async fn find_team(meta: &MetadataStore, team: &str) -> anyhow::Result<Team> {
    let found = match team.parse::<Uuid>() {
        Ok(id) => meta.team(id).await?,
        Err(_) => meta.team_by_name(team).await?,
    };
    found.with_context(|| format!("no team {team:?} (give its id or name)"))
}

/// One line of `wearhouse keys list`: tab-separated, `-` for what is unset.
fn key_line(key: &TeamKey) -> String {
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    [
        key.id.to_string(),
        key.name.clone(),
        key.status.as_str().to_owned(),
        or_dash(&key.hint),
        key.created_at.clone(),
        or_dash(&key.last_used_at),
        or_dash(&key.expires_at),
        or_dash(&key.revoked_at),
    ]
    .join("\t")
}

/// `wearhouse keys list|create|revoke|rotate`: one operation on a team's API keys through the
/// same functions as `/v2/team/keys`; the text to print (a secret only for create and rotate).
pub async fn keys(command: KeysCommand) -> anyhow::Result<String> {
    let (KeysCommand::List { team, store }
    | KeysCommand::Create { team, store, .. }
    | KeysCommand::Revoke { team, store, .. }
    | KeysCommand::Rotate { team, store, .. }) = &command;
    let meta = open_metadata(store).await?;
    let team = find_team(&meta, team).await?;
    let checks = || Checks::new(loc![]);
    let done = match command {
        KeysCommand::List { .. } => keys::list(&meta, team.id).await.map(|list| {
            list.keys
                .iter()
                .map(key_line)
                .collect::<Vec<_>>()
                .join("\n")
        }),
        KeysCommand::Create { name, .. } => {
            keys::create(&meta, team.id, NewKeyRequest { name }, checks())
                .await
                .map(|k| {
                    format!(
                        "key_id: {}\nname: {}\napi_key: {}",
                        k.key.id, k.key.name, k.secret
                    )
                })
        }
        KeysCommand::Revoke { key_id, .. } => keys::revoke(&meta, team.id, key_id)
            .await
            .map(|k| format!("key_id: {}\nstatus: {}", k.id, k.status.as_str())),
        KeysCommand::Rotate {
            key_id,
            overlap_seconds,
            ..
        } => {
            let req = RotateKeyRequest {
                overlap_seconds: Some(overlap_seconds),
            };
            keys::rotate(&meta, team.id, key_id, req, checks())
                .await
                .map(|k| {
                    format!(
                        "key_id: {}\nname: {}\napi_key: {}\nprevious_key_id: {}\nprevious_key_expires_at: {}",
                        k.key.id,
                        k.key.name,
                        k.secret,
                        k.previous.id,
                        k.previous.expires_at.unwrap_or_default()
                    )
                })
        }
    };
    meta.close().await;
    match done {
        Ok(text) => Ok(text),
        Err(KeysError::Invalid(invalid)) => bail!(
            "rejected: {}",
            invalid
                .0
                .iter()
                .map(|v| v.msg.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Err(KeysError::KeyNotFound) => bail!("no such key in team {} ({})", team.name, team.id),
        Err(e) => Err(e.into()),
    }
}

/// `wearhouse cq list|show|validate`: the team's continuous queries through the same functions
/// as `/aggregate/v1/continuous_query`; the text to print (JSON for show and validate).
pub async fn cq(command: CqCommand) -> anyhow::Result<String> {
    use crate::continuous::{ContinuousError, manage};
    let rejected = |e: ContinuousError| match e {
        ContinuousError::Invalid(invalid) => anyhow::anyhow!(
            "rejected: {}",
            invalid
                .0
                .iter()
                .map(|v| format!("{}: {}", loc_text(&v.loc), v.msg))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        e => anyhow::anyhow!(e),
    };
    match command {
        CqCommand::Validate { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let body: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let engine = Engine::new(Limits::default())?;
            let answer = manage::validate(&engine, &body).await.map_err(rejected)?;
            Ok(serde_json::to_string_pretty(&answer)?)
        }
        CqCommand::List { team, store } => {
            let meta = open_metadata(&store).await?;
            let team = find_team(&meta, &team).await?;
            let list = manage::list(&meta, team.id).await.map_err(rejected);
            meta.close().await;
            Ok(list?
                .iter()
                .map(|q| {
                    format!(
                        "{}\t{}\t{}\t{}/{}\t{}",
                        q.id, q.slug, q.status, q.evaluation.evaluated, q.evaluation.users, q.title
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"))
        }
        CqCommand::Show { team, query, store } => {
            let meta = open_metadata(&store).await?;
            let team = find_team(&meta, &team).await?;
            let shown = manage::get(&meta, team.id, &query).await;
            meta.close().await;
            match shown {
                Ok(q) => Ok(serde_json::to_string_pretty(&q)?),
                Err(ContinuousError::NotFound) => {
                    bail!(
                        "no continuous query {query:?} in team {} ({})",
                        team.name,
                        team.id
                    )
                }
                Err(e) => Err(rejected(e)),
            }
        }
    }
}

/// A violation's location as `body.query.select.1`.
fn loc_text(loc: &[crate::validation::Loc]) -> String {
    loc.iter()
        .map(|l| match l {
            crate::validation::Loc::Key(k) => k.clone(),
            crate::validation::Loc::Index(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}
