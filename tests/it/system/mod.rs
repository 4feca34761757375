//! The service as an operator runs it, through the real binary: the command line, restarts,
//! crash-free shutdown, memory bounds, metrics, traces, scale-out over one PostgreSQL and one
//! bucket, and the README's examples run as a reader runs them; and the tree itself: no two
//! rooms of `src/` import each other (`rooms`).

mod cli;
mod e2e;
mod memory;
mod metrics;
mod readme;
mod rooms;
mod scale_out;
mod shutdown;
mod traces;
