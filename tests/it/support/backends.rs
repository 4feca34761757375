//! Running one metadata-store exercise on both backends (SQLite and PostgreSQL).

/// Two tests of one metadata-store exercise (`async fn(&MetadataStore)`): `$sqlite` on a fresh
/// SQLite file, `$postgres` on a scratch PostgreSQL database named `$prefix_<random>`, so a
/// store protocol is checked on both backends by the same assertions.
macro_rules! on_both_metadata_backends {
    ($sqlite:ident, $postgres:ident, $exercise:path, $prefix:literal) => {
        #[tokio::test]
        async fn $sqlite() {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
            let meta = wearhouse::store::metadata::MetadataStore::connect(&url)
                .await
                .unwrap();
            $exercise(&meta).await;
            meta.close().await;
        }

        #[tokio::test]
        async fn $postgres() {
            let db = crate::support::postgres::ScratchDb::create($prefix).await;
            let meta = wearhouse::store::metadata::MetadataStore::connect(&db.url)
                .await
                .unwrap();
            $exercise(&meta).await;
            meta.close().await;
            db.drop_db().await;
        }
    };
}
pub(crate) use on_both_metadata_backends;
