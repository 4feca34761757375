//! The store's own scan as a plan node that runs wherever the store can be read: one dataset of
//! a list of a team's users, read through [`HealthStore::read`] (so replacements, uncommitted
//! pushes and retired segments are resolved exactly as everywhere else), with each row's
//! `user_id` and `client_user_id` in front.
//!
//! The users are split into one list per task: on one node there is one list, and a distributed
//! plan's leaf stage gets one per task, balanced by stored bytes ([`scale_up`]). The node
//! travels to workers as the team, the dataset, the projection and the users' ids
//! ([`ScanCodec`]); a worker decodes it with its own store, so it reads the bucket itself and
//! never receives rows from the coordinator. Nothing else is in the message: no key, no path
//! outside the team's folders.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedTaskContext,
    ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use uuid::Uuid;

use crate::schema::Dataset;
use crate::store::health::HealthStore;

/// Users read at once by one task.
const READS_IN_FLIGHT: usize = 4;

/// One user of a scan: the ids put in front of its rows, and its stored bytes of the dataset
/// (what tasks are balanced by; 0 when not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct ScanUser {
    /// The user's id.
    pub id: Uuid,
    /// The team's id for the user.
    pub client_user_id: String,
    /// Bytes of the dataset's segments (`HealthStore::stored_bytes`).
    pub bytes: u64,
}

/// A view's rows (see the module docs).
#[derive(Debug, Clone)]
pub struct StoreScanExec {
    team: Uuid,
    dataset: Dataset,
    /// Indices into the view schema (`user_id`, `client_user_id`, then the dataset's columns).
    projection: Option<Vec<usize>>,
    /// The rows' time range, µs, half-open (a timeseries scan's pushed-down time filters; the
    /// filters still run above the scan).
    window: Option<(i64, i64)>,
    /// The users each task reads: one list before distribution.
    tasks: Vec<Vec<ScanUser>>,
    /// Below this many stored bytes the scan stays on one node (`Cluster::distribute_above`).
    distribute_above: u64,
    health: HealthStore,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl StoreScanExec {
    /// A scan of `dataset` for `users` of `team`, producing `projection` of the view schema,
    /// of the rows whose time is in `window` (µs, half-open) when one is given.
    pub fn new(
        team: Uuid,
        dataset: Dataset,
        (projection, window): (Option<Vec<usize>>, Option<(i64, i64)>),
        tasks: Vec<Vec<ScanUser>>,
        distribute_above: u64,
        health: HealthStore,
    ) -> Result<StoreScanExec> {
        let full = super::view_schema(dataset);
        let schema = match &projection {
            Some(p) => Arc::new(full.project(p)?),
            None => full,
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(StoreScanExec {
            team,
            dataset,
            projection,
            window,
            tasks,
            distribute_above,
            health,
            schema,
            properties,
        })
    }

    /// Stored bytes of every user of the scan.
    pub fn bytes(&self) -> u64 {
        self.tasks.iter().flatten().map(|u| u.bytes).sum()
    }

    fn users(&self) -> usize {
        self.tasks.iter().map(Vec::len).sum()
    }

    /// This node with its users split over `count` tasks, each task's bytes as even as a greedy
    /// split makes them (the largest user first, to the task with the fewest bytes so far).
    fn split(&self, count: usize) -> Result<StoreScanExec> {
        let mut users: Vec<ScanUser> = self.tasks.iter().flatten().cloned().collect();
        users.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.id.cmp(&b.id)));
        let mut tasks: Vec<(u64, Vec<ScanUser>)> = vec![(0, Vec::new()); count.max(1)];
        for user in users {
            let Some(lightest) = tasks
                .iter_mut()
                .min_by_key(|(bytes, list)| (*bytes, list.len()))
            else {
                return internal_err!("a scan split into no task");
            };
            lightest.0 += user.bytes;
            lightest.1.push(user);
        }
        StoreScanExec::new(
            self.team,
            self.dataset,
            (self.projection.clone(), self.window),
            tasks.into_iter().map(|(_, list)| list).collect(),
            self.distribute_above,
            self.health.clone(),
        )
    }
}

impl DisplayAs for StoreScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "StoreScanExec: dataset={}, users={}, bytes={}, ",
            self.dataset.path(),
            self.users(),
            self.bytes()
        )?;
        if let Some((start, end)) = self.window {
            write!(f, "window=[{start}, {end}) µs, ")?;
        }
        write!(f, "tasks=[")?;
        for (i, task) in self.tasks.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{}", task.len())?;
        }
        write!(f, "]")
    }
}

impl ExecutionPlan for StoreScanExec {
    fn name(&self) -> &str {
        "StoreScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return internal_err!("StoreScanExec takes no input");
        }
        Ok(self)
    }

    /// Reads this task's users (the task index of a distributed stage, 0 on one node), a few
    /// at once, yielding each user's batches as they are read.
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("StoreScanExec has one partition, not {partition}");
        }
        let task = DistributedTaskContext::from_ctx(&context).task_index;
        let Some(users) = self.tasks.get(task).cloned() else {
            return internal_err!(
                "StoreScanExec has {} task(s), asked for task {task}",
                self.tasks.len()
            );
        };
        let this = Arc::new(self.clone());
        let reads = futures::stream::iter(users)
            .map(move |user| {
                let this = this.clone();
                async move { this.read(&user).await }
            })
            .buffered(READS_IN_FLIGHT)
            .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            reads,
        )))
    }
}

impl StoreScanExec {
    /// One user's stored batches with its ids in front, projected.
    async fn read(&self, user: &ScanUser) -> Result<Vec<RecordBatch>> {
        let window = self.window.map(|(start, end)| micros(start)..micros(end));
        let stored = self
            .health
            .read(self.team, user.id, self.dataset, window)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let id = user.id.to_string();
        stored
            .iter()
            .filter(|b| b.num_rows() > 0)
            .map(|batch| {
                let rows = batch.num_rows();
                let ids: [ArrayRef; 2] = [
                    Arc::new(StringArray::from(vec![id.as_str(); rows])),
                    Arc::new(StringArray::from(vec![user.client_user_id.as_str(); rows])),
                ];
                let all: Vec<ArrayRef> = ids
                    .into_iter()
                    .chain(batch.columns().iter().cloned())
                    .collect();
                let columns = match &self.projection {
                    Some(p) => p.iter().map(|&i| all[i].clone()).collect(),
                    None => all,
                };
                // A projection may keep no column (`count(*)`): the row count says it all.
                let options = RecordBatchOptions::new().with_row_count(Some(rows));
                Ok(RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    columns,
                    &options,
                )?)
            })
            .collect()
    }
}

/// `us` (µs since the epoch) as an instant, clamped to what `chrono` holds.
fn micros(us: i64) -> chrono::DateTime<chrono::Utc> {
    let (min, max) = (
        chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp_micros(),
        chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp_micros(),
    );
    chrono::DateTime::from_timestamp_micros(us.clamp(min, max)).unwrap_or_default()
}

/// How many tasks a scan wants: one below the size that distributes, else one per user (the
/// planner caps it at the number of live workers).
pub fn desired_tasks(ev: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    let scan = ev.plan.downcast_ref::<StoreScanExec>()?;
    if scan.bytes() < scan.distribute_above || scan.users() < 2 {
        return Some(Ok(DesiredTaskCountEventResponse::maximum(1)));
    }
    Some(Ok(DesiredTaskCountEventResponse::desired(scan.users())))
}

/// The scan split over the stage's final task count.
pub fn scale_up(ev: ScaleUpLeafNodeEvent) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let scan = ev.plan.downcast_ref::<StoreScanExec>()?;
    Some(
        scan.split(ev.task_count)
            .map(|split| ScaleUpLeafNodeEventResponse::new(Arc::new(split))),
    )
}

/// The wire form of a [`StoreScanExec`].
#[derive(Clone, PartialEq, Message)]
struct ScanProto {
    #[prost(string, tag = "1")]
    team: String,
    /// `Dataset::path`.
    #[prost(string, tag = "2")]
    dataset: String,
    #[prost(bool, tag = "3")]
    projected: bool,
    #[prost(uint32, repeated, tag = "4")]
    projection: Vec<u32>,
    #[prost(message, repeated, tag = "5")]
    tasks: Vec<TaskProto>,
    #[prost(uint64, tag = "6")]
    distribute_above: u64,
    #[prost(int64, optional, tag = "7")]
    window_start: Option<i64>,
    #[prost(int64, optional, tag = "8")]
    window_end: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct TaskProto {
    #[prost(message, repeated, tag = "1")]
    users: Vec<UserProto>,
}

#[derive(Clone, PartialEq, Message)]
struct UserProto {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    client_user_id: String,
    #[prost(uint64, tag = "3")]
    bytes: u64,
}

/// Encodes [`StoreScanExec`] for workers and decodes it over the store it was made with (the
/// coordinator's or the worker's own).
#[derive(Debug, Clone)]
pub struct ScanCodec {
    health: HealthStore,
}

impl ScanCodec {
    /// A codec whose decoded scans read `health`.
    pub fn new(health: HealthStore) -> ScanCodec {
        ScanCodec { health }
    }
}

fn malformed(what: impl fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("malformed StoreScanExec message: {what}"))
}

impl PhysicalExtensionCodec for ScanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("StoreScanExec takes no input, got {}", inputs.len());
        }
        let proto = ScanProto::decode(buf).map_err(malformed)?;
        let team = Uuid::parse_str(&proto.team).map_err(malformed)?;
        let dataset = Dataset::from_path(&proto.dataset)
            .ok_or_else(|| malformed(format!("unknown dataset {:?}", proto.dataset)))?;
        let tasks = proto
            .tasks
            .into_iter()
            .map(|task| {
                task.users
                    .into_iter()
                    .map(|u| {
                        Ok(ScanUser {
                            id: Uuid::parse_str(&u.id).map_err(malformed)?,
                            client_user_id: u.client_user_id,
                            bytes: u.bytes,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let projection = proto
            .projected
            .then(|| proto.projection.iter().map(|&i| i as usize).collect());
        let window = proto.window_start.zip(proto.window_end);
        let scan = StoreScanExec::new(
            team,
            dataset,
            (projection, window),
            tasks,
            proto.distribute_above,
            self.health.clone(),
        )?;
        Ok(Arc::new(scan))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(scan) = node.downcast_ref::<StoreScanExec>() else {
            return internal_err!("ScanCodec encodes StoreScanExec, not {}", node.name());
        };
        let proto = ScanProto {
            team: scan.team.to_string(),
            dataset: scan.dataset.path(),
            projected: scan.projection.is_some(),
            projection: scan
                .projection
                .iter()
                .flatten()
                .map(|&i| i as u32)
                .collect(),
            tasks: scan
                .tasks
                .iter()
                .map(|task| TaskProto {
                    users: task
                        .iter()
                        .map(|u| UserProto {
                            id: u.id.to_string(),
                            client_user_id: u.client_user_id.clone(),
                            bytes: u.bytes,
                        })
                        .collect(),
                })
                .collect(),
            distribute_above: scan.distribute_above,
            window_start: scan.window.map(|w| w.0),
            window_end: scan.window.map(|w| w.1),
        };
        proto
            .encode(buf)
            .map_err(|e| DataFusionError::Internal(format!("encoding StoreScanExec: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(n: u128, bytes: u64) -> ScanUser {
        ScanUser {
            id: Uuid::from_u128(n),
            client_user_id: format!("u{n}"),
            bytes,
        }
    }

    fn scan(users: Vec<ScanUser>) -> StoreScanExec {
        let dir = tempfile::tempdir().unwrap();
        let health = HealthStore::open(dir.path().to_str().unwrap(), Default::default()).unwrap();
        StoreScanExec::new(
            Uuid::from_u128(7),
            Dataset::from_path("timeseries/heartrate").unwrap(),
            (Some(vec![0, 3]), Some((5, 10))),
            vec![users],
            10,
            health,
        )
        .unwrap()
    }

    #[test]
    fn a_split_balances_bytes_and_keeps_every_user_once() {
        let s = scan(vec![
            user(1, 50),
            user(2, 40),
            user(3, 30),
            user(4, 20),
            user(5, 10),
        ]);
        let split = s.split(2).unwrap();
        let bytes: Vec<u64> = split
            .tasks
            .iter()
            .map(|t| t.iter().map(|u| u.bytes).sum())
            .collect();
        assert_eq!(bytes, vec![80, 70]);
        let mut ids: Vec<u128> = split
            .tasks
            .iter()
            .flatten()
            .map(|u| u.id.as_u128())
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![1, 2, 3, 4, 5]);
        // More tasks than users: the extra tasks read nothing.
        assert_eq!(
            s.split(7)
                .unwrap()
                .tasks
                .iter()
                .filter(|t| t.is_empty())
                .count(),
            2
        );
    }

    #[test]
    fn the_codec_round_trips_a_split_scan() {
        let s = scan(vec![user(1, 5), user(2, 6), user(3, 7)])
            .split(2)
            .unwrap();
        let codec = ScanCodec::new(s.health.clone());
        let mut buf = Vec::new();
        let converter = datafusion_proto::physical_plan::DefaultPhysicalProtoConverter {};
        codec
            .try_encode(Arc::new(s.clone()), &mut buf, &converter)
            .unwrap();
        let back = codec
            .try_decode(&buf, &[], &TaskContext::default(), &converter)
            .unwrap();
        let back = back.downcast_ref::<StoreScanExec>().unwrap();
        assert_eq!(back.tasks, s.tasks);
        assert_eq!(back.projection, Some(vec![0, 3]));
        assert_eq!(back.window, Some((5, 10)));
        assert_eq!(back.schema, s.schema);
        assert_eq!(
            (back.team, back.dataset, back.distribute_above),
            (s.team, s.dataset, 10)
        );
        assert!(
            codec
                .try_decode(b"\xff\xff", &[], &TaskContext::default(), &converter)
                .is_err()
        );
    }
}
