//! The OpenAPI schemas of the getters' records, generated from the same column-to-wire map the
//! rendering and the push parsing use (`fields::wire`), so the document cannot drift from what
//! the getters answer: a summary record per table, and a timeseries sample per family.
//!
//! Required members are the ones every rendered record has (the reference's required fields);
//! every value member is nullable, as a provider may not give it.

use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, Object, ObjectBuilder, Type,
};
use utoipa::openapi::{RefOr, Schema};

use crate::ingest::fields::wire;
use crate::ingest::json_schema::{instant, integer, nullable_array, number, string, typed};
use crate::schema::{Family, Kind, Table};

fn of_kind(kind: Kind, scaled: bool) -> ObjectBuilder {
    match kind {
        Kind::Str => string(true),
        Kind::Int if scaled => number(true),
        Kind::Int => integer(true),
        Kind::Float => number(true),
        Kind::Bool => typed(Type::Boolean, None, true),
        Kind::Date => typed(Type::String, Some(KnownFormat::Date), true),
        Kind::Instant => instant(true),
    }
}

/// A nested object under construction: leaves and children by key.
#[derive(Default)]
struct Node {
    leaves: Vec<(String, Schema)>,
    children: Vec<(String, Node)>,
}

impl Node {
    fn insert(&mut self, path: &str, leaf: impl Into<Schema>) {
        let leaf: Schema = leaf.into();
        match path.split_once('.') {
            None => self.leaves.push((path.to_owned(), leaf)),
            Some((head, rest)) => {
                if let Some((_, child)) = self.children.iter_mut().find(|(k, _)| k == head) {
                    child.insert(rest, leaf);
                } else {
                    let mut child = Node::default();
                    child.insert(rest, leaf);
                    self.children.push((head.to_owned(), child));
                }
            }
        }
    }

    fn build(self, nullable: bool, required: &[&str]) -> ObjectBuilder {
        let mut object = typed(Type::Object, None, nullable);
        for (key, leaf) in self.leaves {
            object = object.property(key, leaf);
        }
        for (key, child) in self.children {
            let extra: &[&str] = if key == "sport" {
                &["id", "name", "slug"]
            } else {
                &[]
            };
            object = object.property(key, child.build(true, extra));
        }
        for key in required {
            object = object.required(*key);
        }
        object
    }
}

/// The `source` of a record or a group.
pub fn source_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("provider", string(false))
        .property("type", string(true))
        .property("app_id", string(true))
        .property("device_id", string(true))
        .property(
            "name",
            string(true).deprecated(Some(utoipa::openapi::Deprecated::True)),
        )
        .property(
            "slug",
            string(true).deprecated(Some(utoipa::openapi::Deprecated::True)),
        )
        .property(
            "logo",
            string(true).deprecated(Some(utoipa::openapi::Deprecated::True)),
        )
        .required("provider")
}

/// The schema of one rendered summary record of `table`.
pub fn summary_schema(table: Table) -> Schema {
    let mut node = Node::default();
    for column in table.columns() {
        if let Some(place) = wire(table, column.name) {
            node.insert(place.path, of_kind(column.kind, place.factor != 1.0));
        }
    }
    let own: Vec<(&str, Schema)> = match table {
        Table::Sleep => vec![
            ("date", instant(false).into()),
            ("timezone_offset", integer(true).into()),
            (
                "sleep_stream",
                typed(Type::Object, None, true)
                    .property(
                        "hypnogram",
                        ArrayBuilder::new().items(sample_schema(Family::Interval)),
                    )
                    .into(),
            ),
        ],
        Table::Activity => vec![("date", instant(false).into())],
        Table::Body => vec![
            ("date", instant(false).into()),
            ("timezone_offset", integer(true).into()),
        ],
        Table::Workout => vec![
            ("hr_zones", nullable_array(integer(false)).into()),
            ("timezone_offset", integer(true).into()),
        ],
        Table::Meal => vec![
            (
                "date",
                typed(Type::String, Some(KnownFormat::Date), false).into(),
            ),
            ("timestamp", instant(false).into()),
            ("priority_id", integer(false).into()),
            ("source_id", integer(false).into()),
            ("source_app_id", string(true).into()),
            ("source_device_id", string(true).into()),
        ],
        Table::Profile => vec![],
        Table::MenstrualCycle => cycle_members(),
    };
    for (key, schema) in own {
        node.insert(key, schema);
    }
    if table == Table::Workout {
        node.insert("sport.id", integer(false));
    }
    if table == Table::Meal {
        node.insert("energy.unit", string(false));
    }
    node.insert("id", string(false));
    node.insert(
        "user_id",
        typed(Type::String, Some(KnownFormat::Uuid), false),
    );
    node.insert(
        "calendar_date",
        typed(Type::String, Some(KnownFormat::Date), false),
    );
    let mut required: Vec<&str> = vec!["id", "user_id", "calendar_date", "source"];
    match table {
        Table::Sleep => required.extend([
            "date",
            "bedtime_start",
            "bedtime_stop",
            "type",
            "duration",
            "total",
            "awake",
            "light",
            "rem",
            "deep",
        ]),
        Table::Activity | Table::Body => required.push("date"),
        Table::Workout => required.extend(["time_start", "time_end", "provider_id"]),
        Table::Meal => required.extend([
            "timestamp",
            "name",
            "provider_id",
            "priority_id",
            "source_id",
        ]),
        Table::Profile => {}
        Table::MenstrualCycle => {
            required.extend([
                "period_start",
                "is_predicted",
                "source_provider",
                "source_type",
            ]);
            required.extend(table.list_columns().iter().map(|l| l.name));
        }
    }
    if table != Table::Profile {
        node.insert("created_at", instant(false));
        node.insert("updated_at", instant(false));
        required.extend(["created_at", "updated_at"]);
    }
    let mut object = node.build(false, &[]);
    object = object.property("source", source_schema());
    // Required members render non-null whatever the column: provider_id falls back to the id,
    // a meal's name to "", sleep stages to 0.
    let mut schema: Object = object.build();
    for key in &required {
        if let Some(RefOr::T(Schema::Object(member))) = schema.properties.get_mut(*key) {
            member.schema_type = match &member.schema_type {
                utoipa::openapi::schema::SchemaType::Array(types) => {
                    match types.iter().find(|t| **t != Type::Null) {
                        Some(t) => utoipa::openapi::schema::SchemaType::Type(t.clone()),
                        None => member.schema_type.clone(),
                    }
                }
                other => other.clone(),
            };
        }
        schema.required.push((*key).to_owned());
    }
    Schema::Object(schema)
}

/// The menstrual cycle's own members: its entry lists (never null) and its source columns.
fn cycle_members() -> Vec<(&'static str, Schema)> {
    let mut out: Vec<(&'static str, Schema)> = Table::MenstrualCycle
        .list_columns()
        .iter()
        .map(|list| {
            let mut entry = ObjectBuilder::new().schema_type(Type::Object);
            for field in list.fields() {
                let nullable = field.name == "protection_used";
                let mut member = match field.kind {
                    Kind::Date => typed(Type::String, Some(KnownFormat::Date), nullable),
                    other => of_kind(other, false).schema_type(if nullable {
                        utoipa::openapi::schema::SchemaType::from_iter([
                            kind_type(other),
                            Type::Null,
                        ])
                    } else {
                        utoipa::openapi::schema::SchemaType::Type(kind_type(other))
                    }),
                };
                if let Some(values) = crate::schema::allowed_element_values(list.name, field.name) {
                    member = member.enum_values(Some(values.iter().copied()));
                }
                entry = entry.property(field.name, member);
                if !nullable {
                    entry = entry.required(field.name);
                }
            }
            (list.name, ArrayBuilder::new().items(entry).into())
        })
        .collect();
    out.push(("source_provider", string(false).into()));
    out.push(("source_type", string(false).into()));
    out.push(("source_app_id", string(true).into()));
    out.push(("source_device_id", string(true).into()));
    out
}

fn kind_type(kind: Kind) -> Type {
    match kind {
        Kind::Str | Kind::Date | Kind::Instant => Type::String,
        Kind::Int => Type::Integer,
        Kind::Float => Type::Number,
        Kind::Bool => Type::Boolean,
    }
}

/// The schema of one sample of `family` as the getters render it.
pub fn sample_schema(family: Family) -> ObjectBuilder {
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("timestamp", instant(false))
        .property("timezone_offset", integer(true))
        .property("type", string(true))
        .property("unit", string(false))
        .property("source_workout_id", string(false))
        .property("source_sport", string(false))
        .required("timestamp")
        .required("unit");
    if family.is_interval() {
        object = object
            .property("start", instant(false))
            .property("end", instant(false))
            .required("start")
            .required("end");
    }
    if !matches!(
        family,
        Family::Note | Family::BloodPressure | Family::Discrete
    ) {
        object = object.property("duration", number(true));
    }
    object = match family {
        Family::BloodPressure => object
            .property("systolic", number(false))
            .property("diastolic", number(false))
            .required("systolic")
            .required("diastolic"),
        Family::Note => object
            .property("value", string(false))
            .property("content", string(false))
            .property("tags", nullable_array(string(false)))
            .required("value"),
        _ => object.property("value", number(false)).required("value"),
    };
    for (key, kind) in match family {
        Family::Insulin => &["delivery_mode", "delivery_form", "bolus_purpose"][..],
        Family::Temperature => &["sensor_location"][..],
        Family::WorkoutDuration => &["intensity"][..],
        _ => &[][..],
    }
    .iter()
    .map(|k| (*k, Kind::Str))
    {
        object = object.property(key, of_kind(kind, false));
    }
    object
}

/// A sample of any family (the getters' path names the resource, so its family).
///
/// `anyOf`, not `oneOf`: the families' objects are open and share members (an interval sample
/// is a discrete sample with `start` and `end` besides), so a sample matches more than one
/// family's schema, which `oneOf` forbids.
pub fn any_sample_schema() -> Schema {
    let mut any_of = utoipa::openapi::schema::AnyOfBuilder::new();
    for family in Family::ALL {
        any_of = any_of.item(sample_schema(family));
    }
    Schema::AnyOf(any_of.build())
}

/// The grouped getter's answer.
pub fn grouped_schema() -> Schema {
    let group = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("source", source_schema())
        .property(
            "data",
            ArrayBuilder::new().items(RefOr::T(any_sample_schema())),
        )
        .required("source")
        .required("data");
    let groups = ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(Schema::Array(
            ArrayBuilder::new().items(group).build(),
        )))));
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("groups", groups)
            .property("next", string(true))
            .property("next_cursor", string(true))
            .required("groups")
            .build(),
    )
}
