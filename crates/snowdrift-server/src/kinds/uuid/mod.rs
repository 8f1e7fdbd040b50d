//! `uuid1`, `uuid2`, `uuid3`, `uuid5`, `uuid6`: the UUID versions a `[[generator]]`
//! configures (a node ID, a DCE domain, a namespace).

mod decode;
mod plan;
mod source;

pub use decode::{invalid_id, uuid_fields, uuid_text};
pub use plan::{UuidPlan, default_local_id};
pub use source::{UuidSource, needs_input};
