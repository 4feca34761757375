//! The team's views for Flight SQL: one DataFusion table per stored dataset, holding every
//! live user's rows of it with `user_id` and `client_user_id` first. A session is built per
//! request for one team: its tables can only ever read that team's folders.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::{StreamExt, TryStreamExt};
use uuid::Uuid;

use crate::distributed::{Cluster, ScanUser, StoreScanExec, view_schema};

use crate::engine::Limits;
use crate::schema::{Dataset, RESOURCES, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::User;

/// Every view: its name and dataset.
fn views() -> Vec<(String, Dataset)> {
    let tables = Table::ALL.into_iter().map(|t| {
        let name = match t {
            Table::Workout => "workouts".to_owned(),
            other => other.name().to_owned(),
        };
        (name, Dataset::Table(t))
    });
    let series = RESOURCES
        .iter()
        .map(|r| (format!("timeseries_{}", r.name), Dataset::Timeseries(*r)));
    tables.chain(series).collect()
}

/// Every view with its schema, for `GetTables`.
pub fn catalogue() -> Vec<(String, Schema)> {
    views()
        .into_iter()
        .map(|(name, d)| (name, view_schema(d).as_ref().clone()))
        .collect()
}

/// A session over `team`'s views, for these of its users, its operators' memory bounded by
/// the query memory limit; planned across `cluster`'s workers when one is given (its large
/// scans then run there: `crate::distributed`).
pub fn session(
    team: Uuid,
    users: Vec<User>,
    health: &HealthStore,
    limits: &Limits,
    cluster: Option<&Cluster>,
) -> Result<SessionContext> {
    let config = SessionConfig::new()
        .with_default_catalog_and_schema(super::CATALOG, super::SCHEMA)
        .with_create_default_catalog_and_schema(true)
        .with_information_schema(false);
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_limit_bytes, 1.0)
        .build_arc()?;
    let session = match cluster {
        Some(cluster) => {
            SessionContext::new_with_state(cluster.session_state(config, runtime, health)?)
        }
        None => SessionContext::new_with_config_rt(config, runtime),
    };
    let users = Arc::new(users);
    let distribute_above = cluster.map(Cluster::distribute_above);
    for (name, dataset) in views() {
        let view = TeamView {
            team,
            dataset,
            schema: view_schema(dataset),
            users: users.clone(),
            health: health.clone(),
            distribute_above,
        };
        session.register_table(name.as_str(), Arc::new(view))?;
    }
    Ok(session)
}

/// One dataset of every user of one team.
#[derive(Debug)]
struct TeamView {
    team: Uuid,
    dataset: Dataset,
    schema: SchemaRef,
    users: Arc<Vec<User>>,
    health: HealthStore,
    /// With workers: the stored bytes from which a scan is distributed (each user's bytes are
    /// then measured when the view is scanned).
    distribute_above: Option<u64>,
}

/// Users whose stored bytes are listed at once when a scan is weighed.
const SIZES_IN_FLIGHT: usize = 16;

#[async_trait]
impl TableProvider for TeamView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    /// The store's scan of the dataset for every user (rows are read only when it runs).
    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let users: Vec<ScanUser> = self
            .users
            .iter()
            .map(|u| ScanUser {
                id: u.id,
                client_user_id: u.client_user_id.clone(),
                bytes: 0,
            })
            .collect();
        let users = match self.distribute_above {
            None => users,
            // (The futures are made first: a closure inside the stream would make the future
            // higher-ranked over the users' lifetime, which `Send` cannot prove.)
            Some(_) => {
                let sized: Vec<_> = users.into_iter().map(|user| self.sized(user)).collect();
                futures::stream::iter(sized)
                    .buffered(SIZES_IN_FLIGHT)
                    .try_collect()
                    .await?
            }
        };
        let scan = StoreScanExec::new(
            self.team,
            self.dataset,
            projection.cloned(),
            vec![users],
            self.distribute_above.unwrap_or(u64::MAX),
            self.health.clone(),
        )?;
        Ok(Arc::new(scan))
    }
}

impl TeamView {
    /// `user` with its stored bytes of the view's dataset.
    async fn sized(&self, mut user: ScanUser) -> Result<ScanUser> {
        user.bytes = self
            .health
            .stored_bytes(self.team, user.id, self.dataset)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(user)
    }
}
