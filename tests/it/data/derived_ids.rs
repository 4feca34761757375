//! Ids wearhouse derives (a summary pushed without an `id`, every activity day, a profile, a
//! sleep cycle, a device) are unique across users: two users pushing the very same records get
//! different ids, while ids the client gave come back as given (issue 42).

use serde_json::Value;

use crate::support::{TestApp, full_push};

const WINDOW: &str = "start_date=2000-01-01&end_date=2030-12-31";

/// `(what, id)` of every record the getters answer for `user`.
async fn ids(app: &TestApp, user: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (path, key) in [
        ("sleep", "sleep"),
        ("activity", "activity"),
        ("workouts", "workouts"),
        ("body", "body"),
        ("meal", "meals"),
        ("sleep_cycle", "sleep_cycle"),
    ] {
        let a = app
            .get(&format!("/v2/summary/{path}/{user}?{WINDOW}"))
            .await;
        assert_eq!(a.status, 200, "{path}: {}", a.json);
        let records = a.json[key].as_array().cloned().unwrap_or_default();
        assert!(!records.is_empty(), "{path}: {}", a.json);
        out.extend(records.iter().map(|r| (path.to_owned(), r["id"].clone())));
    }
    let profile = app.get(&format!("/v2/summary/profile/{user}")).await;
    assert_eq!(profile.status, 200, "{}", profile.json);
    out.push(("profile".to_owned(), profile.json["id"].clone()));
    let devices = app.get(&format!("/v2/user/{user}/device")).await;
    assert_eq!(devices.status, 200, "{}", devices.json);
    let devices = devices.json.as_array().cloned().unwrap_or_default();
    assert!(!devices.is_empty());
    out.extend(
        devices
            .iter()
            .map(|d| ("device".to_owned(), d["id"].clone())),
    );
    out
}

#[tokio::test]
async fn two_users_with_the_same_data_get_different_derived_ids() {
    let app = TestApp::new().await;
    let (a, b) = (app.user("twin-a").await, app.user("twin-b").await);
    // Sleep and body without their ids: derived; workouts and meals keep theirs.
    let mut body = full_push();
    for part in ["sleep", "body"] {
        body[part][0].as_object_mut().unwrap().remove("id");
    }
    for user in [&a, &b] {
        let pushed = app
            .post(&format!("/v2/user/{user}/data"), body.clone())
            .await;
        assert_eq!(pushed.status, 200, "{}", pushed.json);
    }
    let (ours, theirs) = (ids(&app, &a).await, ids(&app, &b).await);
    assert_eq!(ours.len(), theirs.len());
    for ((what, id), (_, other)) in ours.iter().zip(&theirs) {
        assert!(id.is_string(), "{what}: {id}");
        match what.as_str() {
            "workouts" => assert_eq!(id, "w1"),
            "meal" => assert_eq!(id, "m1"),
            _ => {
                assert_ne!(id, other, "{what}: the same id for two users");
                assert!(
                    id.as_str().unwrap().parse::<uuid::Uuid>().is_ok(),
                    "{what}: {id}"
                );
            }
        }
        if matches!(what.as_str(), "workouts" | "meal") {
            assert_eq!(id, other, "{what}: a client's id comes back as given");
        }
    }
    // Each user's derived ids are stable: a re-push replaces, never duplicates.
    let again = app.post(&format!("/v2/user/{a}/data"), body).await;
    assert_eq!(again.status, 200, "{}", again.json);
    assert_eq!(ids(&app, &a).await, ours);
}
