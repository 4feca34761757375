//! The failure kinds of a connector's pull against its fake, asserted alike for every connector
//! (issue 36): a refused token, a hang past the client's timeout, a connection refused. Each
//! suite serves the fault in its provider's words (its fake's `Fault`) and hands the connector
//! here; [`failure_kinds`] writes the two tests of a connector whose fake speaks the usual
//! words (`Unauthorised`, `ServerError`, `Hang`).

use std::time::Duration;

use super::all_march;
use wearhouse::sync::{Connector, SyncError};

/// The pull of the fixtures' March with `token`, which must fail.
pub async fn pull_err(connector: &dyn Connector, token: &str) -> SyncError {
    connector.pull(token, &all_march()).await.unwrap_err()
}

/// `faulted` (its fake refusing `token` by a fault) and `fresh` (its fake faultless, asked with
/// a token it never issued) both fail the pull as `Unauthorised`.
pub async fn assert_refused_tokens_unauthorised(
    faulted: &dyn Connector,
    token: &str,
    fresh: &dyn Connector,
) {
    let err = pull_err(faulted, token).await;
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
    // The fake's own check: a token it never issued.
    let err = pull_err(fresh, "revoked").await;
    assert!(matches!(err, SyncError::Unauthorised), "{err:?}");
}

/// The pull of a connector at `base`, whose fake hangs, built by `with_client` with a client
/// that gives up after 300 ms: transient, the timeout its source.
pub async fn assert_a_hang_is_transient<C: Connector>(
    with_client: impl FnOnce(url::Url, reqwest::Client) -> C,
    base: &str,
    token: &str,
) {
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let impatient = with_client(url::Url::parse(base).unwrap(), quick);
    let err = pull_err(&impatient, token).await;
    assert!(
        matches!(
            &err,
            SyncError::Transient {
                source: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
}

/// The error of a pull by a connector, built by `new`, at a port nothing listens on.
pub async fn refused_connection<C: Connector>(
    new: impl FnOnce(&str) -> Result<C, SyncError>,
    token: &str,
) -> SyncError {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    pull_err(&new(&closed).unwrap(), token).await
}

/// A connector's tests that a refused token is `Unauthorised`, that a 5xx (served after
/// `server_error_after` good answers), a hang and a refused connection are transient, and that
/// an unknown path is permanent: `$connector` (with `new` and `with_client`) against fakes
/// started by `$fake`, whose faults are `$fault`'s and whose own token is `$token`, and a pull
/// of `$resource` from one started by `$empty` (serving nothing, so every path is unknown), or,
/// for a provider of one endpoint, at `unknown_below` under it (a base without the API's path).
macro_rules! failure_kinds {
    (
        connector: $connector:ident,
        fake: $fake:expr,
        fault: $fault:ident,
        token: $token:expr,
        server_error_after: $after:expr,
        empty: $empty:expr,
        $(unknown_below: $below:expr,)?
        resource: $resource:expr $(,)?
    ) => {
        #[tokio::test]
        async fn a_refused_token_is_unauthorised() {
            use $crate::sync::support::failures::assert_refused_tokens_unauthorised;
            let faulted = $fake.await;
            faulted.fail($fault::Unauthorised, 0);
            let fresh = $fake.await;
            assert_refused_tokens_unauthorised(
                &$connector::new(&faulted.base).unwrap(),
                $token,
                &$connector::new(&fresh.base).unwrap(),
            )
            .await;
        }

        #[tokio::test]
        async fn server_errors_timeouts_and_refused_connections_are_transient() {
            use wearhouse::sync::SyncError;
            use $crate::sync::support::failures::{
                assert_a_hang_is_transient, pull_err, refused_connection,
            };
            let fake = $fake.await;
            fake.fail($fault::ServerError, $after);
            let err = pull_err(&$connector::new(&fake.base).unwrap(), $token).await;
            assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");

            fake.fail($fault::Hang, 0);
            assert_a_hang_is_transient($connector::with_client, &fake.base, $token).await;

            let err = refused_connection($connector::new, $token).await;
            assert!(matches!(err, SyncError::Transient { .. }), "{err:?}");
        }

        #[tokio::test]
        async fn an_unknown_path_is_permanent() {
            use wearhouse::sync::SyncError;
            use $crate::sync::support::{pull, utc};
            let fake = $empty.await;
            #[allow(unused_mut)]
            let mut base = fake.base.clone();
            $(base.push_str($below);)?
            let one_day = pull(&[$resource], utc(2025, 3, 1), utc(2025, 3, 2));
            let err = $connector::new(&base)
                .unwrap()
                .pull($token, &one_day)
                .await
                .unwrap_err();
            assert!(matches!(err, SyncError::Permanent { .. }), "{err:?}");
        }
    };
}
pub(crate) use failure_kinds;
