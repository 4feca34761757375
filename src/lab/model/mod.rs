//! The lab interface's wire types, typed with serde and documented with utoipa: what requests
//! decode into and what answers encode from. Field names are the reference SDK's.

pub mod appointment;
pub mod area;
pub mod catalogue;
pub mod enums;
pub mod order;
pub mod transaction;
