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
