//! Team provider credentials: set, shown without the secret (which is stored sealed), removed;
//! tenancy; and OAuth links of the team using the team's client.

use serde_json::json;

use super::oauth_support::{oauth_url_of, setup};
use crate::support::assert_422_at;

const PATH: &str = "/v2/team/provider/oura/credentials";

#[tokio::test]
async fn credentials_are_set_shown_without_secret_and_removed_per_team() {
    let (app, _fake) = setup().await;
    let key = app.key.clone();
    let a = app
        .send(
            "PUT",
            PATH,
            Some(&key),
            Some(json!({"client_id": "team-client", "client_secret": "team-secret-77"})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["client_id"], "team-client");
    assert_eq!(a.json["provider"], "oura");
    assert!(!a.json.to_string().contains("team-secret-77"));
    let a = app.get(PATH).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert!(
        a.json.get("client_secret").is_none() && !a.json.to_string().contains("team-secret-77")
    );
    // Sealed in the database.
    let bytes = super::sqlite_bytes(app.dir.path());
    assert!(bytes.windows(11).any(|w| w == b"team-client"));
    assert!(!bytes.windows(14).any(|w| w == b"team-secret-77"));

    // The team's links use its client; another team's links the deployment's.
    let user = app.user("team-app").await;
    let url = oauth_url_of(&app, &user, &key).await;
    assert!(url.contains("client_id=team-client"), "{url}");
    let theirs = app.foreign_user().await;
    let url = oauth_url_of(&app, &theirs, &app.other_key.clone()).await;
    assert!(url.contains("client_id=wearhouse-test-client"), "{url}");

    // Tenancy: the other team sees none and cannot remove it.
    let other = app.other_key.clone();
    let a = app.send("GET", PATH, Some(&other), None).await;
    assert_eq!(a.status, 404);
    assert_eq!(a.json, json!({"detail": "Provider credentials not found"}));
    assert_eq!(
        app.send("DELETE", PATH, Some(&other), None).await.status,
        404
    );
    assert_eq!(app.send("GET", PATH, None, None).await.status, 401);

    let a = app.send("DELETE", PATH, Some(&key), None).await;
    assert_eq!(a.json, json!({"success": true}));
    assert_eq!(app.get(PATH).await.status, 404);
    assert_eq!(app.send("DELETE", PATH, Some(&key), None).await.status, 404);
    let url = oauth_url_of(&app, &user, &key).await;
    assert!(url.contains("client_id=wearhouse-test-client"), "{url}");
}

#[tokio::test]
async fn credential_rules_answer_422() {
    let (app, _fake) = setup().await;
    let key = app.key.clone();
    let ok = json!({"client_id": "c", "client_secret": "s"});
    let a = app
        .send(
            "PUT",
            "/v2/team/provider/peloton/credentials",
            Some(&key),
            Some(ok.clone()),
        )
        .await;
    assert_422_at(&a, &[json!("path"), json!("provider")]);
    let a = app
        .send(
            "PUT",
            "/v2/team/provider/myspace/credentials",
            Some(&key),
            Some(ok),
        )
        .await;
    assert_422_at(&a, &[json!("path"), json!("provider")]);
    for (body, member) in [
        (json!({"client_secret": "s"}), "client_id"),
        (json!({"client_id": "c"}), "client_secret"),
        (json!({"client_id": " ", "client_secret": "s"}), "client_id"),
        (
            json!({"client_id": "c", "client_secret": "s", "redirect_uri": "nope"}),
            "redirect_uri",
        ),
    ] {
        let a = app.send("PUT", PATH, Some(&key), Some(body)).await;
        assert_422_at(&a, &[json!("body"), json!(member)]);
    }
}
