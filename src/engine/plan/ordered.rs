//! Ordering rows that are already in order, without sorting them.
//!
//! A row-level query answers its rows in time order (`compile.rs`: time, provider, source type,
//! tie-break, instant), which DataFusion plans as a sort of every partition and a merge of the
//! sorted partitions. The health store's rows mostly arrive in that order already: one source's
//! segments are sorted by time and do not overlap, so an export of 90 days at 1 Hz spent two
//! thirds of its 1.1 s encoding 7.8 M rows into the row format to compare them and copying them
//! into new buffers, only to find them where they were.
//!
//! [`presorted`] puts [`OrderedRowsExec`] in place of each such sort (and its merge). It collects
//! the sort's input, and when the first sort key is a time-like column that is strictly
//! increasing within every batch, and the batches' ranges do not overlap, every row's position
//! is decided by that key alone: the batches are answered as they are, ordered by their first
//! row (a check of one comparison a row). Otherwise (two sources at the same instants, several
//! rows at one time, a descending or non-time key) the original sort and merge run over the
//! collected batches, so the answer is the same either way. Sorts with a `fetch` (top-k) are
//! left alone.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, internal_err};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering};
use datafusion::physical_plan::execution_plan::{
    Boundedness, EmissionType, replace_children_if_necessary,
};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream, collect_partitioned, execute_stream,
};
use futures::TryStreamExt;

/// Replaces every full sort in `plan` (a `SortExec`, or a `SortPreservingMergeExec` over one
/// with the same ordering, neither with a fetch) by an [`OrderedRowsExec`].
pub(crate) fn presorted(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_down(|node| {
        Ok(match OrderedRowsExec::replacing(&node) {
            Some(ordered) => Transformed::yes(Arc::new(ordered) as Arc<dyn ExecutionPlan>),
            None => Transformed::no(node),
        })
    })
    .map(|t| t.data)
}

/// Answers its input in the order of a sort it replaced (see the module docs). One output
/// partition.
#[derive(Debug)]
pub(crate) struct OrderedRowsExec {
    /// The replaced sort's input.
    input: Arc<dyn ExecutionPlan>,
    ordering: LexOrdering,
    /// The replaced plan (sort, or merge over sort), rebuilt over the collected input when the
    /// rows are not in order.
    fallback: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl OrderedRowsExec {
    /// The operator replacing `node`, when `node` is a full sort (or a merge over one) that
    /// answers one partition.
    fn replacing(node: &Arc<dyn ExecutionPlan>) -> Option<OrderedRowsExec> {
        // A merge's ordering names the sort's keys through their equals in the projection
        // below (`__a0` for `__time`): the two are equivalent, and the sort's is the rows'.
        let sort = if let Some(merge) = node.downcast_ref::<SortPreservingMergeExec>() {
            merge
                .fetch()
                .is_none()
                .then(|| merge.input().downcast_ref::<SortExec>())??
        } else {
            let sort = node.downcast_ref::<SortExec>()?;
            (!sort.preserve_partitioning()).then_some(sort)?
        };
        let ordering = sort.expr();
        if sort.fetch().is_some() {
            return None;
        }
        let schema = node.schema();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new_with_orderings(schema, [ordering.clone()]),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Some(OrderedRowsExec {
            input: sort.input().clone(),
            ordering: ordering.clone(),
            fallback: node.clone(),
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for OrderedRowsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "OrderedRowsExec: [{}]", self.ordering)
    }
}

impl ExecutionPlan for OrderedRowsExec {
    fn name(&self) -> &str {
        "OrderedRowsExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for sort in self.ordering.iter() {
            if f(&sort.expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(input) = children.into_iter().next() else {
            return internal_err!("OrderedRowsExec takes one input");
        };
        let fallback = over(&self.fallback, input.clone())?;
        Ok(Arc::new(OrderedRowsExec {
            input,
            ordering: self.ordering.clone(),
            fallback,
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("OrderedRowsExec has one partition, not {partition}");
        }
        let input = self.input.clone();
        let input_schema = input.schema();
        let ordering = self.ordering.clone();
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let sorted_rows = MetricBuilder::new(&self.metrics).counter("rows_in_order", partition);
        let fallback = self.fallback.clone();
        let schema = self.schema();
        let answer_schema = schema.clone();
        let output = futures::stream::once(async move {
            let partitions = collect_partitioned(input, context.clone()).await?;
            // The collected rows count against the request's memory, as the sort's would.
            let reservation =
                MemoryConsumer::new("OrderedRowsExec").register(context.memory_pool());
            let bytes: usize = partitions
                .iter()
                .flatten()
                .map(RecordBatch::get_array_memory_size)
                .sum();
            reservation.try_grow(bytes)?;
            let timer = baseline.elapsed_compute().timer();
            let in_order = in_order(&partitions, &ordering);
            timer.done();
            let stream: SendableRecordBatchStream = match in_order {
                Some(batches) => {
                    let rows = batches.iter().map(RecordBatch::num_rows).sum();
                    sorted_rows.add(rows);
                    baseline.record_output(rows);
                    // The reservation lives as long as the answer's batches are handed on.
                    let batches = futures::stream::iter(batches.into_iter().map(move |b| {
                        let _ = &reservation;
                        Ok(b)
                    }));
                    Box::pin(RecordBatchStreamAdapter::new(answer_schema, batches))
                }
                None => {
                    // The sort reserves what it buffers itself.
                    drop(reservation);
                    let source = MemorySourceConfig::try_new_exec(&partitions, input_schema, None)?;
                    execute_stream(over(&fallback, source)?, context)?
                }
            };
            Ok::<_, datafusion::error::DataFusionError>(stream)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
    }
}

/// The replaced plan `fallback` (a sort, or a merge over one) with `input` in place of its
/// input.
fn over(
    fallback: &Arc<dyn ExecutionPlan>,
    input: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(sort) = fallback.children().first().map(|c| (*c).clone()) else {
        return internal_err!("a replaced sort has no input");
    };
    if fallback.is::<SortPreservingMergeExec>() {
        let sort = replace_children_if_necessary(sort, vec![input])?;
        replace_children_if_necessary(fallback.clone(), vec![sort])
    } else {
        replace_children_if_necessary(fallback.clone(), vec![input])
    }
}

/// The batches of `partitions` in the order of `ordering`, when their first key alone decides
/// it (see the module docs); `None` when it does not.
fn in_order(partitions: &[Vec<RecordBatch>], ordering: &LexOrdering) -> Option<Vec<RecordBatch>> {
    let first = ordering.first();
    if first.options.descending {
        return None;
    }
    let key = first.expr.as_ref().downcast_ref::<Column>()?.index();
    let mut runs: Vec<(i64, i64, &RecordBatch)> = Vec::new();
    for batch in partitions.iter().flatten() {
        if batch.num_rows() == 0 {
            continue;
        }
        let (low, high) = strictly_increasing(batch.column(key))?;
        runs.push((low, high, batch));
    }
    runs.sort_unstable_by_key(|(low, _, _)| *low);
    let apart = runs.windows(2).all(|w| w[0].1 < w[1].0);
    apart.then(|| runs.into_iter().map(|(_, _, b)| b.clone()).collect())
}

/// The first and last values of a time-like (or integer) column without nulls whose values
/// strictly increase; `None` otherwise.
fn strictly_increasing(column: &ArrayRef) -> Option<(i64, i64)> {
    if column.null_count() > 0 {
        return None;
    }
    match column.data_type() {
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => increasing(column.as_primitive::<TimestampSecondType>().values()),
            TimeUnit::Millisecond => {
                increasing(column.as_primitive::<TimestampMillisecondType>().values())
            }
            TimeUnit::Microsecond => {
                increasing(column.as_primitive::<TimestampMicrosecondType>().values())
            }
            TimeUnit::Nanosecond => {
                increasing(column.as_primitive::<TimestampNanosecondType>().values())
            }
        },
        DataType::Int64 => increasing(column.as_primitive::<Int64Type>().values()),
        DataType::Date64 => increasing(column.as_primitive::<Date64Type>().values()),
        DataType::Int32 => increasing(column.as_primitive::<Int32Type>().values()),
        DataType::Date32 => increasing(column.as_primitive::<Date32Type>().values()),
        _ => None,
    }
}

/// First and last of `values` if each is smaller than the next. Compares in blocks without
/// an early exit inside one, which the compiler turns into vector compares.
fn increasing<T: Copy + PartialOrd + Into<i64>>(values: &[T]) -> Option<(i64, i64)> {
    const BLOCK: usize = 256;
    let (&low, &high) = (values.first()?, values.last()?);
    let (left, right) = (&values[..values.len() - 1], &values[1..]);
    let ok = left
        .chunks(BLOCK)
        .zip(right.chunks(BLOCK))
        .all(|(a, b)| a.iter().zip(b).fold(true, |ok, (x, y)| ok & (x < y)));
    ok.then(|| (low.into(), high.into()))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};
    use datafusion::arrow::compute::SortOptions;
    use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
    use datafusion::physical_expr::PhysicalSortExpr;
    use datafusion::physical_plan::collect;
    use datafusion::prelude::SessionContext;

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("s", DataType::Utf8, true),
            Field::new("v", DataType::Int64, false),
        ]))
    }

    fn batch(times: &[Option<i64>], source: &str) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(TimestampMicrosecondArray::from(times.to_vec())),
                Arc::new(StringArray::from(vec![source; times.len()])),
                Arc::new(Int64Array::from_iter_values(
                    (0..times.len() as i64).map(|i| i * 10),
                )),
            ],
        )
        .unwrap()
    }

    fn ordering(descending: bool) -> LexOrdering {
        let key = |name: &str, i| PhysicalSortExpr {
            expr: Arc::new(Column::new(name, i)),
            options: SortOptions {
                descending,
                nulls_first: false,
            },
        };
        LexOrdering::new([key("t", 0), key("s", 1)]).unwrap()
    }

    /// Runs `partitions` through a two-partition sort and merge, as the planner builds it, and
    /// through the same plan after [`presorted`]; both answers, and whether the fast path ran.
    async fn both(
        partitions: Vec<Vec<RecordBatch>>,
        descending: bool,
    ) -> (Vec<RecordBatch>, Vec<RecordBatch>, usize) {
        let source = MemorySourceConfig::try_new_exec(&partitions, schema(), None).unwrap();
        let sort =
            Arc::new(SortExec::new(ordering(descending), source).with_preserve_partitioning(true));
        let merge: Arc<dyn ExecutionPlan> =
            Arc::new(SortPreservingMergeExec::new(ordering(descending), sort));
        let ctx = SessionContext::new().task_ctx();
        let expected = collect(merge.clone(), ctx.clone()).await.unwrap();
        let replaced = presorted(merge).unwrap();
        assert_eq!(replaced.name(), "OrderedRowsExec");
        let got = collect(replaced.clone(), ctx).await.unwrap();
        let in_order = replaced
            .metrics()
            .and_then(|m| m.sum_by_name("rows_in_order"))
            .map_or(0, |v| v.as_usize());
        (expected, got, in_order)
    }

    fn concat(batches: &[RecordBatch]) -> RecordBatch {
        datafusion::arrow::compute::concat_batches(&schema(), batches).unwrap()
    }

    #[tokio::test]
    async fn disjoint_increasing_batches_are_answered_as_they_are_in_order() {
        let a = batch(&[Some(1), Some(2), Some(5)], "oura");
        let b = batch(&[Some(6), Some(9)], "oura");
        let c = batch(&[Some(10), Some(11)], "oura");
        // Out of order across and within partitions.
        let (expected, got, in_order) =
            both(vec![vec![c.clone(), a.clone()], vec![b.clone()]], false).await;
        assert_eq!(in_order, 7);
        assert_eq!(concat(&got), concat(&expected));
        assert_eq!(concat(&got), concat(&[a, b, c]));
    }

    #[tokio::test]
    async fn anything_else_is_sorted_as_before() {
        let cases = [
            // Two sources at the same instants: the second key decides.
            vec![
                vec![batch(&[Some(1), Some(2)], "watch")],
                vec![batch(&[Some(1), Some(2)], "oura")],
            ],
            // Overlapping ranges.
            vec![
                vec![batch(&[Some(1), Some(4)], "oura")],
                vec![batch(&[Some(2), Some(3)], "oura")],
            ],
            // Equal neighbours, a decrease, a null.
            vec![vec![batch(&[Some(1), Some(1)], "b")], vec![]],
            vec![vec![batch(&[Some(3), Some(2)], "b")], vec![]],
            vec![vec![batch(&[Some(1), None], "b")], vec![]],
        ];
        for partitions in cases {
            let (expected, got, in_order) = both(partitions.clone(), false).await;
            assert_eq!(in_order, 0, "{partitions:?}");
            assert_eq!(concat(&got), concat(&expected), "{partitions:?}");
        }
        // A descending order is never taken as given.
        let partitions = vec![vec![batch(&[Some(1), Some(2)], "b")], vec![]];
        let (expected, got, in_order) = both(partitions, true).await;
        assert_eq!(in_order, 0);
        assert_eq!(concat(&got), concat(&expected));
        assert_eq!(
            concat(&got)
                .column(0)
                .as_primitive::<TimestampMicrosecondType>()
                .values()[..],
            [2, 1]
        );
    }

    #[test]
    fn increasing_is_strict_and_reports_the_ends() {
        assert_eq!(increasing(&[1i64, 2, 3]), Some((1, 3)));
        assert_eq!(increasing(&[7i64]), Some((7, 7)));
        assert_eq!(increasing::<i64>(&[]), None);
        assert_eq!(increasing(&[1i64, 2, 2]), None);
        let long: Vec<i64> = (0..1000).collect();
        assert_eq!(increasing(&long), Some((0, 999)));
        let mut dip = long.clone();
        dip[700] = 0;
        assert_eq!(increasing(&dip), None);
        assert_eq!(increasing(&[1i32, 5]), Some((1, 5)));
    }
}
