//! The command-line operations besides `serve`: importing a push file, generating demo data as
//! Parquet, and running an aggregate request against a data dir. Each goes through the same
//! code path as its HTTP counterpart.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{NaiveDate, Utc};
use datafusion::arrow::compute::concat_batches;
use datafusion::parquet::arrow::ArrowWriter;
use serde_json::Value;
use uuid::Uuid;

use crate::app::{open_health, open_metadata};
use crate::config::StoreArgs;
use crate::data;
use crate::engine::OutputFormat;
use crate::engine::{Engine, Limits};
use crate::ingest::{self, PushUser, demo};
use crate::query;
use crate::store::metadata::{MetadataStore, User};

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
        for body in crate::sync::demo::merge_bodies(bodies) {
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
