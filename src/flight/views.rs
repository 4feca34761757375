//! The team's views for Flight SQL: one DataFusion table per stored dataset, holding every
//! live user's rows of it with `user_id` and `client_user_id` first, and `derived_readiness`,
//! each user's days computed by the per-user engine. A session is built per request for one
//! team: its tables can only ever read that team's folders.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::expr::{Between, BinaryExpr};
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::{StreamExt, TryStreamExt};
use uuid::Uuid;

use crate::distributed::{Cluster, ScanUser, StoreScanExec, view_schema};

use serde_json::json;

use crate::engine::{Engine, OutputFormat};
use crate::schema::{Dataset, Derived, RESOURCES, Table};
use crate::store::health::HealthStore;
use crate::store::metadata::{MetadataStore, User};

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
    let mut all: Vec<(String, Schema)> = views()
        .into_iter()
        .map(|(name, d)| (name, view_schema(d).as_ref().clone()))
        .collect();
    all.push((
        READINESS_VIEW.to_owned(),
        readiness_schema().as_ref().clone(),
    ));
    all
}

/// A session over `team`'s views, for these of its users, its operators' memory bounded by
/// the query memory limit; planned across `cluster`'s workers when one is given (its large
/// scans then run there: `crate::distributed`).
pub fn session(
    team: Uuid,
    users: Vec<User>,
    health: &HealthStore,
    engines: &Engines,
    cluster: Option<&Cluster>,
) -> Result<SessionContext> {
    let limits = engines.engine.limits();
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
    let readiness = ReadinessView {
        team,
        users,
        health: health.clone(),
        engines: engines.clone(),
        schema: readiness_schema(),
    };
    session.register_table(READINESS_VIEW, Arc::new(readiness))?;
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

    /// A timeseries view takes bounds on `timestamp` (comparisons with an instant, `BETWEEN`):
    /// the store then reads only the segments they overlap. Inexact: the filters still run
    /// above the scan, which only has to return at least their rows.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let series = matches!(self.dataset, Dataset::Timeseries(_));
        Ok(filters
            .iter()
            .map(|f| match series && time_bound(f).is_some() {
                true => TableProviderFilterPushDown::Inexact,
                false => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    /// The store's scan of the dataset for every user (rows are read only when it runs).
    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let window = match self.dataset {
            Dataset::Timeseries(_) => filters
                .iter()
                .filter_map(time_bound)
                .reduce(|a, b| (a.0.max(b.0), a.1.min(b.1))),
            Dataset::Table(_) => None,
        };
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
            (projection.cloned(), window),
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

/// The time range (µs, half-open) a filter on `timestamp` keeps, when it is a comparison of the
/// column with an instant or a `BETWEEN` two instants; a superset where the instant is finer
/// than a microsecond.
fn time_bound(filter: &Expr) -> Option<(i64, i64)> {
    let is_time = |e: &Expr| matches!(e, Expr::Column(c) if c.name == "timestamp");
    // Just past `µs` (a floor): the first microsecond an end bound can leave out.
    let after = |(us, exact): (i64, bool)| us.saturating_add(1 - i64::from(exact));
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, instant) = match (is_time(left), is_time(right)) {
                (true, false) => (*op, micros_of(right)?),
                (false, true) => (op.swap()?, micros_of(left)?),
                _ => return None,
            };
            match op {
                Operator::Eq => Some((instant.0, instant.0.saturating_add(1))),
                Operator::Gt | Operator::GtEq => Some((instant.0, i64::MAX)),
                Operator::Lt => Some((i64::MIN, after(instant))),
                Operator::LtEq => Some((i64::MIN, instant.0.saturating_add(1))),
                _ => None,
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time(expr) => Some((micros_of(low)?.0, micros_of(high)?.0.saturating_add(1))),
        _ => None,
    }
}

/// An instant literal in µs since the epoch (rounded down), and whether that is exact.
fn micros_of(e: &Expr) -> Option<(i64, bool)> {
    let Expr::Literal(value, _) = e else {
        return None;
    };
    match value {
        ScalarValue::TimestampSecond(Some(v), _) => Some((v.checked_mul(1_000_000)?, true)),
        ScalarValue::TimestampMillisecond(Some(v), _) => Some((v.checked_mul(1_000)?, true)),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some((*v, true)),
        ScalarValue::TimestampNanosecond(Some(v), _) => {
            Some((v.div_euclid(1_000), v.rem_euclid(1_000) == 0))
        }
        _ => None,
    }
}

/// The name of the derived view.
pub const READINESS_VIEW: &str = "derived_readiness";

/// What the `derived_readiness` view computes with: the per-user engine and its stores.
#[derive(Clone)]
pub struct Engines {
    /// The team's priorities, read per user as the per-user endpoint reads them.
    pub meta: MetadataStore,
    /// The engine the per-user endpoint runs on.
    pub engine: Engine,
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines").finish_non_exhaustive()
    }
}

/// The `derived_readiness` view's schema: the user's ids, then the table's queryable columns.
pub fn readiness_schema() -> SchemaRef {
    let ids = [
        Field::new("user_id", DataType::Utf8, false),
        Field::new("client_user_id", DataType::Utf8, false),
    ];
    let columns = Derived::Readiness
        .columns()
        .iter()
        .map(|c| Field::new(c.name, c.kind.data_type(), c.name != "date"));
    Arc::new(Schema::new(
        ids.into_iter().chain(columns).collect::<Vec<_>>(),
    ))
}

/// `derived_readiness` for every user: each user's days computed by the per-user engine exactly
/// as `POST /aggregate/v1/user/{id}/query` computes them (the user's zone, the team's priorities,
/// the baseline), over every day the user's inputs cover. Computed on this node when a
/// statement scans it (a derived table has nothing stored for a worker to read).
#[derive(Debug)]
struct ReadinessView {
    team: Uuid,
    users: Arc<Vec<User>>,
    health: HealthStore,
    engines: Engines,
    schema: SchemaRef,
}

/// The stored inputs whose extent bounds a user's readiness days.
fn readiness_inputs() -> Vec<Dataset> {
    let series = ["heartrate", "hrv"]
        .into_iter()
        .filter_map(crate::schema::resource)
        .map(Dataset::Timeseries);
    [Table::Sleep, Table::Activity, Table::Workout]
        .into_iter()
        .map(Dataset::Table)
        .chain(series)
        .collect()
}

#[async_trait]
impl TableProvider for ReadinessView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // (The futures are made first, as in `TeamView::scan`.)
        let days: Vec<_> = self.users.iter().map(|u| self.days(u)).collect();
        let batches: Vec<RecordBatch> = futures::stream::iter(days)
            .buffered(SIZES_IN_FLIGHT)
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .flatten()
            .collect();
        MemTable::try_new(self.schema.clone(), vec![batches])?
            .scan(state, projection, filters, limit)
            .await
    }
}

impl ReadinessView {
    /// `user`'s days, with its ids in front.
    async fn days(&self, user: &User) -> Result<Option<RecordBatch>> {
        let external = |e: Box<dyn std::error::Error + Send + Sync>| DataFusionError::External(e);
        let (mut first, mut end) = (i64::MAX, i64::MIN);
        for dataset in readiness_inputs() {
            let extents = self
                .health
                .extents(self.team, user.id, dataset)
                .await
                .map_err(|e| external(Box::new(e)))?;
            for e in extents {
                (first, end) = (first.min(e.start), end.max(e.end));
            }
        }
        let (Some(first), Some(end)) = (
            chrono::DateTime::from_timestamp_micros(first),
            chrono::DateTime::from_timestamp_micros(end),
        ) else {
            return Ok(None);
        };
        if first >= end {
            return Ok(None);
        }
        // Every local day the inputs touch, in any zone: a day either side of their UTC days.
        let anchor = end.date_naive() + chrono::Days::new(1);
        let days = (anchor - first.date_naive()).num_days() + 2;
        let mut select = vec![json!({"index": READINESS_VIEW})];
        select.extend(
            Derived::Readiness
                .columns()
                .iter()
                .filter(|c| c.name != "date")
                .map(|c| json!({READINESS_VIEW: c.name})),
        );
        let body = json!({
            "timeframe": {"anchor": anchor.to_string(), "past": {"value": days, "unit": "day"}},
            "queries": [{"select": select}],
        });
        let engine = &self.engines.engine;
        let request = crate::engine::parse_request(&body, engine.limits())
            .map_err(|e| external(Box::new(e)))?;
        let (results, _) = crate::query::execute(
            &self.engines.meta,
            &self.health,
            user,
            &request,
            (engine, OutputFormat::ParquetTar, engine.deadline()),
        )
        .await
        .map_err(|e| external(Box::new(e)))?;
        let Some(result) = results.into_iter().next() else {
            return Ok(None);
        };
        let rows = concat_batches(&result.schema, &result.batches)?;
        let n = rows.num_rows();
        let id = user.id.to_string();
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![id.as_str(); n])),
            Arc::new(StringArray::from(vec![user.client_user_id.as_str(); n])),
        ];
        for (column, field) in rows
            .columns()
            .iter()
            .zip(self.schema.fields().iter().skip(2))
        {
            columns.push(cast(column, field.data_type())?);
        }
        Ok(Some(RecordBatch::try_new(self.schema.clone(), columns)?))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{col, lit};

    use super::*;

    fn at(v: ScalarValue) -> Expr {
        Expr::Literal(v, None)
    }

    #[test]
    fn time_filters_become_the_windows_they_keep() {
        let us = |v: i64| {
            at(ScalarValue::TimestampMicrosecond(
                Some(v),
                Some("UTC".into()),
            ))
        };
        let ns = |v: i64| at(ScalarValue::TimestampNanosecond(Some(v), None));
        let t = || col("timestamp");
        assert_eq!(time_bound(&t().gt_eq(us(10))), Some((10, i64::MAX)));
        assert_eq!(time_bound(&t().lt(us(10))), Some((i64::MIN, 10)));
        assert_eq!(time_bound(&t().lt_eq(us(10))), Some((i64::MIN, 11)));
        assert_eq!(time_bound(&us(10).gt(t())), Some((i64::MIN, 10)));
        assert_eq!(time_bound(&t().eq(us(7))), Some((7, 8)));
        assert_eq!(time_bound(&t().between(us(3), us(9))), Some((3, 10)));
        // Finer than a microsecond: still every row the filter keeps.
        assert_eq!(time_bound(&t().lt(ns(1_500))), Some((i64::MIN, 2)));
        assert_eq!(time_bound(&t().lt(ns(2_000))), Some((i64::MIN, 2)));
        assert_eq!(time_bound(&t().gt(ns(-1_500))), Some((-2, i64::MAX)));
        // Not a bound on the time column.
        assert_eq!(time_bound(&col("value").gt(us(1))), None);
        assert_eq!(time_bound(&t().not_eq(us(1))), None);
        assert_eq!(time_bound(&t().gt(lit(5))), None);
        assert_eq!(time_bound(&t().not_between(us(3), us(9))), None);
    }
}
