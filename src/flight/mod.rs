//! Arrow Flight SQL for notebooks and BI tools (`analytics.md` §5): `serve --flight-listen
//! ADDR` answers the Flight SQL protocol (gRPC) with read-only DataFusion SQL over the team's
//! data, so the ADBC Flight SQL driver (pandas, Polars, DuckDB through ADBC) reads it with no
//! wearhouse-specific client.
//!
//! - **Credential**: the team's API key, as `authorization: Bearer <key>` on every call, or
//!   through the handshake with HTTP Basic (any user name, the key as the password), which
//!   answers the key back as the bearer token. Every call authenticates
//!   again: a revoked key stops working at once, as on the REST API.
//! - **Views** (`views.rs`), built per request for the key's team alone, so no query can see
//!   another team's rows (they are never loaded, not filtered out): `sleep`, `activity`,
//!   `workouts`, `body`, `meal`, `profile`, `menstrual_cycle` and `timeseries_<resource>` for
//!   every resource, each the stored table with `user_id` and `client_user_id` first, read by
//!   the store's scan node (`crate::distributed::StoreScanExec`) when a statement runs; and
//!   `derived_readiness`, each user's days computed by the per-user engine. Catalog
//!   `wearhouse`, schema `team`.
//! - **Workers** (`serve --workers`): a statement whose scans hold enough stored bytes is
//!   planned across them (`crate::distributed`).
//! - **Statements**: `CommandStatementQuery` and prepared statements (without parameters); the
//!   statement travels in its ticket (planned again at `DoGet`, under the key of that call).
//!   DDL, DML and `SET` are refused (`SQLOptions`). Browsing: `GetCatalogs`, `GetDbSchemas`,
//!   `GetTables` (with schemas), `GetTableTypes`, `GetSqlInfo`.
//! - **Limits**: the aggregate queries' time limit (`--query-timeout-secs`: the stream ends with
//!   `DEADLINE_EXCEEDED` and the work is cancelled) and memory limit (`--query-memory-mb`, the
//!   query's DataFusion pool); the query runs on the engine's CPU runtime.
//!
//! Decisions where the spec is silent: the views hold the stored rows as stored (instants in
//! UTC with their own `timezone_offset`, every source; provider priority and floating time are
//! the aggregate endpoints'); a timeseries view's bounds on `timestamp` (comparisons with an
//! instant, `BETWEEN`) reach the store's read, which then decodes only the segments they
//! overlap, while other views read all of the team's rows of their dataset; `derived_readiness` covers every local day each
//! user's stored inputs touch (a day either side of their UTC extent), is computed on the API
//! node (nothing stored for a worker to read) and is not charged to the query's memory pool
//! before the statement runs.

mod views;

use std::pin::Pin;

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::FlightSqlService;
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest,
    ActionCreatePreparedStatementResult, CommandGetCatalogs, CommandGetDbSchemas,
    CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandPreparedStatementQuery,
    CommandStatementQuery, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, Ticket,
};
use base64::Engine as _;
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::common::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{DataFrame, SQLOptions, SessionContext};
use futures::{Stream, StreamExt};
use prost::Message;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Request, Response, Status, Streaming};

use crate::distributed::Cluster;
use crate::engine::Engine;
use crate::store::health::HealthStore;
use crate::store::metadata::MetadataStore;

/// The catalog the views are in.
pub const CATALOG: &str = "wearhouse";
/// The schema the views are in.
pub const SCHEMA: &str = "team";

/// The Flight SQL service over the stores, on the engine's runtime and limits.
#[derive(Clone)]
pub struct FlightSql {
    meta: MetadataStore,
    health: HealthStore,
    engine: Engine,
    cluster: Option<Cluster>,
}

impl FlightSql {
    /// The service over these stores.
    pub fn new(meta: MetadataStore, health: HealthStore, engine: Engine) -> FlightSql {
        FlightSql {
            meta,
            health,
            engine,
            cluster: None,
        }
    }

    /// The service with its large statements run on `cluster`'s workers
    /// (`crate::distributed`).
    pub fn with_cluster(mut self, cluster: Cluster) -> FlightSql {
        self.cluster = Some(cluster);
        self
    }

    /// The team the call's key authenticates: `authorization: Bearer <key>`.
    async fn team(&self, metadata: &MetadataMap) -> Result<uuid::Uuid, Status> {
        let key = metadata
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                Status::unauthenticated("Missing API key: send authorization: Bearer <key>")
            })?;
        self.team_of_key(key).await
    }

    async fn team_of_key(&self, key: &str) -> Result<uuid::Uuid, Status> {
        let found = self
            .meta
            .authenticate(key)
            .await
            .map_err(|e| internal("authenticating", e))?;
        found
            .map(|a| a.team.id)
            .ok_or_else(|| Status::unauthenticated("Invalid API key"))
    }

    /// The team's views in a session of its own, with the query memory limit; planned across
    /// the workers that answer now, when there are workers.
    async fn session(&self, team: uuid::Uuid) -> Result<SessionContext, Status> {
        let users = crate::team::team_users(&self.meta, team)
            .await
            .map_err(|e| internal("listing the team's users", e))?;
        let cluster = match &self.cluster {
            Some(cluster) => {
                cluster.refresh().await;
                (cluster.live() > 0).then_some(cluster)
            }
            None => None,
        };
        let engines = views::Engines {
            meta: self.meta.clone(),
            engine: self.engine.clone(),
        };
        views::session(team, users, &self.health, &engines, cluster)
            .map_err(|e| internal("building the team's views", e))
    }

    /// `sql` planned over the team's views (read-only); a 400-like `INVALID_ARGUMENT` naming
    /// the problem when it does not plan.
    async fn plan(&self, team: uuid::Uuid, sql: &str) -> Result<DataFrame, Status> {
        let session = self.session(team).await?;
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        session
            .sql_with_options(sql, options)
            .await
            .map_err(|e| Status::invalid_argument(e.to_string()))
    }

    /// Runs `sql` for `team` to the end on the engine's runtime, answering the batches `DoGet`
    /// would stream (no time limit: for tools and benches, not for clients).
    pub async fn collect(&self, team: uuid::Uuid, sql: &str) -> Result<Vec<RecordBatch>, Status> {
        let frame = self.plan(team, sql).await?;
        self.engine
            .spawn(frame.collect())
            .await
            .map_err(|e| internal("running the statement", e))?
            .map_err(|e| internal("running the statement", e))
    }

    /// Runs `sql` for `team` as a Flight data stream: on the engine's runtime, ended with
    /// `DEADLINE_EXCEEDED` (and the work cancelled) at the time limit.
    async fn run(&self, team: uuid::Uuid, sql: &str) -> Result<DoGetStream, Status> {
        let deadline = self.engine.deadline();
        let frame = self.plan(team, sql).await?;
        let schema: SchemaRef = std::sync::Arc::new(frame.schema().as_arrow().clone());
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch, FlightError>>(2);
        // The workers that answered when the statement was planned (`plan` probed them).
        let planned = self.cluster.clone().map(|c| {
            let live = c.live();
            (c, live)
        });
        let work = self.engine.spawn(async move {
            let mut stream: SendableRecordBatchStream = match frame.execute_stream().await {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(failure(planned.as_ref(), e).await)).await;
                    return;
                }
            };
            while let Some(batch) = stream.next().await {
                let (batch, failed) = match batch {
                    Ok(batch) => (Ok(batch), false),
                    Err(e) => (Err(failure(planned.as_ref(), e).await), true),
                };
                if tx.send(batch).await.is_err() || failed {
                    return;
                }
            }
        });
        let seconds = self.engine.limits().timeout.as_secs();
        let batches = Limited {
            rx,
            deadline,
            seconds,
            _work: work,
            done: false,
        }
        .into_stream();
        let flight = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .build(batches)
            .map(|r| r.map_err(Status::from));
        Ok(Box::pin(flight))
    }
}

type DoGetStream = <FlightSql as FlightService>::DoGetStream;

/// What a client is told of a statement that failed: `UNAVAILABLE` (run it again) when a worker
/// it was planned on no longer answers, so the failure is the lost worker's; the error as it is
/// otherwise.
async fn failure(planned: Option<&(Cluster, usize)>, e: DataFusionError) -> FlightError {
    if let Some((cluster, live)) = planned {
        // A worker's process can break its streams a moment before its listening socket goes
        // (the kernel still completes a probe's connection), so a probe that still finds every
        // planned worker is repeated a few times, a fifth of a second apart: a failing
        // statement pays that, a healthy one never does.
        for attempt in 0..4 {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            cluster.refresh().await;
            if cluster.live() < *live {
                return FlightError::Tonic(Box::new(Status::unavailable(format!(
                    "a worker was lost while the statement ran; run it again: the next \
                     statement is planned on the workers that answer ({e})"
                ))));
            }
        }
    }
    FlightError::ExternalError(Box::new(e))
}

/// A query's batches until its deadline: the work is aborted when this is dropped (the client
/// went away, or the deadline passed).
struct Limited {
    rx: tokio::sync::mpsc::Receiver<Result<RecordBatch, FlightError>>,
    deadline: tokio::time::Instant,
    seconds: u64,
    _work: crate::engine::AbortOnDrop<()>,
    done: bool,
}

impl Limited {
    fn into_stream(self) -> impl Stream<Item = Result<RecordBatch, FlightError>> + Send {
        futures::stream::unfold(self, |mut this| async move {
            if this.done {
                return None;
            }
            match tokio::time::timeout_at(this.deadline, this.rx.recv()).await {
                Ok(Some(item)) => {
                    this.done = item.is_err();
                    Some((item, this))
                }
                Ok(None) => None,
                Err(_) => {
                    this.done = true;
                    let status = Status::deadline_exceeded(format!(
                        "the query ran past its time limit of {} s and was cancelled",
                        this.seconds
                    ));
                    Some((Err(FlightError::Tonic(Box::new(status))), this))
                }
            }
        })
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> Status {
    tracing::error!(error = %e, "flight sql: {what}");
    Status::internal(format!("{what} failed"))
}

/// A `FlightInfo` for a result of `schema` fetched by `ticket`.
fn info(
    schema: &Schema,
    ticket: impl ProstMessageExt,
    descriptor: FlightDescriptor,
) -> Result<Response<FlightInfo>, Status> {
    let ticket = Ticket::new(ticket.as_any().encode_to_vec());
    let info = FlightInfo::new()
        .try_with_schema(schema)
        .map_err(|e| internal("encoding a schema", e))?
        .with_endpoint(FlightEndpoint::new().with_ticket(ticket))
        .with_descriptor(descriptor);
    Ok(Response::new(info))
}

/// One batch as a Flight data stream.
fn one_batch<E: std::fmt::Display>(
    batch: Result<RecordBatch, E>,
) -> Result<Response<DoGetStream>, Status> {
    let batch = batch.map_err(|e| internal("building a listing", e))?;
    let schema = batch.schema();
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(futures::stream::once(async { Ok(batch) }))
        .map(|r| r.map_err(Status::from));
    Ok(Response::new(Box::pin(stream)))
}

fn sql_info() -> Result<SqlInfoData, Status> {
    let mut builder = SqlInfoDataBuilder::new();
    builder.append(SqlInfo::FlightSqlServerName, "wearhouse");
    builder.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    builder.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
    builder.append(SqlInfo::FlightSqlServerReadOnly, true);
    builder.build().map_err(|e| internal("building SqlInfo", e))
}

/// A statement's text from its handle (the handle is the text).
fn statement(handle: &[u8]) -> Result<String, Status> {
    String::from_utf8(handle.to_vec())
        .map_err(|_| Status::invalid_argument("a statement handle is the statement's UTF-8 text"))
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        let header = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let key = match header.strip_prefix("Basic ") {
            Some(basic) => {
                // Padded or not: the Go driver under ADBC sends it without padding.
                let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(basic.trim().trim_end_matches('='))
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| {
                        Status::invalid_argument("authorization: Basic needs base64 of user:key")
                    })?;
                decoded
                    .split_once(':')
                    .map(|(_, key)| key.to_owned())
                    .ok_or_else(|| {
                        Status::invalid_argument("authorization: Basic needs user:key")
                    })?
            }
            None => header
                .strip_prefix("Bearer ")
                .map(str::to_owned)
                .ok_or_else(|| {
                    Status::unauthenticated(
                        "send the API key as the Basic password or as a Bearer token",
                    )
                })?,
        };
        self.team_of_key(&key).await?;
        let token = format!("Bearer {key}");
        let answer = HandshakeResponse {
            protocol_version: 0,
            payload: key.clone().into(),
        };
        let mut response: Response<Pin<Box<dyn Stream<Item = _> + Send>>> =
            Response::new(Box::pin(futures::stream::iter([Ok(answer)])));
        let value = MetadataValue::try_from(token.as_str())
            .map_err(|_| Status::invalid_argument("the key is not a valid header value"))?;
        response.metadata_mut().insert("authorization", value);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let team = self.team(request.metadata()).await?;
        let frame = self.plan(team, &query.query).await?;
        let ticket = TicketStatementQuery {
            statement_handle: query.query.clone().into(),
        };
        info(frame.schema().as_arrow(), ticket, request.into_inner())
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let team = self.team(request.metadata()).await?;
        let sql = statement(&query.prepared_statement_handle)?;
        let frame = self.plan(team, &sql).await?;
        info(frame.schema().as_arrow(), query, request.into_inner())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.team(request.metadata()).await?;
        let schema = query.into_builder().schema();
        info(&schema, query, request.into_inner())
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.team(request.metadata()).await?;
        let schema = query.clone().into_builder().schema();
        info(&schema, query, request.into_inner())
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.team(request.metadata()).await?;
        let schema = query.clone().into_builder().schema();
        info(&schema, query, request.into_inner())
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.team(request.metadata()).await?;
        info(&table_types_schema(), query, request.into_inner())
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.team(request.metadata()).await?;
        let schema = query.clone().into_builder(&sql_info()?).schema();
        info(&schema, query, request.into_inner())
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let team = self.team(request.metadata()).await?;
        let sql = statement(&ticket.statement_handle)?;
        Ok(Response::new(self.run(team, &sql).await?))
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let team = self.team(request.metadata()).await?;
        let sql = statement(&query.prepared_statement_handle)?;
        Ok(Response::new(self.run(team, &sql).await?))
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.team(request.metadata()).await?;
        let mut builder = query.into_builder();
        builder.append(CATALOG);
        one_batch(builder.build())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.team(request.metadata()).await?;
        let mut builder = query.into_builder();
        builder.append(CATALOG, SCHEMA);
        one_batch(builder.build())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.team(request.metadata()).await?;
        let mut builder = query.into_builder();
        for (name, schema) in views::catalogue() {
            builder
                .append(CATALOG, SCHEMA, name, "VIEW", &schema)
                .map_err(|e| internal("listing the views", e))?;
        }
        one_batch(builder.build())
    }

    async fn do_get_table_types(
        &self,
        _query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.team(request.metadata()).await?;
        let batch = RecordBatch::try_new(
            std::sync::Arc::new(table_types_schema()),
            vec![std::sync::Arc::new(StringArray::from(vec!["VIEW"]))],
        );
        one_batch(batch)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.team(request.metadata()).await?;
        one_batch(query.into_builder(&sql_info()?).build())
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let team = self.team(request.metadata()).await?;
        let frame = self.plan(team, &query.query).await?;
        let IpcMessage(dataset_schema) =
            SchemaAsIpc::new(frame.schema().as_arrow(), &IpcWriteOptions::default())
                .try_into()
                .map_err(|e| internal("encoding a schema", e))?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: query.query.into(),
            dataset_schema,
            parameter_schema: Default::default(),
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        _query: ActionClosePreparedStatementRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        // Nothing is kept for a prepared statement: its handle is its text.
        self.team(request.metadata()).await?;
        Ok(())
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// `GetTableTypes`' schema.
fn table_types_schema() -> Schema {
    Schema::new(vec![Field::new("table_type", DataType::Utf8, false)])
}

/// Serves Flight SQL on `listener` until the process ends (`serve` aborts the task after the
/// HTTP server drained: queries here are reads, nothing to finish).
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: FlightSql,
) -> Result<(), tonic::transport::Error> {
    tonic::transport::Server::builder()
        .add_service(FlightServiceServer::new(service))
        .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
        .await
}
