//! The team's views for Flight SQL: one DataFusion table per stored dataset, holding every
//! live user's rows of it with `user_id` and `client_user_id` first. A session is built per
//! request for one team: its tables can only ever read that team's folders.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use uuid::Uuid;

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

/// A dataset's storage schema with the user's two ids first.
fn view_schema(d: Dataset) -> SchemaRef {
    let ids = [
        Field::new("user_id", DataType::Utf8, false),
        Field::new("client_user_id", DataType::Utf8, false),
    ];
    let fields: Vec<Arc<Field>> = ids
        .into_iter()
        .map(Arc::new)
        .chain(d.schema().fields().iter().cloned())
        .collect();
    Arc::new(Schema::new(fields))
}

/// A session over `team`'s views, for these of its users, its operators' memory bounded by
/// the query memory limit.
pub fn session(
    team: Uuid,
    users: Vec<User>,
    health: &HealthStore,
    limits: &Limits,
) -> Result<SessionContext> {
    let config = SessionConfig::new()
        .with_default_catalog_and_schema(super::CATALOG, super::SCHEMA)
        .with_create_default_catalog_and_schema(true)
        .with_information_schema(false);
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(limits.memory_limit_bytes, 1.0)
        .build_arc()?;
    let session = SessionContext::new_with_config_rt(config, runtime);
    let users = Arc::new(users);
    for (name, dataset) in views() {
        let view = TeamView {
            team,
            dataset,
            schema: view_schema(dataset),
            users: users.clone(),
            health: health.clone(),
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
}

#[async_trait]
impl TableProvider for TeamView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    /// Reads every user's rows of the dataset (only when a query scans the view).
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut batches = Vec::new();
        for user in self.users.iter() {
            let stored = self
                .health
                .read(self.team, user.id, self.dataset, None)
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            for batch in stored {
                batches.push(self.with_ids(&batch, user)?);
            }
        }
        MemTable::try_new(self.schema.clone(), vec![batches])?
            .scan(state, projection, filters, limit)
            .await
    }
}

impl TeamView {
    /// A stored batch with the user's ids in front.
    fn with_ids(&self, batch: &RecordBatch, user: &User) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let id = user.id.to_string();
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![id.as_str(); rows])),
            Arc::new(StringArray::from(vec![user.client_user_id.as_str(); rows])),
        ];
        columns.extend(batch.columns().iter().cloned());
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}
