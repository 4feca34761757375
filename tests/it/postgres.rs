//! A scratch PostgreSQL database per test, on the machine's server
//! (`WEARHOUSE_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`).

use sqlx::Connection;

/// A fresh database; `drop_db` removes it, closing any session still on it.
pub struct ScratchDb {
    /// The database's URL.
    pub url: String,
    admin: String,
    name: String,
}

impl ScratchDb {
    /// Creates `<prefix>_<random>`.
    pub async fn create(prefix: &str) -> ScratchDb {
        let admin = std::env::var("WEARHOUSE_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .expect("PostgreSQL must be reachable at WEARHOUSE_TEST_POSTGRES_URL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        ScratchDb {
            url: format!("{base}/{name}"),
            admin,
            name,
        }
    }

    /// Drops the database (`WITH (FORCE)`: a server or pool still connected is cut off).
    pub async fn drop_db(self) {
        let mut conn = sqlx::PgConnection::connect(&self.admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .execute(&mut conn)
            .await
            .unwrap();
    }
}

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
            let db = $crate::postgres::ScratchDb::create($prefix).await;
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
