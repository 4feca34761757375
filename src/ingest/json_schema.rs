//! The small OpenAPI schema builders the documents of pushes (`push_schema`) and of getters'
//! records (`render::wire_schema`) share: a typed, optionally nullable value and a nullable
//! array.

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};

pub(crate) fn typed(t: Type, format: Option<KnownFormat>, nullable: bool) -> ObjectBuilder {
    let builder = if nullable {
        ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            t,
            Type::Null,
        ]))
    } else {
        ObjectBuilder::new().schema_type(t)
    };
    match format {
        Some(f) => builder.format(Some(SchemaFormat::KnownFormat(f))),
        None => builder,
    }
}

pub(crate) fn string(nullable: bool) -> ObjectBuilder {
    typed(Type::String, None, nullable)
}

pub(crate) fn instant(nullable: bool) -> ObjectBuilder {
    typed(Type::String, Some(KnownFormat::DateTime), nullable)
}

pub(crate) fn integer(nullable: bool) -> ObjectBuilder {
    typed(Type::Integer, None, nullable)
}

pub(crate) fn number(nullable: bool) -> ObjectBuilder {
    typed(Type::Number, None, nullable)
}

pub(crate) fn nullable_array(items: ObjectBuilder) -> ArrayBuilder {
    ArrayBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Array,
            Type::Null,
        ]))
        .items(items)
}
