//! The `menstrual_cycle` record's list-of-struct members as the getter renders them (the
//! reference's `ClientFacingMenstrualCycle`); `ingest::cycle` parses them.

use serde_json::{Map, Value};

use crate::ingest::columns::Cell;
use crate::schema::Table;

/// Renders the entries of every list column into `obj` (`[]` for none).
pub(crate) fn render_members(obj: &mut Map<String, Value>, cell_of: impl Fn(&str) -> Cell) {
    for list in Table::MenstrualCycle.list_columns() {
        let rendered: Vec<Value> = match cell_of(list.name) {
            Cell::Entries(entries) => entries
                .into_iter()
                .map(|entry| {
                    let mut e = Map::new();
                    for (field, cell) in list.fields().iter().zip(entry) {
                        e.insert(field.name.to_owned(), super::summaries::plain(cell));
                    }
                    Value::Object(e)
                })
                .collect(),
            _ => Vec::new(),
        };
        obj.insert(list.name.to_owned(), Value::Array(rendered));
    }
}
