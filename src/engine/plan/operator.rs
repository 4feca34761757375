//! What the engine's own single-partition operators (`BucketAggregateExec`, `AlignExec`,
//! `ReadinessExec`) share as DataFusion [`ExecutionPlan`]s: each reads one partition of each
//! input, not repartitioned, answers one partition, keeps its properties and metrics in fields
//! named `properties` and `metrics`, and has no expressions of its own for DataFusion to
//! rewrite.
//!
//! [`ExecutionPlan`]: datafusion::physical_plan::ExecutionPlan

/// The [`ExecutionPlan`] methods of a single-partition operator, inside its `impl
/// ExecutionPlan`: `single_partition_methods!("Name", |this| vec![&this.input]);` where the
/// closure-like part lists the operator's inputs (`this` is `self`). The operator still writes
/// `with_new_children` and `execute`.
///
/// [`ExecutionPlan`]: datafusion::physical_plan::ExecutionPlan
macro_rules! single_partition_methods {
    ($name:literal, |$this:ident| $children:expr) => {
        fn name(&self) -> &str {
            $name
        }
        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            &self.properties
        }
        fn required_input_distribution(&self) -> Vec<datafusion::physical_plan::Distribution> {
            let $this = self;
            let inputs: Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> =
                $children;
            vec![datafusion::physical_plan::Distribution::SinglePartition; inputs.len()]
        }
        fn benefits_from_input_partitioning(&self) -> Vec<bool> {
            let $this = self;
            let inputs: Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> =
                $children;
            vec![false; inputs.len()]
        }
        fn children(&self) -> Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
            let $this = self;
            $children
        }
        fn metrics(&self) -> Option<datafusion::physical_plan::metrics::MetricsSet> {
            Some(self.metrics.clone_inner())
        }
        fn apply_expressions(
            &self,
            _f: &mut dyn FnMut(
                &std::sync::Arc<dyn datafusion::physical_plan::PhysicalExpr>,
            ) -> datafusion::common::Result<
                datafusion::common::tree_node::TreeNodeRecursion,
            >,
        ) -> datafusion::common::Result<datafusion::common::tree_node::TreeNodeRecursion> {
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        }
    };
}

pub(crate) use single_partition_methods;

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};

/// A logical node whose physical operator needs nothing but the node and its planned inputs
/// (ALIGN, readiness); [`NodePlanner`] plans it.
pub(crate) trait PlannedNode: UserDefinedLogicalNode + Sized + 'static {
    /// The physical operator of this node over `inputs`, planned in `session` (whose
    /// planner turns the node's own expressions into physical ones).
    fn physical(
        &self,
        inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>>;
}

/// Plans the nodes of type `N` (and passes over every other node).
pub(crate) struct NodePlanner<N>(PhantomData<fn() -> N>);

impl<N> NodePlanner<N> {
    /// The planner of `N`s.
    pub(crate) fn new() -> Self {
        NodePlanner(PhantomData)
    }
}

impl<N> std::fmt::Debug for NodePlanner<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodePlanner<{}>", std::any::type_name::<N>())
    }
}

#[async_trait]
impl<N: PlannedNode> ExtensionPlanner for NodePlanner<N> {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        _ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        match node.as_any().downcast_ref::<N>() {
            Some(node) => node.physical(physical_inputs, session).map(Some),
            None => Ok(None),
        }
    }
}
