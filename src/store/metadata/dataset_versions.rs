//! The shared dataset versions of a health store used by several processes
//! (`crate::store::health::SharedVersions`; table `dataset_versions`).

use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use uuid::Uuid;

use super::{MetadataError, MetadataStore};
use crate::schema::Dataset;
use crate::store::health::{SharedError, SharedVersions};

impl MetadataStore {
    /// The dataset's version; 0 when it was never bumped.
    pub async fn dataset_version(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> Result<u64, MetadataError> {
        let row = sqlx::query(
            "SELECT version FROM dataset_versions \
             WHERE team_id = $1 AND user_id = $2 AND dataset = $3",
        )
        .bind(team.to_string())
        .bind(user.to_string())
        .bind(dataset.path())
        .fetch_optional(&mut *self.reader().await?)
        .await?;
        match row {
            None => Ok(0),
            Some(row) => Ok(u64::try_from(row.try_get::<i64, _>("version")?).unwrap_or(0)),
        }
    }

    /// Bumps the versions of `datasets` of a user, in one transaction.
    pub async fn bump_dataset_versions(
        &self,
        team: Uuid,
        user: Uuid,
        datasets: &[Dataset],
    ) -> Result<(), MetadataError> {
        let mut tx = self.begin().await?;
        for dataset in datasets {
            sqlx::query(
                "INSERT INTO dataset_versions (team_id, user_id, dataset, version) \
                 VALUES ($1, $2, $3, 1) \
                 ON CONFLICT (team_id, user_id, dataset) \
                 DO UPDATE SET version = dataset_versions.version + 1",
            )
            .bind(team.to_string())
            .bind(user.to_string())
            .bind(dataset.path())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

impl SharedVersions for MetadataStore {
    fn current(
        &self,
        team: Uuid,
        user: Uuid,
        dataset: Dataset,
    ) -> BoxFuture<'_, Result<u64, SharedError>> {
        async move { Ok(self.dataset_version(team, user, dataset).await?) }.boxed()
    }

    fn bump(
        &self,
        team: Uuid,
        user: Uuid,
        datasets: Vec<Dataset>,
    ) -> BoxFuture<'_, Result<(), SharedError>> {
        async move { Ok(self.bump_dataset_versions(team, user, &datasets).await?) }.boxed()
    }
}
