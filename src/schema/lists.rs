//! List columns (`analytics.md` §3): columns whose every row holds a list, either of structs
//! (the `menstrual_cycle` entries, each with a `date`) or of scalars (the sleep hypnogram's stage
//! codes). They are stored as Arrow `List` columns next to the table's scalar columns, are not
//! selectable as such, and are reduced per row by a scalar-output subquery of the query language.
//!
//! The `menstrual_cycle` table's scalar columns live here too, beside its lists, so the summary
//! table registry (`tables.rs`) only names them.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields};

use super::tables::{Column, Kind};

/// What one element of a list column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// A scalar of this kind (stored as `stored`, read as the kind's type).
    Scalar(Kind),
    /// A struct of these fields, in storage order.
    Struct(&'static [Column]),
}

/// A list column of a summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListColumn {
    /// Its name, in storage and in the query language.
    pub name: &'static str,
    /// Its elements.
    pub element: Element,
}

impl ListColumn {
    /// A struct field of the elements by name.
    pub fn field(&self, name: &str) -> Option<Column> {
        match self.element {
            Element::Struct(fields) => fields.iter().copied().find(|c| c.name == name),
            Element::Scalar(_) => None,
        }
    }

    /// The element's struct fields (none for a list of scalars).
    pub fn fields(&self) -> &'static [Column] {
        match self.element {
            Element::Struct(fields) => fields,
            Element::Scalar(_) => &[],
        }
    }

    /// The Arrow type of a list of structs: `List(Struct(fields))`, every field nullable
    /// except `date`.
    pub(super) fn struct_type(fields: &'static [Column]) -> DataType {
        let fields: Fields = fields
            .iter()
            .map(|c| Field::new(c.name, c.kind.data_type(), c.name != "date"))
            .collect();
        DataType::List(Arc::new(Field::new("item", DataType::Struct(fields), true)))
    }
}

const fn c(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

const fn entries(name: &'static str, fields: &'static [Column]) -> ListColumn {
    ListColumn {
        name,
        element: Element::Struct(fields),
    }
}

use Kind::{Bool, Date, Float, Str};

/// The `menstrual_cycle` scalar columns (index `period_start`).
pub(super) const MENSTRUAL_CYCLE: &[Column] = &[
    c("id", Str),
    c("period_start", Date),
    c("period_end", Date),
    c("cycle_end", Date),
    c("is_predicted", Bool),
];

/// The `menstrual_cycle` list columns, named and shaped as the reference's
/// `ClientFacingMenstrualCycle` entries.
pub(super) const MENSTRUAL_CYCLE_LISTS: &[ListColumn] = &[
    entries("menstrual_flow", &[c("date", Date), c("flow", Str)]),
    entries("cervical_mucus", &[c("date", Date), c("quality", Str)]),
    entries("intermenstrual_bleeding", &[c("date", Date)]),
    entries("contraceptive", &[c("date", Date), c("type", Str)]),
    entries(
        "detected_deviations",
        &[c("date", Date), c("deviation", Str)],
    ),
    entries("ovulation_test", &[c("date", Date), c("test_result", Str)]),
    entries(
        "home_pregnancy_test",
        &[c("date", Date), c("test_result", Str)],
    ),
    entries(
        "home_progesterone_test",
        &[c("date", Date), c("test_result", Str)],
    ),
    entries(
        "sexual_activity",
        &[c("date", Date), c("protection_used", Bool)],
    ),
    entries(
        "basal_body_temperature",
        &[c("date", Date), c("value", Float)],
    ),
];

/// The sleep hypnogram as a list of scalars: stage codes, stored as `Int8`, read as integers.
pub(super) const SLEEP_LISTS: &[ListColumn] = &[ListColumn {
    name: "hypnogram",
    element: Element::Scalar(Kind::Int),
}];

/// The allowed values of an enumerated struct field (the reference's enums).
pub fn allowed_element_values(list: &str, field: &str) -> Option<&'static [&'static str]> {
    Some(match (list, field) {
        ("menstrual_flow", "flow") => &["unspecified", "none", "light", "medium", "heavy"],
        ("cervical_mucus", "quality") => &["dry", "sticky", "creamy", "watery", "egg_white"],
        ("contraceptive", "type") => &[
            "unspecified",
            "implant",
            "injection",
            "iud",
            "intravaginal_ring",
            "oral",
            "patch",
        ],
        ("detected_deviations", "deviation") => &[
            "persistent_intermenstrual_bleeding",
            "prolonged_menstrual_periods",
            "irregular_menstrual_cycles",
            "infrequent_menstrual_cycles",
        ],
        ("ovulation_test", "test_result") => &[
            "negative",
            "positive",
            "luteinizing_hormone_surge",
            "estrogen_surge",
            "indeterminate",
        ],
        ("home_pregnancy_test" | "home_progesterone_test", "test_result") => {
            &["negative", "positive", "indeterminate"]
        }
        _ => return None,
    })
}
